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
// must compute the plaintext replies the recorded participant sent. Native
// and wasm alternate in each iteration; the ratio is the number to compare.
// One Worker replays every iteration, as one tab runs every round of a
// federation: the first replay, before the timer, is reported apart
// (first-wasm/native), since a WebAssembly engine compiles the participant
// while it first runs it (a one-time cost of a tab's first rounds); the
// timed iterations measure the engine's steady state, natively after a
// first replay too.
// The -threshold sub-benchmarks replay the same federation with threshold
// keys (2-of-3), where client 0 is a committee member: it seals under the
// collective key, opens what was switched to its own key and switches the
// others' sums (switch-requests/round); -threshold-outside is client 3,
// outside the committee, which only seals and opens. They price threshold
// keys in the browser against the shared key.
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
	thr := cfg
	thr.Keys = protocol.KeysThreshold
	traces := map[string][]byte{}
	variants := []struct {
		keys, scheme string
		cfg          protocol.Config
		client       int
	}{{"", "bgv", cfg, 0}, {"-threshold", "bgv-threshold", thr, 0}, {"-threshold-outside", "bgv-threshold", thr, 3}}
	for _, tc := range variants {
		if err := tc.cfg.Validate(); err != nil {
			b.Fatal(err)
		}
		tr, err := tabpkg.Record(blocks, tc.client, secret.FromSeed(1), tc.cfg, tc.scheme)
		if err != nil {
			b.Fatal(err)
		}
		enc, err := tr.Encode()
		if err != nil {
			b.Fatal(err)
		}
		traces["/trace"+tc.keys] = enc
		b.Logf("trace%s: %d rounds, %d frames, %.1f MB", tc.keys, rounds, len(tr.Frames), float64(len(enc))/1e6)
	}
	ts := startServer(b) // serves the page, the worker and the wasm
	// The page may fetch only from its own origin (CSP connect-src 'self'):
	// one origin serves the traces and passes the rest to hyfed's server.
	hyfed, err := url.Parse(ts.URL)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(hyfed)
	traceSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if enc, ok := traces[r.URL.Path]; ok {
			w.Write(enc)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer traceSrv.Close()
	// The page's one Worker (created by the first replay) replays every
	// iteration.
	script := func(path string) string {
		return fmt.Sprintf(`(async () => {
	  const buf = await (await fetch(%s)).arrayBuffer();
	  if (!self.benchWorker) self.benchWorker = new Worker('/static/worker.js');
	  const w = self.benchWorker;
	  return await new Promise((resolve, reject) => {
	    w.onmessage = (e) => { const ev = JSON.parse(e.data);
	      if (ev.type === 'bench') resolve(JSON.stringify(ev.replay));
	      if (ev.type === 'error') reject(new Error(ev.message)); };
	    w.postMessage({cmd: 'bench', bytes: buf}, [buf]);
	  });
	})()`, jsString(path))
	}

	for _, eng := range []struct {
		name  string
		start func(testing.TB) engine
	}{{"chromium", newChromium}, {"firefox", newFirefox}} {
		for _, v := range variants {
			keys := v.keys
			b.Run(eng.name+keys, func(b *testing.B) {
				tr, err := tabpkg.DecodeTrace(traces["/trace"+keys])
				if err != nil {
					b.Fatal(err)
				}
				pg := eng.start(b).newPage()
				pg.navigate(traceSrv.URL + "/")
				// replay runs the trace natively and in the page's Worker and
				// returns each side's seconds a round.
				replay := func() (wasm, native float64, switches int) {
					nat, err := tabpkg.Replay(tr)
					if err != nil {
						b.Fatal(err)
					}
					var w tabpkg.ReplayResult
					if err := json.Unmarshal([]byte(pageEval[string](pg, script("/trace"+keys))), &w); err != nil {
						b.Fatal(err)
					}
					if w.PlainHash != tr.PlainHash || nat.PlainHash != tr.PlainHash || w.Rounds != nat.Rounds || w.Replies != nat.Replies {
						b.Fatalf("%s: the wasm participant (%+v) or the native one (%+v) computed other replies than the recorded one (%s)", eng.name, w, nat, tr.PlainHash)
					}
					return w.Seconds / float64(w.Rounds), nat.Seconds / float64(nat.Rounds), w.SwitchShares
				}
				firstWasm, firstNative, _ := replay()
				var wasmSec, nativeSec float64
				switches := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					w, nat, sw := replay()
					wasmSec += w
					nativeSec += nat
					switches = sw
				}
				b.StopTimer()
				n := float64(b.N)
				b.ReportMetric(1e3*wasmSec/n, "wasm-ms/round")
				b.ReportMetric(1e3*nativeSec/n, "native-ms/round")
				b.ReportMetric(wasmSec/nativeSec, "wasm/native")
				b.ReportMetric(firstWasm/firstNative, "first-wasm/native")
				b.ReportMetric(float64(switches)/float64(rounds), "switch-requests/round")
			})
		}
	}
}
