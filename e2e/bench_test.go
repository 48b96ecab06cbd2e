package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	tabpkg "github.com/hyfed/hyfed/wasmclient/tab"
)

// BenchmarkWasmVsNativeRound times one participant's work per round (its
// share of every phase under the default configuration: picks and its
// partial Gram, the group solve, sealing, inner products, the primal part)
// in the browser's WebAssembly participant, in Chromium and in Firefox ESR,
// and natively, on the same MNIST block (quadrants:1, client 0, BGV), by
// replaying what that participant received in a recorded run. Every replay
// must compute the same plaintext replies. Native and wasm alternate in
// each iteration; the ratio is the number to compare.
//
//	go test ./e2e -run '^$' -bench WasmVsNative -benchtime 3x
func BenchmarkWasmVsNativeRound(b *testing.B) {
	const rounds = 10
	ptrs := loadBlocks(b, "mnist", "quadrants:1")
	blocks := make([]partition.Block, len(ptrs))
	ntrain := 0
	for i, p := range ptrs {
		blocks[i] = *p
	}
	for _, h := range blocks[0].Heldout {
		if !h {
			ntrain++
		}
	}
	cfg := protocol.Defaults()
	cfg.Inner = protocol.InnerFor(cfg.IIC, ntrain, len(blocks))
	cfg.Rounds, cfg.Clients, cfg.Seed = rounds, len(blocks), 1
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	tr, err := tabpkg.Record(blocks, 0, secret.FromSeed(1), cfg, "bgv")
	if err != nil {
		b.Fatal(err)
	}
	enc, err := tr.Encode()
	if err != nil {
		b.Fatal(err)
	}
	ts := startServer(b) // serves the page, the worker and the wasm
	// The page may fetch only from its own origin (CSP connect-src 'self'):
	// one origin serves the trace and passes the rest to hyfed's server.
	hyfed, err := url.Parse(ts.URL)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(hyfed)
	traceSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/trace" {
			w.Write(enc)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer traceSrv.Close()
	script := fmt.Sprintf(`(async () => {
	  const buf = await (await fetch(%s)).arrayBuffer();
	  const w = new Worker('/static/worker.js');
	  try {
	    return await new Promise((resolve, reject) => {
	      w.onmessage = (e) => { const ev = JSON.parse(e.data);
	        if (ev.type === 'bench') resolve(JSON.stringify(ev.replay));
	        if (ev.type === 'error') reject(new Error(ev.message)); };
	      w.postMessage({cmd: 'bench', bytes: buf}, [buf]);
	    });
	  } finally { w.terminate(); }
	})()`, jsString("/trace"))
	b.Logf("trace: %d rounds, %d frames, %.1f MB", rounds, len(tr.Frames), float64(len(enc))/1e6)

	for _, eng := range []struct {
		name  string
		start func(testing.TB) engine
	}{{"chromium", newChromium}, {"firefox", newFirefox}} {
		b.Run(eng.name, func(b *testing.B) {
			pg := eng.start(b).newPage()
			pg.navigate(traceSrv.URL + "/")
			var wasmSec, nativeSec float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				nat, err := tabpkg.Replay(tr)
				if err != nil {
					b.Fatal(err)
				}
				var w tabpkg.ReplayResult
				if err := json.Unmarshal([]byte(pageEval[string](pg, script)), &w); err != nil {
					b.Fatal(err)
				}
				if w.PlainHash != nat.PlainHash || w.Rounds != nat.Rounds || w.Replies != nat.Replies {
					b.Fatalf("%s: the wasm participant computed other replies than the native one: %+v vs %+v", eng.name, w, nat)
				}
				wasmSec += w.Seconds / float64(w.Rounds)
				nativeSec += nat.Seconds / float64(nat.Rounds)
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(1e3*wasmSec/n, "wasm-ms/round")
			b.ReportMetric(1e3*nativeSec/n, "native-ms/round")
			b.ReportMetric(wasmSec/nativeSec, "wasm/native")
		})
	}
}
