// privacy.html: what the participant's tab holds beside what the server
// holds, and the curious server's attack on the tab's rows. A file, not an
// inline script, for the CSP.
'use strict';
const H = window.hyfed, $ = H.$;
const id = decodeURIComponent(location.pathname.split('/')[2] || '');
const api = '/api/federations/' + encodeURIComponent(id);

// ---- the tab's side: what the join page left in this tab's session storage ----
// fromTab reads the tab's session storage: this page's own copy (a page
// opened from the join page starts with one) or, for what the join page
// stored after opening it, the join page's.
function fromTab(key) {
  try { const v = sessionStorage.getItem(key); if (v) return v; } catch (e) { /* storage off */ }
  try { if (window.opener && window.opener.sessionStorage) return window.opener.sessionStorage.getItem(key); } catch (e) { /* another origin */ }
  return null;
}

// The tokens: the participant's session token, which the join page keeps in
// this tab's session storage (the server hands a participant's own values
// and its attack rows only to it), else the invitation the join page kept,
// else the dashboard's #viewer= or #admin= token, passed in the fragment.
const frag = H.fragment();
const ownKey = 'hyfed-own-session-' + id;
function token() {
  const t = fromTab(ownKey) || fromTab('hyfed-session-' + id);
  if (t) { try { sessionStorage.setItem(ownKey, t); } catch (e) { /* storage off */ } }
  return t;
}
// readToken: the widest reads this tab may make (admin sees every
// participant's values, a session its own).
function readToken() {
  return frag.admin || token() || frag.viewer || fromTab('hyfed-invite-' + id) || '';
}
const NEED = 'Open the privacy view from the join page (its "what the server holds" link), in the tab that joined, ' +
  'or from the dashboard\'s link, which carries its token.';
$('dash-link').href = '/federations/' + encodeURIComponent(id) +
  (frag.admin ? '#admin=' + encodeURIComponent(frag.admin) : frag.viewer ? '#viewer=' + encodeURIComponent(frag.viewer) : '');

let preview = null;
try { preview = JSON.parse(fromTab('hyfed-preview') || 'null'); } catch (e) { preview = null; }
if (preview && preview.fed && preview.fed !== id) preview = null; // rows of another federation's block
(function drawPreview() {
  const box = $('preview');
  if (!preview || !Array.isArray(preview.rows) || !preview.rows.length) {
    box.appendChild(H.el('p', 'This tab holds no block of this federation right now. Open this page from the join page ' +
      '(its “what the server holds” link) to see a few of your own rows here; they are read from this tab, not fetched from anywhere.', {class: 'muted'}));
    return;
  }
  const nf = preview.num_features || 0;
  const rows = preview.rows.slice(0, 12);
  box.appendChild(H.el('p', 'A few of your rows, read from this tab' + (nf ? ' (' + nf + ' features in the federation)' : '') + ':'));
  if (H.isImage(nf)) {
    const wrap = H.el('div', null, {class: 'thumbs'});
    for (const r of rows) {
      const fig = H.el('figure');
      const c = H.el('canvas', null, {class: 'px small', role: 'img',
        'aria-label': 'row ' + r.id + ', label ' + r.label + ', your features as a 28 by 28 image'});
      H.drawPixels(c, r.values || [], r.features || null);
      fig.appendChild(c);
      fig.appendChild(H.el('figcaption', r.id + ' · ' + r.label));
      wrap.appendChild(fig);
    }
    box.appendChild(wrap);
    box.appendChild(H.el('p', 'Under each: its record id · its label. Pale blue: pixels your block does not hold (another participant holds them).', {class: 'muted'}));
  } else {
    const div = H.el('div', null, {class: 'scroll'});
    const t = H.el('table');
    const hr = H.el('tr');
    for (const h of ['id', 'label', 'features (index: value)']) hr.appendChild(H.el('th', h, {scope: 'col'}));
    t.appendChild(H.el('thead')).appendChild(hr);
    const tb = t.appendChild(H.el('tbody'));
    for (const r of rows) {
      const tr = H.el('tr');
      tr.appendChild(H.el('td', r.id)); tr.appendChild(H.el('td', r.label));
      const f = r.features || [], v = r.values || [];
      const parts = [];
      for (let i = 0; i < Math.min(8, v.length); i++) parts.push((f[i] !== undefined ? f[i] : i) + ': ' + H.num(v[i], 3));
      if (v.length > 8) parts.push('… (' + v.length + ' values)');
      tr.appendChild(H.el('td', parts.join('  '), {class: 'nums'}));
      tb.appendChild(tr);
    }
    div.appendChild(t); box.appendChild(div);
  }
  if (preview.rows.length > rows.length) box.appendChild(H.el('p', '(' + rows.length + ' of the ' + preview.rows.length + ' rows shown.)', {class: 'muted'}));
})();

