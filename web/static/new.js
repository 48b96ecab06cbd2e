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
      tol: numberOf('tol', 'tolerance'),
      fraction: numberOf('fraction', 'fraction'),
      iic: numberOf('iic', 'IIC'),
      min_participants: numberOf('min', 'minimum participants', true),
      fingerprint: H.fingerprint(secretBytes),
    };
    const schema = schemaOf();
    if (schema) req.schema = schema; // the schema decides the features
    else if ($('features').value.trim() !== '') req.num_features = numberOf('features', 'features', true);
    req.algo = $('algo').value;
    if ($('oprf').checked) req.pseudonyms = 'oprf';
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
    const link = location.origin + resp.join_path + (resp.join_path.includes('#') ? '&secret=' : '#') + frag +
      (req.pseudonyms === 'oprf' ? '&pseudonyms=oprf' : '');
    $('fed-id').textContent = resp.id;
    $('join').value = link;
    $('join-open').href = link;
    $('join-plain').hidden = !plaintext;
    $('admin').value = resp.admin_token;
    const viewer = resp.dashboard_path ? location.origin + resp.dashboard_path : '';
    // The admin link carries the viewer token too, so that its dashboard
    // can show the viewer link to share (the server keeps only hashes).
    const adminURL = resp.admin_path ? location.origin + resp.admin_path +
      (resp.viewer_token ? '&viewer=' + encodeURIComponent(resp.viewer_token) : '') : '';
    $('viewer').value = viewer;
    $('viewer-open').href = viewer;
    $('admin-url').value = adminURL;
    $('admin-open').href = adminURL;
    $('privacy').href = '/federations/' + encodeURIComponent(resp.id) + '/privacy' +
      (resp.viewer_token ? '#viewer=' + encodeURIComponent(resp.viewer_token) : '');
    $('result').hidden = false;
    $('how').hidden = true;
    $('form').querySelectorAll('input, select, button, textarea').forEach((x) => { x.disabled = true; });
    $('result').scrollIntoView({behavior: 'smooth', block: 'start'});
  } catch (err) {
    // A refused schema says so plainly, with the server's reason.
    if (err.status === 400 && /schema/.test(err.message)) fail('The server refused the schema: ' + err.message.replace(/^((federation request|config): )*schema: /, ''));
    else fail(H.refusal(err, NEED) + (err.code && err.status !== 401 ? ' (' + err.code + ')' : ''));
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

// ---- the schema: pasted, or built from a CSV file read in this page --------
// schemaOf returns the schema the textarea holds (null when empty), or
// throws what is wrong with its JSON.
function schemaOf() {
  const text = $('schema').value.trim();
  if (!text) return null;
  let v;
  try { v = JSON.parse(text); } catch (e) { throw new Error('Schema: not valid JSON: ' + e.message); }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('Schema: want a JSON object {"id": …, "label": …, "features": […]}');
  return v;
}
function checkSchema() {
  const out = $('schema-check');
  $('features-label').hidden = !!$('schema').value.trim();
  try {
    const v = schemaOf();
    out.className = 'muted';
    out.textContent = v ? 'JSON read: ' + ((v.features || []).length) + ' features; the server checks the rest when you create the federation.' : '';
  } catch (e) {
    out.className = 'alert';
    out.textContent = e.message;
  }
}
$('schema').addEventListener('input', () => { $('form-error').hidden = true; checkSchema(); });

// splitCSV reads delimited text as a spreadsheet writes it: quoted fields
// (with "" for a quote, delimiters and line ends inside), CRLF or LF.
function splitCSV(text, delim) {
  const rows = [];
  let row = [], field = '', quoted = false, i = 0;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
      if (c === '"') { quoted = false; i++; continue; }
      field += c; i++; continue;
    }
    if (c === '"' && field === '') { quoted = true; i++; continue; }
    if (c === delim) { row.push(field); field = ''; i++; continue; }
    if (c === '\r' || c === '\n') {
      row.push(field); field = '';
      if (row.length > 1 || row[0] !== '') rows.push(row);
      row = [];
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
      continue;
    }
    field += c; i++;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  return rows;
}
// delimiterOf: the most frequent of comma, semicolon and tab in the header
// line outside quotes (as the participants' reader finds it).
function delimiterOf(line) {
  const n = {',': 0, ';': 0, '\t': 0};
  let quoted = false;
  for (const c of line) { if (c === '"') quoted = !quoted; else if (!quoted && c in n) n[c]++; }
  return Object.keys(n).reduce((a, b) => (n[b] > n[a] ? b : a), ',');
}
const isMissing = (v) => ['', 'na', 'n/a', 'nan', 'null', 'none', '?'].includes(v.trim().toLowerCase());
const isNumber = (v) => v.trim() !== '' && isFinite(Number(v.trim().replace(',', '.')));

