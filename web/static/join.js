// join.html: load the user's file into the WebAssembly participant
// (worker.js): a block file, or in a federation with a schema the user's own
// CSV file, whose mapping the page shows before anything is sent; join the
// federation of the link, follow its training. A file, not an inline
// script, so that the page runs under the server's Content-Security-Policy.
'use strict';
const H = window.hyfed, $ = H.$;
const fedID = decodeURIComponent(location.pathname.split('/').pop());
const api = '/api/federations/' + encodeURIComponent(fedID);
const state = { summary: null, running: false, done: false, rounds: 0, status: null, schema: null, file: null };
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
  return {invite: f.invite || query, secret: f.secret || f[''] || '', old: !f.invite && !!query, oprf: f.pseudonyms === 'oprf'};
})();
// How record ids leave the tab: keyed pseudonyms, or OPRF ones (the link says).
const pseudonymWords = link.oprf ? 'an OPRF pseudonym the key committee helps make, which no one can compute alone' : 'a keyed pseudonym';
document.getElementById('never-ids').textContent = 'your record ids (only ' + (link.oprf ? 'OPRF pseudonyms, which no participant can compute alone' : 'keyed pseudonyms') + ' of them)';
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
  'schema': ['Your data does not fit', 'The federation did not accept your file, for the reason below. Fix the file, reload the page and join again.'],
  'stopped': ['Federation stopped', 'The organizer stopped the federation, or it failed.'],
  'abuse': ['Disconnected', 'The server refused too many messages from this tab.'],
  'busy': ['Server busy', 'The server is at one of its limits (too many participants registering at once, say). Press "Join training" again in a moment.'],
  'finished': ['Training is over', 'This federation has finished training.'],
  'replaced': ['Seat taken over', 'The same participant connected again from another tab or window, so this one stopped.'],
  'bad-file': ['Cannot read the file', ''],
  'data': ['Your data cannot take part', 'The reason is below. Fix the file, reload the page and join again.'],
  'bad-link': ['Broken link', ''],
  'key-mode': ['Wrong kind of link', 'This link\'s encryption does not match the federation\'s: a federation with threshold keys gives links whose secret starts with threshold:. Ask the organizer for the join link again and open it whole.'],
  'worker': ['The participant could not run', 'This browser may not support WebAssembly workers.'],
};
// showError says what went wrong once: the page's words for the code, then
// the message as it came (a file's error names its line and column and
// needs no words around it).
function showError(code, message) {
  const [title, text] = errors[code] || ['Error', ''];
  $('error-title').textContent = title;
  $('error-text').textContent = text || message;
  $('error-detail').textContent = text ? message : '';
  $('error').style.display = 'block';
  $('error').dataset.code = code || 'error';
}
function hideError() { $('error').style.display = 'none'; $('error').dataset.code = ''; }
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

// The status first: a file is read against its schema, so loading waits for it.
const statusRead = H.getJSON(api, link.invite).then(s => {
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
    $('sealed-item').textContent = 'NOT encrypted in this federation (an insecure demonstration): the numbers this tab sends about each of your samples (how strongly it pulls on the model, its score, the size of its row) travel in plaintext, and the server can read them.';
    $('sealed-item').style.color = '#b00000';
  }
  state.pstar = s.config.pstar || 0;
  state.algo = s.config.algo || 'hyfdca';
  if (state.pstar) $('gap-label').textContent = 'relative loss';
  else if (state.algo !== 'hyfdca') $('gap-label').textContent = 'objective P(w)';
  $('rounds').textContent = s.config.rounds;
  showSchema(s.config.schema || null);
  showFed(s);
  if (s.demo) loadDemoList();
}).catch(e => { $('fed').textContent = ''; errorOfCall(e); });

// showSchema shows what a federation with a schema expects of the file
// (compactly: a line, opened on demand), and the delimiter choice its CSV
// files may need.
function showSchema(sch) {
  state.schema = sch;
  $('schema-box').hidden = !sch;
  if (!sch) return;
  const f = H.schemaFacts(sch);
  $('schema-line').textContent = f.line;
  H.fillKV($('schema-kv'), f.pairs);
  $('file-kind').textContent = 'Your own CSV file (a spreadsheet export) with the columns the federation expects.';
  if (sch.labels === 'shared-with-co-holders') { $('labels-never').hidden = true; $('labels-shared').hidden = false; }
}

