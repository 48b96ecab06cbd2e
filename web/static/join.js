// join.html: load a block file into the WebAssembly participant (worker.js),
// join the federation of the link, follow its training. A file, not an inline
// script, so that the page runs under the server's Content-Security-Policy.
'use strict';
const H = window.hyfed, $ = H.$;
const fedID = decodeURIComponent(location.pathname.split('/').pop());
const api = '/api/federations/' + encodeURIComponent(fedID);
const state = { summary: null, running: false, done: false, rounds: 0 };
const sessionKey = 'hyfed-session-' + fedID;
// The same token, kept after training ends (sessionKey is dropped then, so
// that a reload does not try to return to a finished federation): the
// privacy view asks the curious server for this participant's rows with it.
const ownKey = 'hyfed-own-session-' + fedID;
// With threshold keys, this participant's party of the federation's key (its
// share, for a committee member), as the participant reported it: kept per
// seat (keyStateKey(session)) so that a reloaded page takes part again as the
// same party, which the coordinator asks back into the key. The participant
// hands it over already sealed under a key derived from the link secret
// (which this page does not store): the storage alone cannot open it.
const keyStatePrefix = 'hyfed-keys-' + fedID + '-';
function keyStateKey(session) { return keyStatePrefix + session; }
// The invitation, for the privacy view opened from here before this tab has
// a session token: it reads the server's side with it.
const inviteKey = 'hyfed-invite-' + fedID;

// The link: /join/<id>#invite=<invite>&secret=<secret>, or the older
// /join/<id>?invite=<invite>#<secret> of links handed out before tokens left
// query strings (the participant's session.ParseLink reads both).
const link = (() => {
  const f = H.fragment();
  const query = new URLSearchParams(location.search).get('invite') || '';
  return {invite: f.invite || query, secret: f.secret || f[''] || '', old: !f.invite && !!query};
})();
if (link.old) {
  // Keep the token out of the address bar from now on (a reload, a copy).
  history.replaceState(null, '', location.pathname + '#invite=' + encodeURIComponent(link.invite) + '&secret=' + link.secret);
}
try { if (link.invite) sessionStorage.setItem(inviteKey, link.invite); } catch (e) { /* storage off */ }

// What people should read for the server's error codes (the server's own
// message follows).
const errors = {
  'wrong-secret': ['Wrong secret', "This link's secret does not match the federation's. Ask the organizer for the join link again and open it whole, including the part after #."],
  'bad-invite': ['Invitation not valid', 'The invitation in this link is not valid for this federation. Ask the organizer for a new link.'],
  'bad-token': ['Invitation not valid', 'The server refused the invitation in this link (the part after #invite=). Ask the organizer for the join link again and open it whole.'],
  'unknown-federation': ['No such federation', 'This server has no federation with this id.'],
  'started': ['No seat for you', 'The federation is full or started training without new participants.'],
  'unknown-session': ['Seat not found', "The server does not know this tab's earlier seat. Reload the page to join afresh."],
  'schema': ['Your data does not fit', "Your block's features do not match the federation's."],
  'stopped': ['Federation stopped', 'The organizer stopped the federation, or it failed.'],
  'abuse': ['Disconnected', 'The server refused too many messages from this tab.'],
  'busy': ['Server busy', 'The server is at one of its limits (too many participants registering at once, say). Press "Join training" again in a moment.'],
  'finished': ['Training is over', 'This federation has finished training.'],
  'replaced': ['Seat taken over', 'The same participant connected again from another tab or window, so this one stopped.'],
  'bad-file': ['Cannot read the file', ''],
  'bad-link': ['Broken link', ''],
  'key-mode': ['Wrong kind of link', 'This link\'s encryption does not match the federation\'s: a federation with threshold keys gives links whose secret starts with threshold:. Ask the organizer for the join link again and open it whole.'],
  'worker': ['The participant could not run', 'This browser may not support WebAssembly workers.'],
};
function showError(code, message) {
  const [title, text] = errors[code] || ['Error', ''];
  $('error-title').textContent = title;
  $('error-text').textContent = (text ? text + ' ' : '') + '(' + message + ')';
  $('error').style.display = 'block';
  $('error').dataset.code = code || 'error';
}
function notice(text) { $('notice').textContent = text; $('notice').style.display = text ? 'block' : 'none'; }

// Check the link's shape before anything.
if (!link.invite) {
  showError('bad-link', 'the link has no invitation: it should end in #invite=…&secret=…');
} else if (link.secret.replace(/^(plaintext|threshold):/, '').length < 10) {
  showError('bad-link', 'the link has no secret: it should end in #invite=…&secret=…');
}