// ---- the server's side ----------------------------------------------------------
function values(head, count) {
  const s = (head || []).map((v) => H.num(v, 4)).join(', ');
  return '[' + s + (count > (head || []).length ? ', … ' + count + ' values' : '') + ']';
}

// largest lists the entries of largest magnitude, with their feature
// indexes (the first entries of an image's weights are its blank corner).
function largest(p, n) {
  if (!p.values) return 'first values: ' + values(p.head, p.count);
  const idx = p.values.map((v, i) => i).filter((i) => p.values[i] != null);
  idx.sort((a, b) => Math.abs(p.values[b]) - Math.abs(p.values[a]));
  const top = idx.slice(0, n).map((i) => 'feature ' + (p.features ? p.features[i] : i) + ': ' + H.num(p.values[i], 4));
  return 'largest in magnitude: ' + (top.length ? top.join(', ') : 'none');
}

let plainScheme = false;   // a --plaintext federation: the server reads everything
function sealedLine(v, label) {
  if (!v) return H.el('div', label + ': nothing held yet (before the first round boundary)', {class: 'muted'});
  const readable = plainScheme || Array.isArray(v.readable_values);
  const d = H.el('div', null, {class: readable ? 'readable' : 'locked'});
  d.appendChild(H.el('span', readable ? 'READABLE' : 'sealed', {class: 'badge'}));
  d.appendChild(H.el('b', ' ' + label + ': '));
  d.appendChild(document.createTextNode(v.ciphertexts + ' ' + (readable ? 'chunk' : 'ciphertext') + (v.ciphertexts === 1 ? '' : 's') +
    ', ' + H.bytes(v.bytes) + ' for ' + v.values + ' values · ' + v.form));
  if (Array.isArray(v.readable_values)) d.appendChild(H.el('div', 'the server reads: ' + values(v.readable_values, v.values), {class: 'nums'}));
  d.title = v.what;
  return d;
}

function plainBlock(p, nf, label, big) {
  const d = H.el('div', null, {class: 'clear'});
  d.appendChild(H.el('span', 'plaintext', {class: 'badge'}));
  d.appendChild(H.el('b', ' ' + label + ' '));
  d.appendChild(H.el('span', '(' + p.count + ' numbers, readable by the server)'));
  d.appendChild(H.el('div', largest(p, 6), {class: 'nums'}));
  if (H.isImage(nf) && p.values) {
    const c = H.el('canvas', null, {class: big ? 'px' : 'px small', role: 'img', 'aria-label': label + ' as a 28 by 28 image'});
    H.drawWeights(c, p.values, p.features || null);
    d.appendChild(c);
  }
  return d;
}

// the join page names its participant once the server welcomed it
let you = (preview && preview.name) || fromTab('hyfed-name-' + id) || null;

