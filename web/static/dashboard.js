// dashboard.html: a federation's status, participants, charts and model,
// live from its event stream. A file, not an inline script, for the CSP.
'use strict';
const H = window.hyfed, $ = H.$;
const id = decodeURIComponent(location.pathname.split('/')[2] || '');
const api = '/api/federations/' + encodeURIComponent(id);
// The token is in the fragment: #admin=<admin token> (the organizer's link:
// the actions show) or #viewer=<viewer token> (read only).
const frag = H.fragment();
const admin = frag.admin || '';
const token = admin || frag.viewer || '';
const tokenHash = admin ? '#admin=' + encodeURIComponent(admin) : frag.viewer ? '#viewer=' + encodeURIComponent(frag.viewer) : '';
const NEED = 'This dashboard needs its whole link: /federations/' + id + '#viewer=… (the "dashboard:" line hyfed create prints, ' +
  'or the viewer link the create page shows) or the organizer\'s #admin=… link.';
$('privacy-link').href = $('privacy-nav').href = '/federations/' + encodeURIComponent(id) + '/privacy' + tokenHash;
$('join-id').textContent = id;
$('access').textContent = admin ? 'organizer link' : token ? 'read-only link' : 'no token in the link';
$('admin-box').hidden = !admin;
// The viewer link to share: the create page's admin link carries the
// viewer token too (#admin=…&viewer=…); the server keeps only hashes of
// tokens, so without it the page says where the link is.
if (admin) {
  const viewerURL = frag.viewer ? location.origin + '/federations/' + encodeURIComponent(id) + '#viewer=' + encodeURIComponent(frag.viewer) : '';
  $('viewer-box').hidden = !viewerURL;
  $('viewer-where').hidden = !!viewerURL;
  $('viewer-url').value = viewerURL;
  $('viewer-copy').addEventListener('click', async () => {
    let ok = false;
    try { if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(viewerURL); ok = true; } } catch (e) { ok = false; }
    if (!ok) { $('viewer-url').focus(); $('viewer-url').select(); try { ok = document.execCommand('copy'); } catch (e) { ok = false; } }
    $('viewer-copied').textContent = ok ? 'Copied.' : 'Select the link and copy it by hand.';
  });
}

// showError puts a failed call on the page: a refused token says which link
// is needed, a missing federation says so.
function showError(e) {
  $('error').hidden = false;
  $('error').textContent = e.status === 404 ? 'No federation "' + id + '" on this server (' + e.message + ').' : H.refusal(e, NEED);
}
if (!token) {
  $('error').hidden = false;
  $('error').textContent = 'This link carries no token, so the server shows nothing. ' + NEED;
}

// The model's downloads, with this page's token.
const downloads = H.modelDownloads(api, () => [token]);

let status = null;
let hist = [];          // every round's metrics, in order
let numFeatures = 0;

// ---- status and participants ----------------------------------------------
function showParts(list) {
  const tb = $('parts');
  tb.textContent = '';
  for (const p of list) {
    const tr = document.createElement('tr');
    tr.appendChild(H.el('td', p.name));
    const st = H.el('td'); st.appendChild(H.el('span', p.state, {class: 'state ' + p.state}));
    if (p.reason) st.appendChild(H.el('div', p.reason, {class: 'muted reason'}));
    tr.appendChild(st);
    tr.appendChild(H.el('td', p.samples));
    tr.appendChild(H.el('td', p.features));
    tr.appendChild(H.el('td', p.active ? 'yes' : ''));
    tb.appendChild(tr);
  }
  if (!list.length) tb.appendChild(H.el('tr')).appendChild(H.el('td', 'nobody yet', {colspan: 5, class: 'muted'}));
}

function setState(s) {
  const e = $('state');
  e.textContent = s; e.className = 'state ' + s;
  const fill = $('fill');
  if (fill) fill.disabled = s !== 'waiting';
  showActions(s);
}

function setRound(r) {
  $('round').textContent = r;
  const T = status ? status.config.rounds : 0;
  // A federation may finish before its last round (its tolerance reached).
  const pct = status && status.state === 'finished' ? 100 : T > 0 ? Math.min(100, 100 * r / T) : 0;
  $('progress-fill').style.width = pct + '%';
  $('progress').setAttribute('aria-valuenow', pct.toFixed(0));
}

