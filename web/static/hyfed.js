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

  function bytes(n) {
    if (n === null || n === undefined) return '–';
    const u = ['B', 'kB', 'MB', 'GB'];
    let i = 0;
    while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : n) + ' ' + u[i];
  }

  // getJSON fetches JSON; an API error ({error, code}) becomes an Error
  // carrying both.
  async function getJSON(url, init) {
    const r = await fetch(url, init);
    let body = null;
    try { body = await r.json(); } catch (e) { /* not JSON */ }
    if (!r.ok) {
      const err = new Error((body && body.error) || ('HTTP ' + r.status));
      err.code = body && body.code;
      err.status = r.status;
      throw err;
    }
    return body;
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

  root.hyfed = {
    sha256, hmacSha256, mac, hex, fingerprint, b64url, fromB64url, newSecret,
    $, el, num, bytes, getJSON, isImage, drawWeights, drawPixels,
  };
})(typeof window !== 'undefined' ? window : globalThis);