let keyTableOpen = false;
// keyMode draws who holds the key and what each coalition with the server
// could open (the server view's key_mode).
function keyMode(k) {
  const d = $('keymode');
  d.textContent = '';
  if (!k) return;
  const label = {none: 'none (not encrypted)', shared: 'shared key', threshold: 'threshold keys, ' + k.threshold + '-of-' + (k.committee && k.committee.length ? k.committee.length : k.committee_size)}[k.mode] || k.mode;
  d.appendChild(H.el('h3', 'Key mode: ' + label));
  d.appendChild(H.el('p', k.summary));
  if (k.committee && k.committee.length) {
    const names = k.committee.map(m => m.name + (you && m.name === you ? ' (you)' : '') + (m.holds_share ? '' : ' (lost its share)'));
    d.appendChild(H.el('p', 'Key committee: ' + names.join(', ') + '.', {id: 'key-committee'}));
  }
  const tb = H.el('table', null, {id: 'key-opens'});
  const head = H.el('tr');
  head.appendChild(H.el('th', 'who'));
  head.appendChild(H.el('th', 'can open'));
  tb.appendChild(head);
  for (const o of k.opens || []) {
    const tr = H.el('tr');
    tr.appendChild(H.el('td', o.who));
    tr.appendChild(H.el('td', o.opens));
    tb.appendChild(tr);
  }
  // The table is long on a phone: a click away, kept open across refreshes.
  const det = H.el('details', null, {id: 'key-details'});
  det.open = keyTableOpen;
  det.addEventListener('toggle', () => { keyTableOpen = det.open; });
  det.appendChild(H.el('summary', 'Who can open what'));
  det.appendChild(tb);
  d.appendChild(det);
  d.appendChild(H.el('p', k.colluder, {id: 'key-colluder'}));
}
function render(v) {
  $('title').textContent = v.name || v.id;
  document.title = 'hyfed: privacy view of ' + (v.name || v.id);
  $('state').textContent = v.state; $('state').className = 'state ' + v.state;
  $('round').textContent = v.round;
  $('scheme').textContent = v.scheme === 'plaintext' ? 'plaintext (NOT encrypted)' : v.scheme + ' (encrypted)';
  $('srv-note').textContent = v.note;
  keyMode(v.key_mode);
  plainScheme = !!v.server_can_read_dual_values;
  $('tab-tagline').textContent = plainScheme
    ? 'Held by the participant\'s own tab. But this federation is not encrypted: the dual values, inner products and norms below DO reach the server, readable.'
    : 'Held only by the participant\'s own tab. None of it travels to the server in a form it can read.';
  $('plain-warning').hidden = !v.server_can_read_dual_values;
  $('insecure-banner').hidden = !v.server_can_read_dual_values;
  $('plain-warning').textContent = v.server_can_read_dual_values
    ? 'This federation runs WITHOUT encryption (--plaintext): the server CAN read the dual values below. Use it only for comparisons.' : '';

  const tot = $('totals');
  tot.textContent = '';
  tot.appendChild(H.el('h3', plainScheme ? 'Dual state of the whole federation (NOT sealed)' : 'Sealed state of the whole federation'));
  tot.appendChild(H.el('p', v.sealed_as_of_round == null
    ? 'Nothing sealed held yet: training has not reached its first round boundary.'
    : 'As saved at the boundary of round ' + v.sealed_as_of_round + '; ' + v.slots_per_ciphertext + ' values per ciphertext.', {class: 'muted'}));
  tot.appendChild(sealedLine(v.dual, 'dual values a'));
  tot.appendChild(sealedLine(v.norms, 'squared row norms'));

  const w = $('w');
  w.textContent = '';
  if (v.w) {
    w.appendChild(plainBlock(v.w, v.num_features, 'w', true));
    if (H.isImage(v.num_features)) w.appendChild(H.el('p', 'blue negative, white zero, red positive', {class: 'muted'}));
  } else w.appendChild(H.el('p', 'No model yet: training has not started.', {class: 'muted'}));

  const parts = $('parts');
  parts.textContent = '';
  if (!v.participants.length) parts.appendChild(H.el('p', 'Nobody has joined yet.', {class: 'muted'}));
  for (const p of v.participants) {
    const mine = you && p.name === you;
    // One closed item per participant (this tab's own open): a page of
    // every participant's numbers was too long to read on a phone.
    const it = H.el('details', null, {class: 'item' + (mine ? ' you' : ''), 'data-name': p.name});
    it.open = opened.has(p.name) ? opened.get(p.name) : !!mine;
    it.addEventListener('toggle', () => opened.set(p.name, it.open));
    const h = H.el('summary', p.name + (mine ? ' (you)' : ''));
    h.appendChild(document.createTextNode(' '));
    h.appendChild(H.el('span', p.state, {class: 'state ' + p.state}));
    h.appendChild(H.el('span', ' · ' + p.samples + ' samples (as pseudonyms), ' + p.features + ' features', {class: 'muted'}));
    it.appendChild(h);
    it.appendChild(sealedLine(p.dual, 'its dual values'));
    it.appendChild(sealedLine(p.norms, 'its squared norms'));
    if (p.round_aggregates) it.appendChild(sealedLine(p.round_aggregates, 'per round: direction and inner products'));
    if (p.hat_w) it.appendChild(plainBlock(p.hat_w, v.num_features, 'its primal contribution (its share of the model)'));
    if (p.change) {
      // the HyFDCA paper's open leak: with a small H this is a few of its rows
      const c = plainBlock(p.change, v.num_features, 'the last change of its primal contribution it sent');
      c.classList.add('change');
      c.appendChild(H.el('p', p.change.what, {class: 'muted'}));
      it.appendChild(c);
    }
    if (p.primal_sealed) {
      it.appendChild(H.el('p', 'Its primal contribution and its changes: sealed (--seal-primal); the server holds only their sum over participants, the model.', {class: 'sealed-primal'}));
    }
    parts.appendChild(it);
  }
  const also = $('also');
  also.textContent = '';
  for (const a of v.also_plaintext || []) also.appendChild(H.el('li', a));
  $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
}