function applyStatus(s) {
  status = s;
  $('title').textContent = s.name || s.id;
  $('insecure-banner').hidden = !s.insecure;
  document.title = 'hyfed: ' + (s.name || s.id);
  $('rounds').textContent = s.config.rounds;
  $('phase').textContent = s.phase || '–';
  $('scheme').textContent = s.config.scheme === 'plaintext' ? 'plaintext (NOT encrypted)' : s.config.scheme;
  setRound(s.round);
  showPeople(s);
  if (s.config.pstar) $('h-loss').textContent = 'Relative loss: how far the objective is above its optimum, as a share of the optimum, log scale (the optimum ' + H.num(s.config.pstar, 8) + ' was given by the organizer; (P−P*)/P*)';
  else if (primalOnly()) $('h-loss').textContent = 'Objective, log scale (' + s.config.algo + ' has no dual, so no gap; an organizer who gives the optimum gets the relative loss)';
  if (s.config.num_features) numFeatures = s.config.num_features;
  $('schema-box').hidden = !s.config.schema;
  if (s.config.schema) H.fillKV($('schema-kv'), H.schemaFacts(s.config.schema).pairs);
}

// showPeople shows what participant and state events change.
function showPeople(s) {
  showParts(s.participants);
  const reg = s.participants.filter((p) => p.state !== 'left-before-start').length;
  $('parts-count').textContent = s.state === 'waiting'
    ? '(' + reg + ' registered, ' + s.config.min_participants + ' to start)'
    : '(' + reg + ' in the federation)';
  setState(s.state);
  $('fill-box').hidden = !(s.demo && admin); // filling seats is the organizer's
  $('error').hidden = !s.error;
  $('error').textContent = s.error ? 'Error: ' + s.error : '';
  H.fedNotes($('fed-notes'), s);
  showHeldout(s);
}

// showHeldout: a federation that holds no sample out has no held-out
// accuracy, so the page shows none (its accuracy is the training samples').
let heldKnown = null;
function showHeldout(s) {
  const held = !H.noHeldout(s);
  $('held-col').hidden = !held;
  $('h-acc').textContent = held ? 'Accuracy: training and held-out samples' : 'Accuracy on the training samples (this federation holds no samples out)';
  if (heldKnown !== null && heldKnown !== held && charts.acc) { charts.acc.destroy(); delete charts.acc; scheduleDraw(); }
  heldKnown = held;
}
function hasHeldout() { return !H.noHeldout(status); }

let statusTimer = null;
function reloadStatus() {
  if (statusTimer) return;
  statusTimer = setTimeout(() => {
    statusTimer = null;
    H.getJSON(api, token).then((s) => { status = s; showPeople(s); downloads.show(s); }).catch(() => {});
  }, 150);
}

// ---- fill the free seats (demo federations) ---------------------------------
$('fill').addEventListener('click', async () => {
  const out = $('fill-result');
  $('fill').disabled = true;
  out.className = ''; out.textContent = 'asking the server…';
  try {
    const body = await H.postJSON(api + '/fill', {}, admin);
    out.className = 'okbox';
    out.textContent = body && typeof body.started === 'number'
      ? 'Started ' + body.started + ' simulated participant' + (body.started === 1 ? '' : 's') + '.'
      : 'Done: ' + JSON.stringify(body);
  } catch (e) {
    out.className = 'alert';
    out.textContent = e.status ? H.refusal(e, NEED) + (e.code ? ' (' + e.code + ')' : '') : 'The request failed: ' + e.message;
  }
  $('fill').disabled = !status || status.state !== 'waiting';
});

// ---- charts -------------------------------------------------------------------
const PHASES = ['setup', 'refresh', 'margins', 'score', 'step', 'local', 'gram', 'solve', 'direction', 'open', 'trial', 'price', 'apply'];
const COLORS = ['#7f7f7f', '#8c564b', '#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#d62728', '#17becf', '#bcbd22'];
const charts = {};
const HEIGHT = 220;

function widthOf(el) { return Math.max(200, el.clientWidth); }

