// new.html: create a federation; the secret is made here, in the browser.
// A file, not an inline script, for the CSP.
'use strict';
const H = window.hyfed, $ = H.$;

// The server's create token comes in the fragment, /new#create=<token> (the
// "create:" URL hyfed serve prints); the field takes one pasted by hand.
const createToken = H.fragment().create || '';
if (createToken) {
  $('token').value = createToken;
  $('token-label').hidden = true;
}
const NEED = 'Creating federations on this server needs its create token: open the "create:" URL hyfed serve printed at start ' +
  '(…/new#create=…), or paste the token into the "Create token" field.';

$('plaintext').addEventListener('change', () => { $('plain-warn').hidden = !$('plaintext').checked; });

function fail(msg) {
  $('form-error').hidden = false;
  $('form-error').textContent = msg;
}

function numberOf(idName, label, integer) {
  const raw = $(idName).value.trim();
  const v = Number(raw);
  if (raw === '' || !isFinite(v)) throw new Error(label + ': enter a number');
  if (integer && !Number.isInteger(v)) throw new Error(label + ': enter a whole number');
  return v;
}

// The baselines' own settings show only for them.
function showAlgo() {
  const a = $('algo').value;
  $('baseline-fields').hidden = a === 'hyfdca';
  $('mu-label').hidden = a !== 'hyfem-prox' && a !== 'fedhybrid';
  $('mode-label').hidden = a !== 'fedhybrid';
  $('seal-primal').disabled = a !== 'hyfdca';
  if (a === 'fedhybrid') $('loss').value = 'logistic';
}
$('algo').addEventListener('change', showAlgo);
showAlgo();

$('form').addEventListener('submit', async (e) => {
  e.preventDefault();
  $('form-error').hidden = true;
  let req;
  const plaintext = $('plaintext').checked;
  // The secret: 32 bytes from the browser's CSPRNG (crypto.getRandomValues),
  // as Go's base64.RawURLEncoding; the server gets only the fingerprint.
  const secretBytes = H.newSecret();
  const secret = H.b64url(secretBytes);
  try {
    req = {
      name: $('name').value.trim(),
      scheme: plaintext ? 'plaintext' : 'bgv',
      loss: $('loss').value,
      lambda: numberOf('lambda', 'λ'),
      rounds: numberOf('rounds', 'rounds', true),
      fraction: numberOf('fraction', 'fraction'),
      iic: numberOf('iic', 'IIC'),
      min_participants: numberOf('min', 'minimum participants', true),
      fingerprint: H.fingerprint(secretBytes),
    };
    if ($('features').value.trim() !== '') req.num_features = numberOf('features', 'features', true);
    req.algo = $('algo').value;
    if (req.algo === 'hyfdca') {
      req.seal_primal = $('seal-primal').checked;
    } else {
      req.step_a = numberOf('step-a', 'step a');
      req.step_b = numberOf('step-b', 'step b');
      if (req.algo === 'hyfem-prox' || req.algo === 'fedhybrid') req.mu = numberOf('mu', 'μ');
      if (req.algo === 'fedhybrid') { req.mode = $('mode').value; req.loss = 'logistic'; }
    }
  } catch (err) {
    fail(err.message);
    return;
  }
  $('create').disabled = true;
  try {
    const resp = await H.postJSON('/api/federations', req, $('token').value.trim());
    // join_path is /join/<id>#invite=<invite>: the secret joins the fragment
    // (an older server's ?invite= path takes it as the whole fragment).
    const frag = (plaintext ? 'plaintext:' : '') + secret;
    const link = location.origin + resp.join_path + (resp.join_path.includes('#') ? '&secret=' : '#') + frag;
    $('fed-id').textContent = resp.id;
    $('join').value = link;
    $('join-open').href = link;
    $('join-plain').hidden = !plaintext;
    $('admin').value = resp.admin_token;
    const viewer = resp.dashboard_path ? location.origin + resp.dashboard_path : '';
    const adminURL = resp.admin_path ? location.origin + resp.admin_path : '';
    $('viewer').value = viewer;
    $('viewer-open').href = viewer;
    $('admin-url').value = adminURL;
    $('admin-open').href = adminURL;
    $('privacy').href = '/federations/' + encodeURIComponent(resp.id) + '/privacy' +
      (resp.viewer_token ? '#viewer=' + encodeURIComponent(resp.viewer_token) : '');
    $('result').hidden = false;
    $('how').hidden = true;
    $('form').querySelectorAll('input, select, button').forEach((x) => { x.disabled = true; });
    $('result').scrollIntoView({behavior: 'smooth', block: 'start'});
  } catch (err) {
    fail(H.refusal(err, NEED) + (err.code && err.status !== 401 ? ' (' + err.code + ')' : ''));
    $('create').disabled = false;
  }
});

// copy: the clipboard API where the origin allows it, else select and copy
document.querySelectorAll('[data-copy]').forEach((b) => b.addEventListener('click', async () => {
  const input = $(b.dataset.copy);
  let ok = false;
  try {
    if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(input.value); ok = true; }
  } catch (e) { ok = false; }
  if (!ok) {
    input.focus(); input.select();
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
  }
  $('copied').textContent = ok ? 'Copied.' : 'Select the text and copy it by hand.';
}));