// showFed writes the header line: the federation's state and how many have
// registered, kept live from the event stream (the status when it opens,
// a re-read on every participant or state event).
function showFed(s) {
  state.status = s;
  let t = (s.name || s.id) + ': ' + s.state;
  if (s.state === 'waiting') t += ', ' + s.participants.length + ' of ' + s.config.min_participants + ' participants registered';
  else t += ', ' + s.participants.length + ' participants';
  if (s.config.num_features) t += ', ' + s.config.num_features + ' features';
  $('fed').textContent = t;
  H.fedNotes($('fed-notes'), s);
  showAccuracy(s);
  if (state.done) showDone();
}
// showAccuracy names what the page shows: the model's accuracy (the
// federation's model, its round) apart from the last round's, held out or,
// where nothing is held out, on the training samples.
function showAccuracy(s) {
  const trainOnly = H.noHeldout(s);
  $('acc-label').textContent = trainOnly ? 'training accuracy, last round' : 'held-out accuracy, last round';
  const last = s.history && s.history.length ? s.history[s.history.length - 1] : null;
  if (last) showRoundAccuracy(last);
  const m = s.model;
  if (!m) { $('model-line').textContent = 'none yet'; return; }
  const acc = H.accuracyText(s, m.round, m.heldout_accuracy);
  const over = ['finished', 'stopped', 'broken'].includes(s.state);
  $('model-line').textContent = 'round ' + m.round + (m.best ? (over ? ' (the lowest objective)' : ' (the lowest objective so far)') : '') + (acc ? ', ' + acc : '');
}
function showRoundAccuracy(m) {
  const s = state.status;
  const v = H.noHeldout(s) ? m.train_accuracy : m.heldout_accuracy;
  if (v !== null && v !== undefined) $('acc').textContent = (100 * v).toFixed(2) + ' %';
}
// showDone says how the run ended: "finished" only when it learned
// something and nothing went wrong on the way.
function showDone() {
  const s = state.status, r = state.result;
  if (!r) return;
  const troubled = s && s.state === 'finished' && ((s.model && s.model.round === 0) || (s.warnings && s.warnings.length));
  $('status').textContent = (troubled ? 'ended with warnings (at the top of the page): ' : 'finished: ') + r.rounds + ' rounds' +
    (r.reconnects ? ', ' + r.reconnects + ' reconnects' : '');
  document.body.dataset.troubled = troubled ? '1' : '';
}
let fedTimer = null;
function refreshFed() {
  if (fedTimer) return;
  fedTimer = setTimeout(() => {
    fedTimer = null;
    H.getJSON(api, link.invite).then(showFed).catch(() => { /* the next event tries again */ });
  }, 300);
}

