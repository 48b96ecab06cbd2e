package server

import (
	"context"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
)

// TestNetworkRunMatchesExperiment runs a federation over real loopback
// websockets, each participant with its own connection, and checks that
// every round's metrics equal those of the in-process experiment with the
// same settings, to the last bit.
func TestNetworkRunMatchesExperiment(t *testing.T) {
	p := smallData(t)
	for _, scheme := range []string{"bgv", "plaintext"} {
		t.Run(scheme, func(t *testing.T) {
			o := experiment.Options{Partition: "grid:3,2", Seed: 3,
				PStar: 1, Plaintext: scheme == "plaintext", Config: protocol.Config{Lambda: 1e-2, Fraction: 0.7, Rounds: 25, IIC: 0.2}}
			var want []protocol.RoundMetrics
			if _, err := experiment.RunPreparedWithHistory(context.Background(), p, o, &want); err != nil {
				t.Fatal(err)
			}
			ts := startServer(t, t.TempDir())
			sec := secret.FromSeed(o.Seed)
			l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: o.Lambda, Fraction: o.Fraction, Rounds: o.Rounds, IIC: o.IIC, Seed: uint64(o.Seed), Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, scheme)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := runAll(ctx, l, blockPtrs(p.Blocks))
			if err != nil {
				t.Fatal(err)
			}
			st := ts.status(t, fed.ID)
			if st.State != "finished" || len(st.History) != len(want) {
				t.Fatalf("state %s, %d rounds recorded, want finished and %d", st.State, len(st.History), len(want))
			}
			for i, r := range st.History {
				w := want[i]
				if !sameFloat(float64(r.Primal), w.Primal) || !sameFloat(float64(r.Dual), w.Dual) || !sameFloat(float64(r.HeldAcc), w.HeldAcc) {
					t.Fatalf("%s; in-process: primal %v dual %v", fmtRound(r), w.Primal, w.Dual)
				}
			}
			for i, r := range res {
				if r.Session == "" || r.Name == "" || r.Rounds != o.Rounds {
					t.Fatalf("participant %d: %+v", i, r)
				}
			}
			if len(st.Participants) != len(p.Blocks) || st.WireIn == 0 || st.WireOut == 0 {
				t.Fatalf("status: %d participants, wire %d/%d bytes", len(st.Participants), st.WireIn, st.WireOut)
			}
		})
	}
}