let built = null; // the file's columns: {name, values (distinct, first 50), numeric, distinct}
$('schema-file').addEventListener('change', async () => {
  const f = $('schema-file').files[0];
  if (!f) return;
  let text = await f.text();
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const firstLine = text.split(/\r?\n/, 1)[0];
  const delim = delimiterOf(firstLine);
  const rows = splitCSV(text, delim);
  if (!rows.length) { $('schema-file-info').textContent = f.name + ': empty'; $('schema-cols').hidden = false; return; }
  const header = rows[0].map((h) => h.trim());
  built = header.map((name, c) => {
    const seen = new Map();
    let numeric = true;
    for (const r of rows.slice(1)) {
      const v = (r[c] || '').trim();
      if (isMissing(v)) continue;
      if (!isNumber(v)) numeric = false;
      seen.set(v, (seen.get(v) || 0) + 1);
    }
    return {name, numeric, distinct: seen.size, values: [...seen.keys()].slice(0, 50)};
  });
  $('schema-file-info').textContent = f.name + ': ' + header.length + ' columns, ' + (rows.length - 1) + ' rows, ' +
    {',': 'comma', ';': 'semicolon', '\t': 'tab'}[delim] + '-separated. Read here; nothing was sent.';
  drawColumns(rows.length - 1);
  $('schema-cols').hidden = false;
});

// drawColumns lists the file's columns with a use each: a first guess (a
// column named like an id, a label, text with few values as categories)
// for the user to change.
function drawColumns(n) {
  const tb = $('schema-rows');
  tb.textContent = '';
  const idGuess = built.findIndex((c) => /^(id|.*_id|patient|record|subject)$/i.test(c.name));
  const labelGuess = built.findIndex((c) => /^(label|outcome|target|class|y|diagnosis)$/i.test(c.name));
  built.forEach((c, i) => {
    const tr = tb.appendChild(H.el('tr'));
    tr.appendChild(H.el('td', c.name || '(column ' + (i + 1) + ')'));
    const sel = H.el('select', null, {'data-col': i, 'aria-label': 'use of column ' + (c.name || i + 1)});
    for (const [v, t] of [['number', 'feature: a number'], ['category', 'feature: categories'], ['id', 'record id'], ['label', 'label'], ['ignore', 'ignore']]) {
      sel.appendChild(H.el('option', t, {value: v}));
    }
    sel.value = i === (idGuess >= 0 ? idGuess : 0) ? 'id' : i === labelGuess ? 'label'
      : c.numeric ? 'number' : c.distinct <= 20 ? 'category' : 'ignore';
    tr.appendChild(H.el('td')).appendChild(sel);
    const vals = H.el('input', null, {type: 'text', 'data-values': i, 'aria-label': 'categories of column ' + (c.name || i + 1)});
    vals.value = c.values.slice(0, 20).join(', ');
    tr.appendChild(H.el('td')).appendChild(vals);
    sel.addEventListener('change', () => { if (sel.value === 'label') guessPositive(i); });
  });
  if (labelGuess >= 0) guessPositive(labelGuess);
}
function guessPositive(i) {
  if (!$('schema-positive').value.trim()) $('schema-positive').value = built[i].values[0] || '';
}

$('schema-write').addEventListener('click', () => {
  if (!built) return;
  const uses = [...document.querySelectorAll('#schema-rows select')].map((s) => s.value);
  const list = (i) => document.querySelector('[data-values="' + i + '"]').value.split(',').map((v) => v.trim()).filter((v) => v);
  const out = {};
  const id = uses.indexOf('id'), label = uses.indexOf('label');
  const problems = [];
  if (id < 0) problems.push('pick the record id column');
  if (label < 0) problems.push('pick the label column');
  if (uses.filter((u) => u === 'id').length > 1 || uses.filter((u) => u === 'label').length > 1) problems.push('one id column and one label column');
  const positive = $('schema-positive').value.split(',').map((v) => v.trim()).filter((v) => v);
  if (label >= 0 && !positive.length) problems.push('name the positive label values');
  if (problems.length) { $('schema-check').className = 'alert'; $('schema-check').textContent = 'To write the schema: ' + problems.join('; ') + '.'; return; }
  out.id = built[id].name;
  const negative = built[label].values.filter((v) => !positive.includes(v));
  out.label = {column: built[label].name, positive};
  if (negative.length && negative.length <= 20) out.label.negative = negative;
  out.features = [];
  uses.forEach((u, i) => {
    if (u === 'number') out.features.push({name: built[i].name});
    if (u === 'category') out.features.push({name: built[i].name, categories: list(i)});
  });
  if (!$('schema-intercept').checked) out.intercept = false;
  out.labels = $('schema-labels').value;
  out.missing = $('schema-missing').value;
  const h = Number($('schema-heldout').value);
  if (h > 0) out.heldout = h;
  $('schema').value = JSON.stringify(out, null, 2);
  checkSchema();
  $('schema').focus();
});