function makeChart(key, el, opts, data) {
  if (charts[key]) charts[key].destroy();
  el.textContent = '';
  const u = new uPlot(Object.assign({width: widthOf(el), height: HEIGHT, cursor: {drag: {x: true, y: false}}}, opts), data, el);
  charts[key] = u;
  return u;
}

// The charts follow the page's width (a phone turned, a window resized).
let resizing = 0;
window.addEventListener('resize', () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => {
    for (const u of Object.values(charts)) u.setSize({width: widthOf(u.root.parentNode), height: HEIGHT});
  }, 100);
});

let phaseKeys = '';
function buildCharts(d) {
  makeChart('loss', $('chart-loss'), {
    // The y range hugs the data (a little room either side), not whole
    // decades: values from 0.25 to 0.35 fill the chart.
    scales: {x: {time: false}, y: {distr: 3, log: 10, range: (u, min, max) => min > 0 && max > 0 ? [min / 1.15, max * 1.15] : [0.1, 1]}},
    series: [{label: 'round'}, {label: status && status.config.pstar ? 'relative loss' : primalOnly() ? 'P(w)' : 'relative gap', stroke: '#c0392b', width: 1.5, spanGaps: true,
      value: (u, v) => v == null ? '–' : H.num(v, 3)}],
    axes: [{label: 'round'}, {size: 55, space: 18,
      // Ticks of our own: uPlot's log axis labels only whole decades,
      // so values near 0.3 got the labels 1e0 and 1e-1 and nothing between.
      splits: (u, i, min, max) => H.logTicks(min, max, u.bbox.height / devicePixelRatio),
      filter: (u, splits) => splits,
      values: (u, vals) => {
        const labels = vals.map(H.tickLabel);
        $('chart-loss').dataset.yticks = labels.join(' ');
        return labels;
      }}],
  }, [d.x, d.gap]);
  buildAccChart(d);
  buildPhaseChart(d);
  makeChart('bytes', $('chart-bytes'), {
    scales: {x: {time: false}},
    series: [{label: 'round'},
      {label: 'to server', stroke: '#2ca02c', width: 1.5, value: (u, v) => H.bytes(v)},
      {label: 'from server', stroke: '#9467bd', width: 1.5, value: (u, v) => H.bytes(v)}],
    axes: [{label: 'round'}, {values: (u, vals) => vals.map((v) => H.bytes(v)), size: 72}],
  }, [d.x, d.bin, d.bout]);
}

// buildAccChart: training accuracy, and held-out accuracy only where the
// federation holds samples out.
function buildAccChart(d) {
  const pct = (u, v) => v == null ? '–' : (100 * v).toFixed(2) + '%';
  const series = [{label: 'round'}];
  if (hasHeldout()) series.push({label: 'held-out', stroke: '#1f77b4', width: 1.5, spanGaps: true, value: pct});
  series.push({label: 'training', stroke: '#ff7f0e', width: 1.5, spanGaps: true, value: pct});
  makeChart('acc', $('chart-acc'), {
    scales: {x: {time: false}}, series,
    axes: [{label: 'round'}, {values: (u, vals) => vals.map((v) => +(100 * v).toFixed(1) + '%'), size: 62}],
  }, accData(d));
}
function accData(d) { return hasHeldout() ? [d.x, d.held, d.train] : [d.x, d.train]; }

function buildPhaseChart(d) {
  phaseKeys = d.phases.join(',');
  const series = [{label: 'round'}];
  const bands = [];
  d.phases.forEach((p, i) => {
    const c = COLORS[i % COLORS.length];
    series.push({label: p, stroke: c, fill: c + '55', width: 1, spanGaps: true, points: {show: false},
      // the legend shows the phase's own seconds, not the stacked sum
      value: (u, v, si, idx) => {
        const r = u._raw && u._raw[si - 1];
        return idx == null || !r || r[idx] == null ? '–' : r[idx].toFixed(3) + ' s';
      }});
    if (i > 0) bands.push({series: [i + 1, i]});
  });
  const u = makeChart('phase', $('chart-phase'), {
    scales: {x: {time: false}},
    series, bands,
    axes: [{label: 'round'}, {values: (u, vals) => vals.map((v) => +v.toPrecision(3) + ' s'), size: 70}],
  }, [d.x].concat(d.stacked));
  u._raw = d.rawPhase;
}