// opened: the participants' items the user opened or closed, kept across
// the refreshes that redraw them.
const opened = new Map();
let busy = false, fedRound = 0;
async function refresh() {
  if (busy || document.hidden) return;
  busy = true;
  try {
    const v = await H.getJSON(api + '/server-view', readToken());
    $('error').hidden = true;
    render(v);
    fedRound = v.round;
    done = ['finished', 'stopped', 'broken'].includes(v.state);
  } catch (e) {
    $('error').hidden = false;
    $('error').textContent = e.status === 404 ? 'No federation "' + id + '" on this server.' : 'Cannot read the server view: ' + H.refusal(e, NEED);
  }
  busy = false;
}
let done = false;
refresh();
// every 3 s while training, every 15 s once it is over
(function loop() { setTimeout(() => { refresh().finally(loop); }, done ? 15000 : 3000); })();
document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); });

// ---- the curious server's attack on this tab's rows (hyfed serve --curious) ------
// The tab's session token (token() above) is what the server asks before it
// hands out a participant's reconstruction.

// dense puts a tab row (non-zeros on global features) on the columns of the
// reconstruction.
// ownRows are the tab's rows to compare with the server's reconstruction:
// an own file's rows as the federation trains them once the preparation
// gave them (the join page keeps them; the server reconstructs these
// values), else the rows the tab read.
function ownRows() {
  let p = null;
  try { p = JSON.parse(fromTab('hyfed-prepared') || 'null'); } catch (e) { p = null; }
  if (p && p.fed === id && Array.isArray(p.rows) && p.rows.length) return p.rows;
  return preview.rows || [];
}

function dense(row, features) {
  const at = new Map();
  (row.features || []).forEach((f, i) => at.set(f, row.values[i]));
  return features.map((f) => at.get(f) || 0);
}

// attackError is ||X_hat - X||_F / ||X||_F over the training rows both
// sides have: what the attack got right of this tab's rows. Rows the
// attack recovered nothing of count as zeros (error 1).
function attackError(rec) {
  let diff = 0, norm = 0, rows = 0, worst = null;
  const mine = new Map(ownRows().map((r, i) => [r.index !== undefined ? r.index : i, r]));
  for (const r of rec.rows) {
    const own = mine.get(r.index);
    const heldout = own && own.heldout !== undefined ? own.heldout : !r.training;
    if (!own || heldout || !rec.features) continue;
    const x = dense(own, rec.features);
    let rd = 0, rn = 0;
    x.forEach((v, j) => {
      const d = (r.values ? r.values[j] : 0) - v;
      rd += d * d; rn += v * v;
    });
    diff += rd; norm += rn; rows++;
    // the row the attack got least right, by its share of the error
    if (worst === null || rd > worst.diff) worst = {index: r.index, diff: rd, err: rn > 0 ? Math.sqrt(rd / rn) : null};
  }
  return {err: norm > 0 ? Math.sqrt(diff / norm) : null, rows, worst: worst && diff > 0 ? Object.assign(worst, {share: worst.diff / diff}) : null};
}