// errorOfCall shows a refused API call: a refused invitation says which
// link the page needs.
function errorOfCall(e) {
  if (e.status === 401 || e.status === 403) showError('bad-token', e.message);
  else if (e.status === 404) showError('unknown-federation', e.message);
  else showError(e.code || 'error', e.message);
}

// The model's downloads: with this tab's session token once it registered
// (kept after training ends), else with the invitation.
const downloads = H.modelDownloads(api, () => {
  let session = '';
  try { session = sessionStorage.getItem(ownKey) || ''; } catch (e) { /* storage off */ }
  return [session, link.invite];
});

H.getJSON(api, link.invite).then(s => {
  downloads.show(s);
  state.rounds = s.config.rounds;
  if ((s.config.keys === 'threshold') !== link.secret.startsWith('threshold:')) {
    showError('key-mode', 'the federation\'s keys: ' + (s.config.keys || 'shared') + '; the link\'s secret ' + (link.secret.startsWith('threshold:') ? 'starts' : 'does not start') + ' with threshold:');
  }
  if (s.config.keys === 'threshold') {
    $('key-note').textContent = 'This federation uses threshold keys: this tab makes its own part of the key (from the secret in the part of the link after #, which browsers never send to the server, and its own randomness); no single participant can open the others\' sums. ' +
      'If you are on the key committee, this tab also helps turn each sum into one only its receiver can open ("switching"). It keeps its part, encrypted, in this tab\'s storage, so that a reload takes it back.';
  }
  $('insecure-banner').hidden = !s.insecure;
  if (s.insecure) {
    $('sealed-item').textContent = 'NOT encrypted in this federation (an insecure demonstration): your dual values and their updates, inner products and squared norms travel in plaintext, and the server can read them.';
    $('sealed-item').style.color = '#b00000';
  }
  state.pstar = s.config.pstar || 0;
  state.algo = s.config.algo || 'hyfdca';
  if (state.pstar) $('gap-label').textContent = 'relative loss';
  else if (state.algo !== 'hyfdca') $('gap-label').textContent = 'objective P(w)';
  $('rounds').textContent = s.config.rounds;
  showFed(s);
  if (s.demo) loadDemoList();
}).catch(e => { $('fed').textContent = ''; errorOfCall(e); });

// showFed writes the header line: the federation's state and how many have
// registered, kept live from the event stream (the status when it opens,
// a re-read on every participant or state event).
function showFed(s) {
  let t = (s.name || s.id) + ': ' + s.state;
  if (s.state === 'waiting') t += ', ' + s.participants.length + ' of ' + s.config.min_participants + ' participants registered';
  else t += ', ' + s.participants.length + ' participants';
  if (s.config.num_features) t += ', ' + s.config.num_features + ' features';
  $('fed').textContent = t;
}
let fedTimer = null;
function refreshFed() {
  if (fedTimer) return;
  fedTimer = setTimeout(() => {
    fedTimer = null;
    H.getJSON(api, link.invite).then(showFed).catch(() => { /* the next event tries again */ });
  }, 300);
}

function loadDemoList() {
  H.getJSON(api + '/demo-blocks', link.invite).then(list => {
    if (!Array.isArray(list) || !list.length) return;
    const sel = $('demo-block');
    for (const b of list) {
      const o = document.createElement('option');
      o.value = b.block; o.textContent = b.block + ' (' + b.samples + ' samples, ' + b.features + ' features' + (b.taken ? ', taken' : '') + ')';
      if (b.taken) o.disabled = true;
      sel.appendChild(o);
    }
    $('demo').hidden = false;
  }).catch(errorOfCall);
}