// primalOnly: a baseline (no dual values, no gap) without a known P*:
// the loss chart shows P itself.
function primalOnly() {
  return !!(status && status.config.algo && status.config.algo !== 'hyfdca' && !status.config.pstar);
}

function dataOf() {
  const x = [], gap = [], held = [], train = [], bin = [], bout = [];
  const keys = new Set();
  for (const m of hist) for (const k of Object.keys(m.seconds || {})) keys.add(k);
  const phases = PHASES.filter((p) => keys.has(p)).concat([...keys].filter((k) => !PHASES.includes(k)).sort());
  const rawPhase = phases.map(() => []);
  for (const m of hist) {
    x.push(m.round);
    // The relative loss when the organizer gave P*, else the relative
    // duality gap, an upper bound of it.
    const ps = status && status.config.pstar;
    const g = ps ? (m.primal != null ? (m.primal - ps) / ps : null)
      : primalOnly() ? m.primal
      : (m.primal != null && m.dual != null && m.dual !== 0) ? (m.primal - m.dual) / Math.abs(m.dual) : null;
    gap.push(g != null && g > 0 && isFinite(g) ? g : null);
    held.push(m.heldout_accuracy); train.push(m.train_accuracy);
    bin.push(m.bytes_to_server); bout.push(m.bytes_from_server);
    phases.forEach((p, i) => rawPhase[i].push(m.seconds && m.seconds[p] != null ? m.seconds[p] : null));
  }
  const stacked = [];
  let acc = x.map(() => 0);
  rawPhase.forEach((r) => { acc = acc.map((a, j) => a + (r[j] || 0)); stacked.push(acc.slice()); });
  return {x, gap, held, train, bin, bout, phases, rawPhase, stacked};
}

let drawTimer = null, lastDraw = 0;
function scheduleDraw() {
  if (drawTimer) return;
  drawTimer = setTimeout(() => { drawTimer = null; requestAnimationFrame(draw); }, Math.max(0, 300 - (performance.now() - lastDraw)));
}

function draw() {
  lastDraw = performance.now();
  const d = dataOf();
  if (!charts.loss) buildCharts(d);
  else {
    charts.loss.setData([d.x, d.gap]);
    if (!charts.acc) buildAccChart(d);
    else charts.acc.setData(accData(d));
    if (d.phases.join(',') !== phaseKeys) buildPhaseChart(d);
    else { charts.phase._raw = d.rawPhase; charts.phase.setData([d.x].concat(d.stacked)); }
    charts.bytes.setData([d.x, d.bin, d.bout]);
  }
  $('chart-loss').setAttribute('data-points', String(d.x.length));
  drawRows();
}

function drawRows() {
  const tb = $('rows');
  tb.textContent = '';
  for (const m of hist.slice(-25).reverse()) {
    const tr = document.createElement('tr');
    const cells = [m.round, H.num(m.primal, 8), H.num(m.dual, 8), H.num(m.gap, 3), H.num(m.train_accuracy, 4),
      H.num(m.heldout_accuracy, 4), m.active, H.bytes(m.bytes_to_server), H.bytes(m.bytes_from_server)];
    if (!hasHeldout()) cells.splice(5, 1);
    for (const v of cells) tr.appendChild(H.el('td', v));
    tb.appendChild(tr);
  }
}

// charts follow their panels' width (laptop, phone, rotation)
const ro = new ResizeObserver(() => {
  for (const [k, u] of Object.entries(charts)) {
    const el = $('chart-' + k);
    if (el && Math.abs(widthOf(el) - u.width) > 2) u.setSize({width: widthOf(el), height: HEIGHT});
  }
});
for (const k of ['loss', 'acc', 'phase', 'bytes']) ro.observe($('chart-' + k));

function addRound(m) {
  if (!m) return;
  const last = hist.length ? hist[hist.length - 1].round : -1;
  if (m.round > last) hist.push(m);
  else {
    const i = hist.findIndex((h) => h.round === m.round);
    if (i >= 0) hist[i] = m;
  }
  scheduleDraw();
}

