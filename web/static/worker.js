// The Web Worker that runs hyfed's WebAssembly participant, so that the
// page stays responsive while it computes. Messages in: {cmd: 'load',
// name, bytes (ArrayBuffer, transferred), schema (the federation's schema
// as JSON text, '' for none), delimiter ('' to find it, 'comma',
// 'semicolon', 'tab')}, {cmd: 'start', href, session,
// keyState (base64, a keys event's key_state)},
// {cmd: 'stop'}, {cmd: 'bench', bytes} (replay a recorded
// trace, for the wasm-vs-native benchmark). Messages out: the participant's events as JSON strings
// (see wasmclient/tab.Event), plus {"type":"ready"} once it has loaded.
importScripts('/static/wasm/wasm_exec.js');

const pending = [];
let ready = false;

function handle(msg) {
  let err;
  switch (msg.cmd) {
    case 'load': err = self.hyfedLoad(msg.name, new Uint8Array(msg.bytes), msg.schema || '', msg.delimiter || ''); break;
    case 'start': err = self.hyfedStart(msg.href, msg.session || '', msg.keyState || ''); break;
    case 'stop': err = self.hyfedStop(); break;
    case 'bench': err = self.hyfedBench(new Uint8Array(msg.bytes)); break;
    default: err = 'unknown command ' + msg.cmd;
  }
  if (err) self.postMessage(JSON.stringify({type: 'error', code: 'worker', message: String(err)}));
}

self.onmessage = (e) => { if (ready) handle(e.data); else pending.push(e.data); };

(async () => {
  try {
    const go = new Go();
    const resp = fetch('/static/wasm/hyfed.wasm');
    let inst;
    if (WebAssembly.instantiateStreaming) {
      inst = (await WebAssembly.instantiateStreaming(resp, go.importObject)).instance;
    } else {
      inst = (await WebAssembly.instantiate(await (await resp).arrayBuffer(), go.importObject)).instance;
    }
    // main posts {"type":"ready"} once its functions are set.
    const origPost = self.postMessage.bind(self);
    go.run(inst).then(() => origPost(JSON.stringify({type: 'error', code: 'worker', message: 'the participant stopped unexpectedly'})));
    ready = true;
    for (const m of pending.splice(0)) handle(m);
  } catch (e) {
    self.postMessage(JSON.stringify({type: 'error', code: 'worker', message: 'could not start the participant: ' + e}));
  }
})();