// The worker runs the participant.
const worker = new Worker('/static/worker.js');
worker.onmessage = (e) => {
  const ev = JSON.parse(e.data);
  switch (ev.type) {
    case 'ready': document.body.dataset.ready = '1'; break;
    case 'summary': showSummary(ev.summary); break;
    case 'state': onState(ev); break;
    case 'progress': onProgress(ev); break;
    case 'sent': showSent(ev.sent); break;
    case 'keys': keepKeyState(ev.key_state); break;
    case 'error':
      if (ev.code === 'unknown-session') { try { forgetKeyState(); sessionStorage.removeItem(sessionKey); sessionStorage.removeItem(ownKey); } catch (e) {} }
      showError(ev.code, ev.message);
      if (state.running) { state.running = false; $('status').textContent = 'stopped: ' + (errors[ev.code] || ['error'])[0]; }
      $('join').disabled = !state.summary || state.running;
      break;
    case 'done':
      state.running = false; state.done = true;
      $('status').textContent = 'finished: ' + ev.result.rounds + ' rounds' + (ev.result.reconnects ? ', ' + ev.result.reconnects + ' reconnects' : '');
      // A finished federation switches no more sums: the share is of no use.
      try { forgetKeyState(); sessionStorage.removeItem(sessionKey); } catch (e) {}
      $('progress').value = 1; $('phase').textContent = 'done'; document.body.dataset.done = '1'; notice('');
      downloads.refresh();
      break;
  }
};
worker.onerror = (e) => showError('worker', e.message || 'worker error');

function loadBytes(name, buf) {
  $('error').style.display = 'none';
  worker.postMessage({cmd: 'load', name: name, bytes: buf}, [buf]);
}
$('file').addEventListener('change', () => {
  const f = $('file').files[0];
  if (f) f.arrayBuffer().then(b => loadBytes(f.name, b));
});
// One file control: the button (or a click anywhere on the drop zone)
// opens the hidden input's picker.
$('choose').addEventListener('click', (e) => { e.stopPropagation(); $('file').click(); });
const drop = $('drop');
drop.addEventListener('click', (e) => { if (e.target === drop || e.target.tagName === 'P' || e.target.tagName === 'SMALL') $('file').click(); });
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault(); drop.classList.remove('over');
  const f = e.dataTransfer.files[0];
  if (f) f.arrayBuffer().then(b => loadBytes(f.name, b));
});
$('demo-load').addEventListener('click', () => {
  const k = $('demo-block').value;
  H.request(api + '/demo-blocks/' + encodeURIComponent(k), link.invite).then(r => r.arrayBuffer())
    .then(b => loadBytes('demo block ' + k, b))
    .catch(e => (e.status === 401 || e.status === 403) ? errorOfCall(e) : showError('bad-file', e.message));
});

function showSummary(s) {
  state.summary = s;
  const kv = $('summary-kv'); kv.textContent = '';
  const add = (k, v) => { const dt = document.createElement('dt'); dt.textContent = k; const dd = document.createElement('dd'); dd.textContent = v; kv.append(dt, dd); };
  add('file', s.file + ' (' + H.bytes(s.bytes) + ')');
  add('samples', s.samples + ' (' + s.train + ' training: ' + s.positive + ' positive, ' + s.negative + ' negative; ' + s.heldout + ' held out)');
  add('features', s.features + ' of ' + s.num_features + ' (' + (s.columns.length > 40 ? s.columns.slice(0, 40) + '…' : s.columns) + ')');
  add('non-zeros', s.non_zeros);
  const rows = $('rows'); rows.textContent = '';
  if (s.image) {
    for (const r of s.preview.slice(0, 8)) rows.appendChild(drawRow(r));
    const cap = document.createElement('p'); cap.innerHTML = '<small>A few of your rows, drawn here from your file. They never leave this tab.</small>'; rows.appendChild(cap);
  }
  $('summary').hidden = false;
  $('join').disabled = state.running;
  $('privacy-link').hidden = false;
  try { sessionStorage.setItem('hyfed-preview', JSON.stringify({fed: fedID, rows: s.preview, num_features: s.num_features})); } catch (e) {}
}
function drawRow(r) {
  const c = document.createElement('canvas');
  c.title = 'record ' + r.id + ', label ' + r.label;
  H.drawPixels(c, r.values, r.features);
  return c;
}
// The privacy view opens as a tab of this one (it shares this tab's session
// storage: the session token, the preview of the rows); the dashboard reads
// with the invitation, which lets anyone holding it see what a viewer sees.
function openPrivacy(e) {
  e.preventDefault();
  window.open('/federations/' + encodeURIComponent(fedID) + '/privacy', '_blank');
}
$('privacy-link').addEventListener('click', openPrivacy);
$('privacy-nav').addEventListener('click', openPrivacy);
$('dash-nav').href = '/federations/' + encodeURIComponent(fedID) + (link.invite ? '#viewer=' + encodeURIComponent(link.invite) : '');