// ---- the model w as an image ---------------------------------------------------
let modelTimer = null, lastModel = 0, modelBusy = false;
let modelAgain = false;
function scheduleModel() {
  if (modelBusy) { modelAgain = true; return; } // fetch again when this one is back (the last round must show)
  if (modelTimer) return;
  modelTimer = setTimeout(loadModel, Math.max(0, 1500 - (performance.now() - lastModel)));
}
// modelWhich says which iterate the federation hands out: the round with the
// lowest primal so far (the last round's can be worse while the primal
// swings), or the current one before any round had a primal.
function modelWhich(m) {
  if (!m.best) return 'round ' + m.model_round + ' (current)';
  let t = 'the best model so far: round ' + m.model_round;
  const acc = H.accuracyText(status, m.model_round, m.heldout_accuracy);
  if (acc) t += ', ' + acc;
  if (m.model_round !== m.round) t += '; the last round, ' + m.round + ', was worse';
  return t;
}
async function loadModel() {
  modelTimer = null; modelBusy = true; lastModel = performance.now();
  try {
    const m = await H.getJSON(api + '/model', token);
    numFeatures = m.num_features || numFeatures;
    const image = H.isImage(numFeatures);
    $('weights-wrap').hidden = !(image && m.w);
    $('weights-none').hidden = image && !!m.w;
    if (!image && numFeatures) {
      let t = 'The model has ' + numFeatures + ' features: not image data, so no picture.';
      if (m.w) {
        const idx = m.w.map((v, i) => i).filter((i) => m.w[i] != null);
        idx.sort((a, b) => Math.abs(m.w[b]) - Math.abs(m.w[a]));
        // A schema names its weights; other federations number them.
        const names = status && status.config.schema ? H.schemaColumns(status.config.schema) : [];
        t += ' Largest weights (' + modelWhich(m) + '): ' + idx.slice(0, 8).map((i) => (names[i] || 'feature ' + i) + ': ' + H.num(m.w[i], 4)).join(', ') + '.';
      }
      $('weights-none').textContent = t;
    }
    if (image && m.w) {
      const scale = H.drawWeights($('weights'), m.w);
      let info = modelWhich(m) + ', colour scale ±' + H.num(scale, 3);
      if (m.w.length === 785) info += ', bias weight ' + H.num(m.w[784], 3);
      $('weights-info').textContent = info;
    }
  } catch (e) { /* next round tries again */ }
  modelBusy = false;
  if (modelAgain) { modelAgain = false; scheduleModel(); }
}

// ---- the curious server (hyfed serve --curious): attack progress, no data ----
let attackRound = -1;
// attackWhen is the last column: a round only where there was something to
// solve (with nothing readable, "reconstructed at round 100" next to
// "nothing readable" contradicted itself).
function attackWhen(p) {
  if (p.equations === 0) return 'nothing to solve';
  return p.reconstructed_round === null ? '–' : 'round ' + p.reconstructed_round;
}
function showAttack(v) {
  $('attack-box').hidden = false;
  $('attack-note').textContent = v.note + ' Attack: ' + v.attack + '.';
  const tb = $('attack-rows');
  tb.textContent = '';
  for (const p of v.participants) {
    const tr = H.el('tr', null, {'data-client': p.client, 'data-equations': p.equations, 'data-rank': p.rank,
      'data-features': p.features, 'data-unreadable': p.unreadable, 'data-rows': p.rows_determined, 'data-status': p.status,
      'data-round': p.reconstructed_round === null ? '' : p.reconstructed_round});
    if (p.equations === 0) tr.className = 'attack-none';
    // The key columns first: on a phone the rest scroll within the table's box.
    for (const c of [p.name, p.status, p.rows_determined + ' of ' + p.samples, attackWhen(p), p.rank + ' / ' + p.features,
      p.equations + ' (' + p.rounds + ')', p.unreadable]) tr.appendChild(H.el('td', c));
    tb.appendChild(tr);
  }
  if (!v.participants.length) tb.appendChild(H.el('tr')).appendChild(H.el('td', 'nobody yet', {colspan: 7, class: 'muted'}));
  attackRound = Math.min(...v.participants.map((p) => p.reconstructed_round === null ? -1 : p.reconstructed_round));
}
let attackOff = false;
async function loadAttack() {
  if (attackOff || !status) return;
  if (!status.curious) { attackOff = true; return; }
  try { showAttack(await H.getJSON(api + '/attack', token)); } catch (e) { if (e.status === 404 || e.status === 401 || e.status === 403) attackOff = true; }
}
// every 3 s while training, then until the last reconstruction is in
(function attackLoop() {
  loadAttack().finally(() => {
    const over = status && ['finished', 'stopped', 'broken'].includes(status.state);
    if (!attackOff) setTimeout(attackLoop, over && attackRound >= status.round ? 15000 : 3000);
  });
})();