// A demo federation's blocks are files as a participant's own would be
// (named CSV files in a federation with a schema): each can be downloaded,
// and "use demo block" reads it as the user's own file.
function loadDemoList() {
  H.getJSON(api + '/demo-blocks', link.invite).then(list => {
    if (!Array.isArray(list) || !list.length) return;
    const sel = $('demo-block'), files = $('demo-files');
    state.demoFiles = {};
    for (const b of list) {
      const o = document.createElement('option');
      o.value = b.block; o.textContent = b.block + ' (' + b.samples + ' samples, ' + b.features + ' features' + (b.taken ? ', taken' : '') + ')';
      if (b.taken) o.disabled = true;
      sel.appendChild(o);
      const name = b.file || 'demo-block-' + b.block;
      state.demoFiles[b.block] = name;
      const a = H.el('a', String(b.block), {href: '#', class: 'demo-file', 'data-block': b.block, title: 'download ' + name});
      a.addEventListener('click', (e) => {
        e.preventDefault();
        H.download(api + '/demo-blocks/' + encodeURIComponent(b.block), link.invite, name).catch(errorOfCall);
      });
      if (files.childNodes.length) files.appendChild(document.createTextNode(' · '));
      files.appendChild(a);
    }
    $('demo-files-row').hidden = !state.schema;
    $('demo').hidden = false;
  }).catch(errorOfCall);
}
function loadDemo() {
  const k = $('demo-block').value;
  if (k === '') return;
  const name = (state.demoFiles && state.demoFiles[k]) || 'demo block ' + k;
  H.request(api + '/demo-blocks/' + encodeURIComponent(k), link.invite).then(r => r.arrayBuffer())
    .then(b => loadBytes(name, b))
    .catch(e => (e.status === 401 || e.status === 403) ? errorOfCall(e) : showError('bad-file', e.message));
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
    case 'prepared': keepPrepared(ev.preview); break;
    case 'error':
      if (ev.code === 'unknown-session') { try { forgetKeyState(); sessionStorage.removeItem(sessionKey); sessionStorage.removeItem(ownKey); } catch (e) {} }
      showError(ev.code, ev.message);
      if (ev.code === 'bad-file') forgetFile();
      else refreshFed(); // a refusal is among the federation's notices
      if (state.running) { state.running = false; $('status').textContent = 'stopped: ' + (errors[ev.code] || ['error'])[0]; }
      $('join').disabled = !state.summary || state.running;
      break;
    case 'done':
      state.running = false; state.done = true; state.result = ev.result;
      showDone();
      refreshFed(); // its warnings decide whether "finished" is the word
      // A finished federation switches no more sums: the share is of no use.
      try { forgetKeyState(); sessionStorage.removeItem(sessionKey); } catch (e) {}
      $('progress').value = 1; $('phase').textContent = 'done'; document.body.dataset.done = '1'; notice('');
      $('join-hint').textContent = 'Training is over: the model is below.';
      downloads.refresh();
      break;
  }
};
worker.onerror = (e) => showError('worker', e.message || 'worker error');