function showPairs(rec, nf) {
  const box = $('attack-pairs');
  box.textContent = '';
  const mine = new Map(ownRows().map((r, i) => [r.index !== undefined ? r.index : i, r]));
  const shown = rec.rows.filter((r) => mine.has(r.index)).slice(0, H.isImage(nf) ? 16 : 8);
  if (H.isImage(nf)) {
    for (const r of shown) {
      const own = mine.get(r.index);
      const fig = H.el('figure', null, {class: 'pair', 'data-index': r.index});
      const a = H.el('canvas', null, {class: 'px small', role: 'img', 'aria-label': 'your row ' + r.index});
      const cols = rec.features || own.features || [];
      H.drawPixels(a, dense(own, cols), cols); // on the same pixels as the server's
      const b = H.el('canvas', null, {class: 'px small', role: 'img', 'aria-label': "the server's reconstruction of row " + r.index});
      H.drawPixels(b, r.values || cols.map(() => 0), cols);
      fig.append(a, b);
      fig.appendChild(H.el('figcaption', 'row ' + r.index + (r.training ? '' : ' (held out)')));
      box.appendChild(fig);
    }
    box.appendChild(H.el('p', 'Left: yours; right: the server\'s. Pale blue: pixels your block does not hold. A white square on the right: the server recovered nothing.', {class: 'muted'}));
    return;
  }
  const t = H.el('table');
  const hr = H.el('tr');
  for (const h of ['row', 'yours (first values)', "the server's reconstruction"]) hr.appendChild(H.el('th', h, {scope: 'col'}));
  t.appendChild(H.el('thead')).appendChild(hr);
  const tb = t.appendChild(H.el('tbody'));
  for (const r of shown) {
    const x = dense(mine.get(r.index), rec.features || []);
    const tr = H.el('tr', null, {'data-index': r.index});
    tr.appendChild(H.el('td', r.index + (r.training ? '' : ' (held out)')));
    tr.appendChild(H.el('td', x.slice(0, 6).map((v) => H.num(v, 3)).join('  '), {class: 'nums'}));
    tr.appendChild(H.el('td', r.values ? r.values.slice(0, 6).map((v) => H.num(v, 3)).join('  ') : 'nothing recovered', {class: 'nums'}));
    tb.appendChild(tr);
  }
  const div = H.el('div', null, {class: 'scroll'});
  div.appendChild(t);
  box.appendChild(div);
}

let attackRound = -1, attackOn = null;
async function refreshAttack() {
  if (document.hidden) return;
  if (attackOn === null) {
    try { attackOn = !!(await H.getJSON(api, readToken())).curious; } catch (e) {
      // No federation, or no token at all: nothing to wait for (the server
      // view's error says why). A refused token may yet be replaced by the
      // session token the join page stores once it has joined.
      if (e.status === 404 || !readToken()) attackOn = false;
      return;
    }
  }
  if (!attackOn) return;
  $('attack').hidden = false;
  const tok = token();
  if (!tok || !preview || !Array.isArray(preview.rows) || !preview.rows.length) {
    $('attack-note').textContent = 'This tab is not a participant of this federation (or holds none of its rows): open this page from the ' +
      'join page, after joining, to compare your rows with what the server makes of them. The dashboard shows how far the attack has come for everyone.';
    return;
  }
  let rec;
  try {
    rec = await H.getJSON(api + '/attack/rows?from=0&count=' + Math.min(64, preview.rows.length), tok);
  } catch (e) {
    $('attack-note').textContent = 'The server does not hand out the reconstruction: ' + H.refusal(e, NEED);
    return;
  }
  $('attack-facts').hidden = false;
  const {err, rows, worst} = attackError(rec);
  const nothing = rec.equations === 0;
  const e = $('attack-error');
  e.textContent = err === null ? '–' : (err >= 0.01 ? err.toFixed(3) : err.toExponential(2));
  e.dataset.error = err === null ? '' : String(err);
  e.dataset.round = rec.round === null ? '' : String(rec.round);
  e.dataset.worst = worst ? 'row ' + worst.index + ' (error ' + H.num(worst.err, 2) + ', ' + Math.round(100 * worst.share) + '% of the total)' : '';
  e.className = 'big ' + (err !== null && err < 0.1 ? 'bad' : 'good');
  $('attack-over').textContent = rows + ' of your training rows';
  $('attack-status').textContent = rec.status;
  $('attack-rank').textContent = rec.features ? rec.rank + ' of ' + rec.features.length + ' features' : '–';
  $('attack-round').textContent = rec.round === null ? '–' : rec.round;
  $('attack').classList.toggle('leaked', !nothing);
  $('attack-note').textContent = nothing && rec.unreadable > 0
    ? 'The attack runs on ciphertext only: ' + rec.unreadable + ' sealed vectors, nothing readable. Its best guess of your rows is zeros, error 1.'
    : nothing ? 'No inner products yet.'
      : 'The server read ' + rec.equations + ' of your inner-product vectors in plaintext. Error ' + (err === null ? '–' : H.num(err, 2)) +
        ': 0 is your rows exactly, 1 is knowing nothing.';
  showPairs(rec, preview.num_features || 0);
  attackRound = rec.round === null ? -1 : rec.round;
}
// every 3 s until the reconstruction has caught up with the finished federation
(function attackLoop() {
  refreshAttack().finally(() => setTimeout(attackLoop, done && attackRound >= fedRound ? 15000 : 3000));
})();
