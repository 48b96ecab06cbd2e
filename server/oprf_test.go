package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// TestOPRFOverWebsockets: native participants over loopback websockets
// align by OPRF pseudonyms, with the shared key and with threshold keys:
// every round's primal, dual and held-out accuracy equal, bit for bit,
// those of the in-process experiment with keyed pseudonyms. No frame the
// server received carries a keyed pseudonym of any id, and the hellos carry
// none at all.
func TestOPRFOverWebsockets(t *testing.T) {
	p := smallData(t)
	o := experiment.Options{Partition: "grid:3,2", Seed: 3, PStar: 1,
		Config: protocol.Config{Lambda: 1e-2, Fraction: 0.7, Rounds: 4, IIC: 0.2, Tol: protocol.NoTol}}
	var want []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(context.Background(), p, o, &want); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(o.Seed)
	keyed := map[string]bool{}
	for _, b := range p.Blocks {
		for _, id := range b.IDs {
			keyed[sec.Pseudonym(id)] = true
		}
	}
	n := len(p.Blocks)
	for _, keys := range []string{protocol.KeysShared, protocol.KeysThreshold} {
		req := CreateRequest{Name: "oprf " + keys, Config: protocol.Config{Lambda: o.Lambda, Fraction: o.Fraction, Rounds: o.Rounds, Tol: protocol.NoTol,
			IIC: o.IIC, Seed: uint64(o.Seed), Clients: n, NumFeatures: p.Data.M(), Keys: keys, Pseudonyms: protocol.PseudonymsOPRF}}
		l, fed := ts.create(t, req, sec, "bgv")
		if !l.OPRF {
			t.Fatalf("the link %s does not say OPRF", l)
		}
		scheme, err := seal.ByName(l.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		errs := make(chan error, n)
		var mu sync.Mutex
		var frames [][]byte
		for k := range p.Blocks {
			opt := session.Options{Dial: dialer(), RetryFor: 20 * time.Second,
				OnSend: func(m *protocol.Message, frame []byte) {
					got, err := protocol.DecodeMessage(scheme, frame, protocol.DefaultLimits)
					if err != nil {
						t.Errorf("participant %d: its %s frame: %v", k, m.Kind, err)
						return
					}
					if got.Kind == protocol.KindHello && (len(got.Pseudonyms) > 0 || got.Digest == "") {
						t.Errorf("participant %d's hello: %d pseudonyms, digest %q", k, len(got.Pseudonyms), got.Digest)
					}
					mu.Lock()
					frames = append(frames, frame)
					mu.Unlock()
				}}
			go func() {
				_, err := session.Run(ctx, l, &p.Blocks[k], opt)
				errs <- err
			}()
			waitFor(t, "registration", 30*time.Second, func() bool { return len(ts.status(t, fed.ID).Participants) > k })
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("keys %s: %v", keys, err)
			}
		}
		for _, f := range frames {
			for ps := range keyed {
				if strings.Contains(string(f), ps) {
					t.Fatalf("keys %s: a frame the server received carries the keyed pseudonym %s", keys, ps)
				}
			}
		}
		st := ts.status(t, fed.ID)
		if st.State != "finished" || len(st.History) != len(want) || st.Config.Pseudonyms != protocol.PseudonymsOPRF {
			t.Fatalf("keys %s: state %s, pseudonyms %q, %d rounds recorded, want finished and %d", keys, st.State, st.Config.Pseudonyms, len(st.History), len(want))
		}
		for i, r := range st.History {
			w := want[i]
			if !sameFloat(float64(r.Primal), w.Primal) || !sameFloat(float64(r.Dual), w.Dual) || !sameFloat(float64(r.HeldAcc), w.HeldAcc) {
				t.Fatalf("keys %s: %s; in process with keyed pseudonyms: primal %v dual %v", keys, fmtRound(r), w.Primal, w.Dual)
			}
		}
	}
}