// loadBytes hands the file to the participant (the bytes move to the
// worker); a copy stays here so that another delimiter can read it again.
function loadBytes(name, buf) {
  if (state.running) { notice('This tab is training with the file it read; to use another one, reload the page.'); return; }
  hideError();
  state.file = {name: name, bytes: buf.slice(0)};
  // The delimiter matters once a file is read (a phone keeps Join on its first screen).
  $('delimiter-row').hidden = !state.schema;
  $('join-hint').textContent = 'reading ' + name + '…';
  statusRead.then(() => worker.postMessage({cmd: 'load', name: name, bytes: buf, schema: state.schema ? JSON.stringify(state.schema) : '',
    delimiter: $('delimiter').value}, [buf]));
}
// forgetFile: a file that did not load leaves nothing to join with.
function forgetFile() {
  state.summary = null;
  $('summary').hidden = true;
  $('join').disabled = true;
  $('join-hint').textContent = 'Fix the file (the error above says where) and pick it again.';
  steps('pick');
}
$('delimiter').addEventListener('change', () => {
  if (state.file && !state.running) loadBytes(state.file.name, state.file.bytes.slice(0));
});
// steps marks where the user is: pick, check, join, joined.
function steps(now) {
  const order = ['pick', 'check', 'join'];
  const at = now === 'joined' ? order.length : order.indexOf(now);
  order.forEach((k, i) => { $('step-' + k).className = i < at ? 'done' : i === at ? 'now' : ''; });
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
$('demo-load').addEventListener('click', loadDemo);
$('demo-block').addEventListener('change', loadDemo);

function showSummary(s) {
  state.summary = s;
  const kv = $('summary-kv'); kv.textContent = '';
  const add = (k, v) => { kv.appendChild(H.el('dt', k)); kv.appendChild(H.el('dd', v)); };
  const m = s.mapping;
  $('summary-file').textContent = s.file;
  add('file', s.file + ' (' + H.bytes(s.bytes) + (m ? ', ' + m.delimiter + '-separated' : '') + ')');
  const trainWords = s.heldout ? s.train + ' for training, ' + s.heldout + ' held out to measure accuracy' : s.train + ' for training';
  const labelled = s.positive + ' positive, ' + s.negative + ' negative' + (s.unlabelled ? ', ' + s.unlabelled + ' without a label' : '');
  add('samples', s.samples + ' (' + trainWords + '; of those for training ' + labelled + ')');
  if (m) showMapping(m);
  else {
    $('mapping').hidden = true;
    add('features', s.features + ' of ' + s.num_features + ' (' + (s.columns.length > 40 ? s.columns.slice(0, 40) + '…' : s.columns) + ')');
    add('non-zeros', s.non_zeros);
  }
  const rows = $('rows'); rows.textContent = '';
  if (s.image) {
    for (const r of s.preview.slice(0, 8)) rows.appendChild(drawRow(r));
    rows.appendChild(H.el('p', 'A few of your rows, drawn here from your file. They never leave this tab.', {class: 'muted'}));
  }
  $('summary').hidden = false;
  $('join').disabled = state.running;
  $('join-hint').textContent = state.running ? '' : 'Nothing is sent until you press Join training.';
  steps(state.running ? 'joined' : 'join');
  $('privacy-link').hidden = false;
  try { sessionStorage.setItem('hyfed-preview', JSON.stringify({fed: fedID, rows: s.preview, num_features: s.num_features})); } catch (e) {}
}
// keepPrepared keeps an own file's first rows as the federation trains them
// (scaled, the intercept placed), for the privacy view to compare with what
// the server reconstructs, which is of these values.
function keepPrepared(rows) {
  try { sessionStorage.setItem('hyfed-prepared', JSON.stringify({fed: fedID, rows: rows || []})); } catch (e) {}
}

// showMapping says, before anything is sent, how the file was read: which
// of its columns feed which of the federation's features, which are
// ignored, what the label values mean, which features the file does not
// hold, the rows and labelled rows, the cells the federation will fill.
function showMapping(m) {
  const box = $('mapping'); box.textContent = '';
  const sch = state.schema || {};
  const p = (text, attrs) => box.appendChild(H.el('p', text, attrs));
  p(m.rows + ' rows, ' + (m.label_column ? m.labelled + ' with a label' : 'no label column'), {id: 'map-rows'});
  const t = H.el('table', null, {id: 'map-columns'});
  const hr = t.appendChild(H.el('thead')).appendChild(H.el('tr'));
  hr.appendChild(H.el('th', 'your column', {scope: 'col'})); hr.appendChild(H.el('th', 'used as', {scope: 'col'}));
  const tb = t.appendChild(H.el('tbody'));
  const feats = new Map((sch.features || []).map((f) => [f.name, f]));
  m.columns.forEach((c, i) => {
    const tr = tb.appendChild(H.el('tr', null, {'data-use': c.use.split(' ')[0]}));
    tr.appendChild(H.el('td', c.column === '' ? '(column ' + (i + 1) + ', no name)' : c.column));
    let use = c.use;
    if (c.use === 'id') use = 'record id (only ' + pseudonymWords + ' of it leaves this tab)';
    else if (c.use === 'label') use = 'label: ' + labelWords(m);
    else if (c.use === 'ignored') use = 'ignored: the federation does not use this column';
    else if (c.use.startsWith('feature ')) {
      const f = feats.get(c.use.slice(8));
      use = 'feature ' + c.use.slice(8) + (f && f.categories && f.categories.length ? ' (one of ' + f.categories.join(', ') + ')' : '');
    }
    tr.appendChild(H.el('td', use));
  });
  const wrap = box.appendChild(H.el('div', null, {class: 'scroll'}));
  wrap.appendChild(t);
  p(m.not_held && m.not_held.length ? 'Features you do not hold: ' + m.not_held.join(', ') + '. Other participants may hold them; where nobody does, the sample counts them at the average.'
    : 'You hold every feature of the federation.', {id: 'map-not-held'});
  if (m.filled) p(m.filled + ' missing cell' + (m.filled === 1 ? '' : 's') + ' will be filled with the federation\'s average of the feature.', {id: 'map-filled'});
  if (sch.labels === 'shared-with-co-holders') {
    p(m.label_column
      ? 'This federation shares labels with co-holders: the participants who hold other columns of your samples (the same record ids) will learn their labels from your file.'
      : 'Your file has no label column: you take part without labels. The participants who hold labels of your samples send them to this tab, encrypted, so you will learn those labels.',
    {id: 'map-labels', class: 'note'});
  } else if (m.label_column && m.labelled < m.rows) {
    p('Rows without a label are left out of training here: in this federation every holder of a sample needs its label.', {id: 'map-labels', class: 'note'});
  }
  box.hidden = false;
}
// labelWords lists the label values found and what each means.
function labelWords(m) {
  const parts = (m.label_values || []).map((v) => '"' + v.text + '" = ' + (v.class > 0 ? 'positive' : 'negative') + ' (' + v.count + ' row' + (v.count === 1 ? '' : 's') + ')');
  if (m.rows > m.labelled) parts.push('blank (' + (m.rows - m.labelled) + ' row' + (m.rows - m.labelled === 1 ? '' : 's') + ')');
  return parts.join(', ');
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
  state.running = true; $('join').disabled = true; hideError();
  document.body.dataset.joined = '1';
  $('summary-details').open = false; // what was read stays a click away; the progress comes up
  $('join-hint').textContent = 'Joined: training progress is below.';
  steps('joined');
  // On a phone the progress now sits right below (the stylesheet); bring it into view.
  $('progress-card').scrollIntoView({block: 'nearest'});
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
// kindWords names the protocol's messages for people; the protocol's own
// name stays in the row's tooltip and data-kind.
const kindWords = {
  'hello': link.oprf ? 'joining: the shape of your data (your record ids follow as OPRF pseudonyms)' : 'joining: the shape of your data and pseudonyms of your record ids',
  'prep-part': 'preparing: your labels (encrypted) and column statistics',
  'norms-part': 'the size of each of your rows',
  'primal': 'your share of the model',
  'metrics': 'loss and correct predictions, totals',
  'ip-part': 'your samples\' scores under the model',
  'gram-part': 'products of the rows picked this round (for the step)',
  'solved': 'the step solved for your samples',
  'dir-part': 'your part of the round\'s step',
  'delta': 'changes of your samples\' numbers',
  'applied': 'the step applied to your samples',
  'local-part': 'your local model (a baseline algorithm)',
  'key-share': 'setting up the key', 'key-dealt': 'setting up the key', 'key-ready': 'setting up the key',
  'switch-shares': 'turning sums to their receivers\' keys',
  'oprf-key': 'making the pseudonym key', 'oprf-dealt': 'making the pseudonym key (shares sealed to the committee)',
  'oprf-blinded': 'your record ids, blinded (random points to everyone else)',
  'oprf-evaluated': 'the committee\'s evaluations of blinded ids', 'pseudonyms': 'the pseudonyms of your record ids',
};
function showSent(s) {
  $('sent-total').textContent = s.frames + ' messages, ' + H.bytes(s.bytes) + ': ' + H.bytes(s.sealed_bytes) + ' encrypted, ' +
    H.bytes(s.plain_bytes) + ' plaintext (' + s.plain_numbers + ' numbers)';
  const tb = $('sent'); tb.textContent = '';
  const order = Object.keys(kindWords);
  const rank = (k) => order.includes(k) ? order.indexOf(k) : order.length;
  for (const k of Object.keys(s.by_kind).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1))) {
    const v = s.by_kind[k]; const tr = H.el('tr', null, {'data-kind': k, title: 'the protocol calls it "' + k + '"'});
    for (const x of [kindWords[k] || k, v.frames, H.bytes(v.sealed_bytes), H.bytes(v.plain_bytes), v.plain_numbers]) tr.appendChild(H.el('td', x));
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
    showRoundAccuracy(m);
  }
}, (state, d) => {
  const live = $('live');
  live.dataset.state = state;
  if (state === 'reconnecting') live.textContent = 'live metrics: reconnecting in ' + (d.wait_ms / 1000).toFixed(1) + ' s (' + d.error.message + ')';
  else if (state === 'closed') live.textContent = 'live metrics stopped: ' + H.refusal(d.error, 'Open the whole join link, with its #invite=…&secret=… part.');
  else live.textContent = '';
});
window.addEventListener('beforeunload', (e) => { if (state.running) { e.preventDefault(); e.returnValue = ''; } });