$('join').addEventListener('click', () => {
  if (!state.summary || state.running) return;
  state.running = true; $('join').disabled = true; $('error').style.display = 'none';
  // A reloaded page returns to its seat with the session token it kept.
  let session = '', keyState = '';
  try {
    session = sessionStorage.getItem(sessionKey) || '';
    if (session) keyState = sessionStorage.getItem(keyStateKey(session)) || '';
  } catch (e) {}
  worker.postMessage({cmd: 'start', href: location.href, session: session, keyState: keyState});
});

// keepKeyState stores the participant's latest key state for its seat.
function keepKeyState(ks) {
  try {
    const session = sessionStorage.getItem(sessionKey);
    if (session && ks) { sessionStorage.setItem(keyStateKey(session), ks); document.body.dataset.keyState = '1'; }
  } catch (e) { /* storage off: a reload then returns without its share */ }
}
function forgetKeyState() {
  const session = sessionStorage.getItem(sessionKey);
  if (session) sessionStorage.removeItem(keyStateKey(session));
}

function onState(ev) {
  if (ev.state === 'connecting') $('status').textContent = 'connecting…';
  if (ev.state === 'registered') {
    $('status').textContent = 'registered; waiting for the others'; $('name').textContent = ev.name; notice('');
    try { if (ev.session) { sessionStorage.setItem(sessionKey, ev.session); sessionStorage.setItem(ownKey, ev.session); } } catch (e) {}
    try { sessionStorage.setItem('hyfed-name-' + fedID, ev.name || ''); } catch (e) {} // the privacy view marks this participant
    document.body.dataset.registered = '1';
  }
  if (ev.state === 'reconnecting') {
    $('status').textContent = 'connection lost; reconnecting';
    notice('Connection lost (' + ev.message + '). Reconnecting in ' + (ev.wait_ms / 1000).toFixed(1) + ' s; your place in the federation is kept.');
  }
}
function onProgress(ev) {
  if (ev.rounds) state.rounds = ev.rounds;
  $('status').textContent = 'training'; notice('');
  const round = ev.round || 0;
  $('round').textContent = round; $('rounds').textContent = state.rounds || '–';
  $('phase').textContent = ev.phase + (ev.active === false ? ' (inactive this round)' : '');
  if (state.rounds) $('progress').value = Math.min(1, round / state.rounds);
}
function showSent(s) {
  $('sent-total').textContent = s.frames + ' messages, ' + H.bytes(s.bytes) + ': ' + H.bytes(s.sealed_bytes) + ' encrypted, ' +
    H.bytes(s.plain_bytes) + ' plaintext (' + s.plain_numbers + ' numbers)';
  const tb = $('sent'); tb.textContent = '';
  for (const k of Object.keys(s.by_kind).sort()) {
    const v = s.by_kind[k]; const tr = document.createElement('tr');
    for (const x of [k, v.frames, H.bytes(v.sealed_bytes), H.bytes(v.plain_bytes), v.plain_numbers]) { const td = document.createElement('td'); td.textContent = x; tr.appendChild(td); }
    tb.appendChild(tr);
  }
}

// The federation's progress: loss and accuracy (the invitation may read it).
H.events(api + '/events', link.invite, (type, data) => {
  if (type === 'status') { showFed(JSON.parse(data)); return; }
  if (type !== 'message') return;
  const ev = JSON.parse(data);
  if (ev.type === 'participant' || ev.type === 'state') refreshFed();
  if (ev.type === 'round' || ev.type === 'state') downloads.refresh();
  if (ev.type === 'round' && ev.metrics) {
    const m = ev.metrics;
    if (state.pstar && m.primal !== null) $('gap').textContent = ((m.primal - state.pstar) / state.pstar).toExponential(2);
    else if (m.gap !== null && m.dual) $('gap').textContent = (m.gap / Math.abs(m.dual)).toExponential(2);
    else if (m.primal != null && state.algo && state.algo !== 'hyfdca') $('gap').textContent = m.primal.toPrecision(6);
    if (m.heldout_accuracy !== null) $('acc').textContent = (100 * m.heldout_accuracy).toFixed(2) + ' %';
  }
}, (state, d) => {
  const live = $('live');
  live.dataset.state = state;
  if (state === 'reconnecting') live.textContent = 'live metrics: reconnecting in ' + (d.wait_ms / 1000).toFixed(1) + ' s (' + d.error.message + ')';
  else if (state === 'closed') live.textContent = 'live metrics stopped: ' + H.refusal(d.error, 'Open the whole join link, with its #invite=…&secret=… part.');
  else live.textContent = '';
});
window.addEventListener('beforeunload', (e) => { if (state.running) { e.preventDefault(); e.returnValue = ''; } });
