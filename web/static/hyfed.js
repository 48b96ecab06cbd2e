// hyfed.js: small helpers shared by the pages (no framework, no build).
// SHA-256 and HMAC-SHA-256 are here in plain JavaScript because
// crypto.subtle exists only on secure origins (https or localhost), and a
// federation server may well be reached over plain http on a LAN.
// server/views_test.go runs this file under node and checks it against Go.
(function (root) {
  'use strict';

  // ---- SHA-256 (FIPS 180-4) ------------------------------------------------
  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);

  const rotr = (x, n) => (x >>> n) | (x << (32 - n));

  // sha256 returns the 32-byte digest of a Uint8Array.
  function sha256(msg) {
    const len = msg.length;
    const total = ((len + 9 + 63) >> 6) << 6;
    const buf = new Uint8Array(total);
    buf.set(msg);
    buf[len] = 0x80;
    const dv = new DataView(buf.buffer);
    dv.setUint32(total - 8, Math.floor(len / 0x20000000));
    dv.setUint32(total - 4, (len << 3) >>> 0);
    const H = Uint32Array.of(0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19);
    const w = new Uint32Array(64);
    for (let off = 0; off < total; off += 64) {
      for (let i = 0; i < 16; i++) w[i] = dv.getUint32(off + 4 * i);
      for (let i = 16; i < 64; i++) {
        const a = w[i - 15], b = w[i - 2];
        const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
        const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
      }
      let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
      for (let i = 0; i < 64; i++) {
        const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        const ch = (e & f) ^ (~e & g);
        const t1 = (h + S1 + ch + K[i] + w[i]) | 0;
        const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        const maj = (a & b) ^ (a & c) ^ (b & c);
        const t2 = (S0 + maj) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
    }
    const out = new Uint8Array(32);
    const ov = new DataView(out.buffer);
    for (let i = 0; i < 8; i++) ov.setUint32(4 * i, H[i]);
    return out;
  }

  function concat(parts) {
    let n = 0;
    for (const p of parts) n += p.length;
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return out;
  }

  // hmacSha256 is HMAC (RFC 2104) with SHA-256.
  function hmacSha256(key, msg) {
    if (key.length > 64) key = sha256(key);
    const k = new Uint8Array(64);
    k.set(key);
    const ipad = k.map((x) => x ^ 0x36), opad = k.map((x) => x ^ 0x5c);
    return sha256(concat([opad, sha256(concat([ipad, msg]))]));
  }

  const utf8 = (s) => new TextEncoder().encode(s);

  // mac is shared/secret's Secret.mac: HMAC-SHA-256 keyed with the 32
  // secret bytes over the label, then each part as its length (8 bytes,
  // little endian) and its bytes.
  function mac(secretBytes, label, ...parts) {
    const chunks = [utf8(label)];
    for (const p of parts) {
      const n = new Uint8Array(8);
      new DataView(n.buffer).setBigUint64(0, BigInt(p.length), true);
      chunks.push(n, p);
    }
    return hmacSha256(secretBytes, concat(chunks));
  }

  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

  // fingerprint is Secret.Fingerprint: what the server compares joiners'
  // keys against, without learning the secret.
  const fingerprint = (secretBytes) => hex(mac(secretBytes, 'hyfed fingerprint').subarray(0, 16));

  // base64url without padding (Go's base64.RawURLEncoding).
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  function b64url(bytes) {
    let s = '';
    for (let i = 0; i < bytes.length; i += 3) {
      const n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8) | (bytes[i + 2] || 0);
      const left = bytes.length - i;
      s += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
      if (left > 1) s += B64[(n >> 6) & 63];
      if (left > 2) s += B64[n & 63];
    }
    return s;
  }
  function fromB64url(s) {
    if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) throw new Error('not URL-safe base64');
    const out = [];
    let acc = 0, bits = 0;
    for (const ch of s) {
      acc = (acc << 6) | B64.indexOf(ch);
      bits += 6;
      if (bits >= 8) { bits -= 8; out.push((acc >> bits) & 255); }
    }
    return Uint8Array.from(out);
  }

  // newSecret returns 32 random bytes from the browser's CSPRNG.
  function newSecret() {
    const b = new Uint8Array(32);
    root.crypto.getRandomValues(b);
    return b;
  }

  // ---- pages ---------------------------------------------------------------
  const $ = (id) => document.getElementById(id);

  // el makes an element with text content (never HTML) and attributes.
  function el(tag, text, attrs) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  }

  function num(v, d) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    return Number(v).toPrecision(d || 4);
  }

  // pct writes a relative bound as a percentage with two significant digits.
  function pct(v) {
    return +(100 * v).toPrecision(2) + ' %';
  }

  function bytes(n) {
    if (n === null || n === undefined) return '–';
    const u = ['B', 'kB', 'MB', 'GB'];
    let i = 0;
    while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : n) + ' ' + u[i];
  }

  // ---- tokens and the API -------------------------------------------------
  // Tokens travel in a page's fragment (#viewer=..., #invite=...&secret=...),
  // which browsers never send to a server, and reach the API only as an
  // Authorization header: never in a query string, which proxies and logs
  // keep.

  // fragment parses "#k=v&k2=v2" (location.hash by default) into an object.
  // Not URLSearchParams: it would turn a '+' into a space. A part without
  // '=' (the secret of an old join link, "#<secret>") is under the key ''.
  function fragment(hash) {
    const s = (hash === undefined ? root.location.hash : hash).replace(/^#/, '');
    const out = {};
    const dec = (x) => { try { return decodeURIComponent(x); } catch (e) { return x; } };
    for (const part of s.split('&')) {
      if (!part) continue;
      const i = part.indexOf('=');
      const k = i < 0 ? '' : dec(part.slice(0, i)), v = dec(i < 0 ? part : part.slice(i + 1));
      if (!(k in out)) out[k] = v;
    }
    return out;
  }

  // errorOf turns a refused API call into an Error carrying the HTTP status
  // and the API's code ({error, code}).
  async function errorOf(r) {
    let body = null;
    try { body = await r.json(); } catch (e) { /* not JSON */ }
    const err = new Error((body && body.error) || ('HTTP ' + r.status + (r.statusText ? ' ' + r.statusText : '')));
    err.status = r.status;
    err.code = body && body.code;
    return err;
  }

  // request calls the API with the token as a bearer; opts: method, json
  // (a body to send as JSON), signal. It returns the Response, or throws
  // errorOf's Error.
  async function request(url, token, opts) {
    opts = opts || {};
    const headers = {};
    if (token) headers.Authorization = 'Bearer ' + token;
    const init = {method: opts.method || 'GET', headers, cache: 'no-store'};
    if (opts.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(opts.json);
    }
    if (opts.signal) init.signal = opts.signal;
    const r = await fetch(url, init);
    if (!r.ok) throw await errorOf(r);
    return r;
  }

  async function jsonOf(r) {
    const t = await r.text();
    return t ? JSON.parse(t) : null;
  }

  // getJSON, postJSON and deleteJSON call the API with a bearer token and
  // return its JSON answer (null when empty).
  const getJSON = async (url, token) => jsonOf(await request(url, token));
  const postJSON = async (url, body, token) => jsonOf(await request(url, token, {method: 'POST', json: body === undefined ? {} : body}));
  const deleteJSON = async (url, token) => jsonOf(await request(url, token, {method: 'DELETE'}));

  // refusal says what a refused call needs, for the page: the server's own
  // message with, for a refused token (401, 403), which link or token the
  // page needs (need).
  function refusal(err, need) {
    if (err && (err.status === 401 || err.status === 403)) {
      return 'The server refused this page\'s token (' + (err.message || 'HTTP ' + err.status) + '). ' + need;
    }
    return err && err.message ? err.message : String(err);
  }

  // events follows a stream of server-sent events as EventSource does
  // ("event:", "data:", "id:" and "retry:" lines, a blank line dispatches,
  // a lost stream is resumed with Last-Event-ID), but over fetch(), because
  // EventSource cannot send the bearer header. on(type, data) gets each event
  // ("message" when it has no "event:" line). onState(state, detail) hears
  // "connecting", "open", "reconnecting" ({wait_ms, error}) and "closed"
  // ({error}: a refusal, such as 401 or 404, that retrying cannot mend).
  // It returns {close()}.
  function events(url, token, on, onState) {
    const minWait = 1000, maxWait = 30000, steady = 10000;
    let closed = false, ctl = null, timer = null, lastId = '', retry = 0, wait = minWait;
    const report = (state, detail) => {
      if (onState) try { onState(state, detail || {}); } catch (e) { rethrow(e); }
    };
    const rethrow = (e) => { if (root.reportError) root.reportError(e); else setTimeout(() => { throw e; }); };

    async function connect(first) {
      timer = null;
      if (closed) return;
      if (first) report('connecting');
      ctl = new AbortController();
      const headers = {Accept: 'text/event-stream'};
      if (token) headers.Authorization = 'Bearer ' + token;
      if (lastId) headers['Last-Event-ID'] = lastId;
      let r;
      try {
        r = await fetch(url, {headers, cache: 'no-store', signal: ctl.signal});
      } catch (e) {
        return again(e);
      }
      if (!r.ok) {
        const err = await errorOf(r);
        // The server's trouble may pass; a refusal will not.
        if (r.status >= 500 || r.status === 408 || r.status === 429) return again(err);
        return end(err);
      }
      const type = r.headers.get('Content-Type') || '';
      if (!type.startsWith('text/event-stream')) return end(new Error('not an event stream (' + (type || 'no type') + ')'));
      const opened = Date.now();
      report('open');
      let err = null;
      try {
        await read(r.body);
      } catch (e) {
        err = e;
      }
      if (closed) return;
      // A stream that lasted resets the backoff; one the server ends at
      // once each time (a federation it dropped, say) backs off.
      if (Date.now() - opened >= steady) wait = minWait;
      again(err || new Error('the server ended the stream'));
    }

    function again(err) {
      if (closed) return;
      const ms = retry || Math.round(wait * (0.8 + 0.4 * Math.random()));
      wait = Math.min(maxWait, wait * 2);
      report('reconnecting', {wait_ms: ms, error: err});
      timer = setTimeout(connect, ms);
    }

    function end(err) {
      closed = true;
      report('closed', {error: err});
    }

    async function read(body) {
      const reader = body.getReader();
      const dec = new TextDecoder();
      let buf = '', from = 0, type = '', data = [];
      const line = (l) => {
        if (l === '') {
          if (data.length) {
            const d = data.join('\n'), t = type || 'message';
            data = []; type = '';
            try { on(t, d, lastId); } catch (e) { rethrow(e); }
          }
          type = '';
          return;
        }
        if (l[0] === ':') return; // a comment (keep-alive)
        const i = l.indexOf(':');
        const field = i < 0 ? l : l.slice(0, i);
        let value = i < 0 ? '' : l.slice(i + 1);
        if (value[0] === ' ') value = value.slice(1);
        if (field === 'event') type = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id' && !value.includes('\0')) lastId = value;
        else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
      };
      for (;;) {
        const {value, done} = await reader.read();
        if (closed) { reader.cancel().catch(() => {}); return; }
        buf += done ? dec.decode() : dec.decode(value, {stream: true});
        // Lines end with \n, \r\n or \r; a \r at the end of the buffer may
        // be half of a \r\n split across chunks.
        for (;;) {
          let i = from;
          while (i < buf.length && buf[i] !== '\n' && buf[i] !== '\r') i++;
          if (i >= buf.length || (buf[i] === '\r' && i === buf.length - 1 && !done)) { from = i; break; }
          line(buf.slice(0, i));
          buf = buf.slice(i + (buf[i] === '\r' && buf[i + 1] === '\n' ? 2 : 1));
          from = 0;
        }
        if (done) return; // an unfinished event is dropped, as EventSource does
      }
    }

    connect(true);
    return {
      close() {
        closed = true;
        if (timer) clearTimeout(timer);
        if (ctl) ctl.abort();
      },
    };
  }

  // isImage: MNIST / Fashion-MNIST, 28x28 pixels plus a bias feature.
  const isImage = (numFeatures) => numFeatures === 784 || numFeatures === 785;

  // drawWeights draws values (on the given global feature indexes, or on
  // 0..n-1) as a 28x28 image in diverging colours: blue negative, white
  // zero, red positive, scaled by the largest magnitude; pixels without a
  // value are grey. It returns the scale.
  function drawWeights(canvas, values, features) {
    const side = 28, n = side * side;
    canvas.width = side; canvas.height = side;
    const ctx = canvas.getContext('2d');
    const img = ctx.createImageData(side, side);
    const d = img.data;
    for (let i = 0; i < n; i++) { d[4 * i] = 221; d[4 * i + 1] = 221; d[4 * i + 2] = 221; d[4 * i + 3] = 255; }
    let scale = 0;
    values.forEach((v, i) => {
      const f = features ? features[i] : i;
      if (f < n && v !== null && isFinite(v)) scale = Math.max(scale, Math.abs(v));
    });
    values.forEach((v, i) => {
      const f = features ? features[i] : i;
      if (f >= n || v === null || !isFinite(v)) return;
      const t = scale > 0 ? Math.max(-1, Math.min(1, v / scale)) : 0;
      // white -> (178, 24, 43) for positive, white -> (33, 102, 172) for negative
      const [r, g, b] = t >= 0 ? [178, 24, 43] : [33, 102, 172];
      const a = Math.abs(t);
      d[4 * f] = Math.round(255 + (r - 255) * a);
      d[4 * f + 1] = Math.round(255 + (g - 255) * a);
      d[4 * f + 2] = Math.round(255 + (b - 255) * a);
    });
    ctx.putImageData(img, 0, 0);
    return scale;
  }

  // drawPixels draws a data row (pixel values in [0, 1] on global feature
  // indexes) as a grey-scale 28x28 image: ink dark, features outside the
  // row pale blue.
  function drawPixels(canvas, values, features) {
    const side = 28, n = side * side;
    canvas.width = side; canvas.height = side;
    const ctx = canvas.getContext('2d');
    const img = ctx.createImageData(side, side);
    const d = img.data;
    for (let i = 0; i < n; i++) { d[4 * i] = 226; d[4 * i + 1] = 234; d[4 * i + 2] = 246; d[4 * i + 3] = 255; }
    values.forEach((v, i) => {
      const f = features ? features[i] : i;
      if (f >= n || v === null || !isFinite(v)) return;
      const g = Math.round(255 * (1 - Math.max(0, Math.min(1, v))));
      d[4 * f] = g; d[4 * f + 1] = g; d[4 * f + 2] = g;
    });
    ctx.putImageData(img, 0, 0);
  }

  // ---- the model: downloads ------------------------------------------------
  // filenameOf reads the file name of a Content-Disposition header
  // (attachment; filename="..." as Go's %q quotes it), or returns fallback.
  function filenameOf(disposition, fallback) {
    const d = disposition || '';
    let m = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(d);
    if (m) { try { return decodeURIComponent(m[1]); } catch (e) { /* the next form */ } }
    m = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(d);
    if (m) return m[1].replace(/\\(.)/g, '$1');
    m = /filename\s*=\s*([^;\s]+)/i.exec(d);
    return m ? m[1] : fallback;
  }

  // download fetches url with the bearer token (a plain link cannot carry
  // the header) and hands the answer to the browser as a file download:
  // a blob behind an <a download> named as the server's Content-Disposition
  // says. It returns the file name, or throws request's Error.
  async function download(url, token, fallback) {
    const r = await request(url, token);
    const name = filenameOf(r.headers.get('Content-Disposition'), fallback || 'download');
    const href = URL.createObjectURL(await r.blob());
    const a = el('a', null, {href, download: name, hidden: ''});
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(href), 60000);
    return name;
  }

  // modelDownloads wires a page's model box: the buttons #dl-model (the
  // LIBLINEAR model file, GET api/model?format=liblinear) and #dl-json (its
  // sidecar, ?format=json), the line #model-state saying which model they
  // give, and #model-result what the last download did. tokens() lists the
  // tokens to try, in order (a refused one passes to the next). show(status)
  // takes a federation status (GET api: state, round, config.rounds and
  // model, the iterate handed out); refresh() fetches one, at most every
  // 2 s. The buttons stay disabled until the status names a model
  // (before training starts the server answers 409 no-model), so the page
  // never asks for one that is not there.
  function modelDownloads(api, tokens) {
    const box = $('model-box'), line = $('model-state'), result = $('model-result');
    const buttons = [[$('dl-model'), 'liblinear'], [$('dl-json'), 'json']];
    let busy = false, timer = null, again = false, last = 0;

    async function withToken(call) {
      const list = tokens().filter((t) => t);
      let err = null;
      for (const t of list) {
        try { return await call(t); } catch (e) {
          err = e;
          if (e.status !== 401 && e.status !== 403) break;
        }
      }
      throw err || new Error('this page has no token for the federation');
    }

    function show(s) {
      const m = s && s.model;
      box.dataset.state = s ? s.state : '';
      box.dataset.round = m ? String(m.round) : '';
      for (const [b] of buttons) b.disabled = !m;
      if (!m) {
        line.textContent = 'No model yet: training has not started. The downloads open with the first round.';
        return;
      }
      const accText = accuracyText(s, m.round, m.heldout_accuracy);
      const acc = accText ? ', ' + accText : '';
      const which = m.best ? 'round ' + m.round + ', the best so far (lowest objective)' + acc
        : 'round ' + m.round + ' (the current one: no round has measured its objective yet)';
      const T = s.config ? s.config.rounds : 0;
      // A run that learned nothing, or went wrong on the way, is not a success.
      const troubled = m.round === 0 || !!(s.warnings && s.warnings.length);
      box.dataset.troubled = troubled ? '1' : '';
      // The duality gap's certificate: how far above the optimum the model can be.
      const certified = typeof m.bound === 'number' ? ' Its objective is certified within ' + pct(m.bound) + ' of the optimum.' : '';
      if (s.state === 'finished') {
        line.textContent = (troubled ? 'Training ended (' + s.round + ' rounds) with warnings (at the top of the page). '
          : s.converged ? 'Training finished after ' + s.round + ' rounds, its tolerance reached. '
          : 'Training finished (' + s.round + ' rounds). ') +
          (m.round === 0 ? 'The model is round 0, its starting point (every weight 0): it has learned nothing.'
            : 'The model is round ' + m.round + (m.best ? ', the best one (lowest objective' + (m.round !== s.round ? '; the last round was worse' : '') + ')' : '') + acc + '.' + certified);
      } else if (s.state === 'stopped' || s.state === 'broken') {
        line.textContent = 'Training ended early (' + s.state + ', round ' + s.round + '). The model is ' + which + '.';
      } else if (s.state === 'paused' || s.state === 'pausing') {
        line.textContent = 'Training is paused (round ' + s.round + (T ? ' of ' + T : '') + '): the download is ' + which +
          ', and will change when training goes on.';
      } else {
        line.textContent = 'Training runs (round ' + s.round + (T ? ' of ' + T : '') + '): the download is ' + which +
          ', and will change while training goes on.';
      }
    }

    async function load() {
      timer = null; busy = true; last = Date.now();
      try { show(await withToken((t) => getJSON(api, t))); } catch (e) { /* the next event tries again */ }
      busy = false;
      if (again) { again = false; refresh(); }
    }
    function refresh() {
      if (busy) { again = true; return; }
      if (timer) return;
      timer = setTimeout(load, Math.max(0, 2000 - (Date.now() - last))); // the status carries the whole history
    }

    for (const [b, format] of buttons) {
      b.addEventListener('click', async () => {
        const label = b.textContent;
        b.disabled = true; b.textContent = 'downloading…';
        result.className = 'muted'; result.textContent = '';
        try {
          const name = await withToken((t) => download(api + '/model?format=' + format, t, format === 'json' ? 'model.json' : 'model'));
          result.textContent = 'Saved as ' + name + ' (your browser\'s downloads).';
          box.dataset['downloaded' + (format === 'json' ? 'Json' : 'Model')] = name;
        } catch (e) {
          result.className = 'alert';
          result.textContent = e.status === 409 ? 'No model yet: training has not started.' : 'The download failed: ' + refusal(e, 'Open the page with its whole link.');
        }
        b.textContent = label; b.disabled = false;
        refresh();
      });
    }
    return {show, refresh};
  }

  // ---- a federation's schema, its notes and its accuracy -------------------
  // schemaColumns names the model's weights in a federation with a schema,
  // as shared/schema's Columns does: a categorical feature one weight per
  // category ("smoker=current"), the intercept last.
  function schemaColumns(s) {
    const out = [];
    for (const f of (s && s.features) || []) {
      if (f.categories && f.categories.length) for (const c of f.categories) out.push(f.name + '=' + c);
      else out.push(f.name);
    }
    if (s && s.intercept !== false) out.push('(intercept)');
    return out;
  }

  const quoted = (xs) => (xs || []).map((x) => '"' + x + '"').join(', ');

  // schemaFacts says what a schema asks of a participant's file, as
  // [term, text] pairs for a definition list, and a one-line summary.
  function schemaFacts(s) {
    const feats = (s.features || []).map((f) => f.categories && f.categories.length ? f.name + ' (one of ' + f.categories.join(', ') + ')' : f.name);
    const label = s.label || {};
    const neg = label.negative && label.negative.length ? quoted(label.negative) + ' = negative' : 'any other value = negative';
    const shared = s.labels === 'shared-with-co-holders';
    const pairs = [
      // A long list (the demo's 784 pixels) shows its ends, not a page of names.
      ['features', feats.length + ': ' + (feats.length > 24 ? feats.slice(0, 12).join(', ') + ', … ' + feats.slice(-2).join(', ') : feats.join(', '))],
      ['record id', 'column "' + s.id + '": the same id in two files is the same sample'],
      ['label', 'column "' + label.column + '": ' + quoted(label.positive) + ' = positive; ' + neg],
      ['labels', shared
        ? 'shared with co-holders: a sample needs its label in one file; the others who hold that sample learn it (sent encrypted)'
        : 'in every file that holds the sample; no label moves between participants'],
      ['intercept', s.intercept === false ? 'no' : 'yes (a constant feature the federation adds itself)'],
      ['missing cells', s.missing === 'mean' ? 'filled with the federation\'s mean of the feature' : 'not accepted: a file with an empty feature cell is refused'],
      ['held out', s.heldout > 0 ? +(100 * s.heldout).toPrecision(3) + ' % of the samples, to measure accuracy on samples training did not see'
        : 'none: accuracy is measured on the training samples'],
    ];
    const line = feats.length + ' feature' + (feats.length === 1 ? '' : 's') + ', label column "' + label.column + '", id column "' + s.id + '"';
    return {pairs, line};
  }

  // fillKV fills a definition list with [term, text] pairs.
  function fillKV(dl, pairs) {
    dl.textContent = '';
    for (const [k, v] of pairs) { dl.appendChild(el('dt', k)); dl.appendChild(el('dd', v)); }
  }

  // leftOutText says why samples were left out, as the label policy has it.
  function leftOutText(s) {
    const n = s.left_out, one = n === 1;
    const policy = s.config && s.config.schema ? s.config.schema.labels || 'every-holder' : '';
    if (policy === 'shared-with-co-holders') return n + (one ? ' sample has' : ' samples have') + ' no label at any holder and ' + (one ? 'is' : 'are') + ' left out.';
    if (policy) return n + (one ? ' sample misses its' : ' samples miss their') + ' label at one of ' + (one ? 'its' : 'their') + ' holders and ' + (one ? 'is' : 'are') + ' left out.';
    return n + (one ? ' sample has' : ' samples have') + ' no label and ' + (one ? 'is' : 'are') + ' left out.';
  }

  // fedNotes shows in box what a "finished" alone would hide: the
  // status's warnings (rounds without every participant, training that
  // stopped moving, a model of round 0), its notices (participants it
  // refused, and why) and the samples left out for want of a label.
  function fedNotes(box, s) {
    box.textContent = '';
    const add = (cls, title, lines) => {
      if (!lines || !lines.length) return;
      const d = el('div', null, {class: cls});
      d.appendChild(el('b', title));
      const ul = d.appendChild(el('ul'));
      for (const l of lines) ul.appendChild(el('li', l));
      box.appendChild(d);
    };
    add('alert fed-warnings', 'Warning: training did not go as it should', s.warnings);
    add('note fed-notices', 'The federation refused or dropped a participant', s.notices);
    if (s.left_out) add('note fed-left-out', 'Left out', [leftOutText(s)]);
    box.hidden = !box.childNodes.length;
  }

  // noHeldout: the federation holds no sample out, so it has no held-out
  // accuracy. Before its participants are aligned the count is not known
  // yet: a schema says what it will be, other federations hold some out.
  function noHeldout(s) {
    if (!s) return false;
    if (s.state === 'waiting') return !!(s.config && s.config.schema) && !(s.config.schema.heldout > 0);
    return s.heldout_samples === 0;
  }

  // accuracyText names the accuracy of a round's model as the status can:
  // held out, or, where the federation holds no sample out
  // (heldout_samples 0), on the training samples; '' when it has none.
  function accuracyText(s, round, held) {
    if (noHeldout(s)) {
      const h = ((s && s.history) || []).find((r) => r.round === round);
      return h && h.train_accuracy != null ? 'training accuracy ' + num(100 * h.train_accuracy, 4) + ' % (no samples are held out)' : '';
    }
    return held != null ? 'held-out accuracy ' + num(100 * held, 4) + ' %' : '';
  }

  // logTicks: tick values for a log axis from min to max (both > 0) drawn
  // over px pixels: 1-2-5 (or finer, or every k-th decade) per decade as the
  // room allows, at least 18 px apart; when the range holds fewer than three
  // of those, evenly spaced round values (a chart whose values sit near 0.3
  // gets 0.25, 0.3, 0.35, not only 1e0).
  function logTicks(min, max, px) {
    if (!(min > 0) || !(max > min) || !isFinite(max)) return [];
    const span = Math.log10(max / min), perDecade = (px || 200) / span, gap = 18;
    const lo = Math.floor(Math.log10(min)), hi = Math.ceil(Math.log10(max));
    let mants = [1], every = Math.max(1, Math.ceil(gap / perDecade));
    if (perDecade * Math.log10(10 / 9) >= gap) mants = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    else if (perDecade * Math.log10(1.5) >= gap) mants = [1, 2, 3, 5];
    else if (perDecade * Math.log10(2) >= gap) mants = [1, 2, 5];
    const out = [];
    for (let e = lo; e <= hi; e++) {
      if ((e - lo) % every) continue;
      for (const m of mants) {
        const v = +(m * Math.pow(10, e)).toPrecision(12);
        if (v >= min * (1 - 1e-12) && v <= max * (1 + 1e-12)) out.push(v);
      }
    }
    if (out.length >= 3) return out;
    // Evenly spaced: a 1-2-5 step giving 3 to 6 ticks.
    const raw = (max - min) / 5, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((st) => (max - min) / st <= 6);
    const lin = [];
    for (let v = Math.ceil(min / step) * step; v <= max * (1 + 1e-12); v += step) lin.push(+v.toPrecision(12));
    return lin.length > out.length ? lin : out;
  }

  // tickLabel writes a tick value plainly (0.3, 25, 0.001) or, far from 1,
  // in scientific notation (1e-6, 2e-5).
  function tickLabel(v) {
    if (v == null) return '';
    if (v === 0) return '0';
    const a = Math.abs(v);
    if (a >= 1e-3 && a < 1e5) return String(+v.toPrecision(6));
    const e = Math.floor(Math.log10(a)), m = +(v / Math.pow(10, e)).toPrecision(3);
    return (m === 1 ? '1' : String(m)) + 'e' + e;
  }

  root.hyfed = {
    sha256, hmacSha256, mac, hex, fingerprint, b64url, fromB64url, newSecret,
    $, el, num, bytes, isImage, drawWeights, drawPixels,
    fragment, request, getJSON, postJSON, deleteJSON, refusal, events,
    filenameOf, download, modelDownloads, logTicks, tickLabel,
    schemaColumns, schemaFacts, fillKV, fedNotes, leftOutText, noHeldout, accuracyText,
  };
})(typeof window !== 'undefined' ? window : globalThis);