// ---- the organizer's actions (#admin= only) --------------------------------------
const TERMINAL = ['finished', 'stopped', 'broken'];
let deleted = false;
function showActions(state) {
  if (!admin) return;
  const off = deleted || !state;
  $('act-start').disabled = off || state !== 'waiting';
  $('act-pause').disabled = off || !['running', 'resuming'].includes(state);
  $('act-resume').disabled = off || !['paused', 'pausing'].includes(state);
  $('act-stop').disabled = off || TERMINAL.includes(state);
  $('act-delete').disabled = deleted;
}
function adminResult(ok, text) {
  const out = $('admin-result');
  out.className = ok ? 'okbox' : 'alert';
  out.textContent = text;
}
for (const action of ['start', 'pause', 'resume', 'stop']) {
  $('act-' + action).addEventListener('click', async () => {
    $('act-' + action).disabled = true;
    try {
      await H.postJSON(api + '/' + action, {}, admin);
      adminResult(true, 'Done: ' + action + '.');
    } catch (e) {
      adminResult(false, action + ': ' + H.refusal(e, NEED) + (e.code && e.status !== 401 ? ' (' + e.code + ')' : ''));
    }
    reloadStatus();
  });
}
// Deleting asks again on the page (not window.confirm: a dialog blocks the
// page, and the question should say what goes).
$('act-delete').addEventListener('click', () => { $('delete-confirm').hidden = false; $('delete-no').focus(); });
$('delete-no').addEventListener('click', () => { $('delete-confirm').hidden = true; });
$('delete-yes').addEventListener('click', async () => {
  $('delete-confirm').hidden = true;
  try {
    await H.deleteJSON(api, admin);
    deleted = true;
    if (stream) stream.close();
    $('conn').textContent = ''; // the server ended the stream as it deleted: no reconnecting
    $('conn').dataset.state = 'closed';
    adminResult(true, 'Federation ' + id + ' is deleted, with its checkpoints. Its links no longer work.');
    setState('deleted');
  } catch (e) {
    adminResult(false, 'delete: ' + H.refusal(e, NEED));
  }
  showActions(status && status.state);
});

// ---- live updates ------------------------------------------------------------
// The event stream: the whole status first, then changes. fetch() with the
// bearer header (H.events), since EventSource cannot send one.
const stream = token ? H.events(api + '/events', token, (type, data) => {
  if (type === 'status') {
    const s = JSON.parse(data);
    applyStatus(s);
    downloads.show(s);
    hist = s.history.slice();
    if (!s.error) $('error').hidden = true;
    scheduleDraw();
    scheduleModel();
    return;
  }
  const ev = JSON.parse(data);
  if (ev.type === 'round') { addRound(ev.metrics); setRound(ev.round); scheduleModel(); downloads.refresh(); }
  if (ev.type === 'phase') { $('phase').textContent = ev.phase; setRound(ev.round); }
  if (ev.type === 'state') { setState(ev.state); if (ev.state !== 'running') $('phase').textContent = '–'; reloadStatus(); scheduleModel(); downloads.refresh(); }
  if (ev.type === 'participant') reloadStatus();
}, (state, d) => {
  const conn = $('conn');
  conn.dataset.state = state;
  if (state === 'open' || state === 'connecting') conn.textContent = '';
  if (state === 'reconnecting') conn.textContent = 'reconnecting in ' + (d.wait_ms / 1000).toFixed(1) + ' s… (' + d.error.message + ')';
  if (state === 'closed') {
    conn.textContent = deleted ? '' : 'live updates stopped';
    if (!deleted) showError(d.error);
  }
}) : null;
