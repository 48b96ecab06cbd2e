package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// TestBaselinesOverWebsockets runs FedAvg, HyFEM-Prox and FedHybrid (on a
// horizontal partition) as federations of
// this server (algo in the create request) with native participants over
// loopback websockets and BGV: the model they end with is, bit for bit,
// the one the same federation computes in process over the memory
// transport with plaintext sealing (hyfed experiment --algo).
func TestBaselinesOverWebsockets(t *testing.T) {
	hybrid := smallData(t)
	horizontal, err := experiment.Prepare(experiment.Options{Data: "synthetic:360,12,1,0.05,3", Holdout: 0.2, Partition: "horizontal:4"})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, t.TempDir())
	for _, tc := range []struct {
		algo string
		mu   float64
	}{{averaging.FedAvg, 0}, {averaging.HyFEMProx, 0.05}, {fedhybrid.Name, 0.05}} {
		t.Run(tc.algo, func(t *testing.T) {
			const rounds, inner, lambda, seed, fraction = 12, 6, 1e-2, 4, 0.7
			a, b, lossName, p := 0.2, 1.0, "hinge", hybrid
			if tc.algo == fedhybrid.Name {
				a, b, lossName, p = 0, 0, "logistic", horizontal
			}
			// The same federation in process, over the memory transport.
			var want []float64
			o := experiment.Options{Seed: seed, Plaintext: true, PStar: 1,
				Script: func(_ *protocol.Memory, c *protocol.Coordinator) { want = append(want[:0], c.W()...) }, Config: protocol.Config{Algo: tc.algo, Loss: lossName, Lambda: lambda, Rounds: rounds, Inner: inner, StepA: a, StepB: b, Mu: tc.mu, Fraction: fraction}}
			if tc.algo == fedhybrid.Name {
				o.Mode = "mixed"
			}
			if _, err := experiment.RunPrepared(context.Background(), p, o); err != nil {
				t.Fatal(err)
			}
			if len(want) != p.Data.M() {
				t.Fatalf("the in-process run's model has %d weights, want %d", len(want), p.Data.M())
			}
			req := CreateRequest{Name: tc.algo, Config: protocol.Config{Algo: tc.algo, Loss: lossName, Lambda: lambda, Rounds: rounds, Inner: inner, StepA: a, StepB: b, Mu: tc.mu, Fraction: fraction, Seed: seed, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}
			if tc.algo == fedhybrid.Name {
				req.Mode = "mixed"
			}
			l, fed := ts.create(t, req, secret.FromSeed(3), "bgv")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs := make(chan error, len(p.Blocks))
			for i := range p.Blocks {
				go func() {
					_, err := session.Run(ctx, l, &p.Blocks[i], session.Options{Dial: dialer(), RetryFor: 20 * time.Second})
					errs <- err
				}()
				// One after the other: client k holds block k, as in process.
				waitFor(t, "registration", 30*time.Second, func() bool { return len(ts.status(t, fed.ID).Participants) > i })
			}
			for range p.Blocks {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			st := ts.status(t, fed.ID)
			if st.State != "finished" || st.Config.Algo != tc.algo || len(st.History) != rounds+1 {
				t.Fatalf("status: state %s, algo %s, %d rounds of metrics", st.State, st.Config.Algo, len(st.History))
			}
			var model ModelView
			if err := json.Unmarshal(ts.get(t, "/api/federations/"+fed.ID+"/model?iterate=last"), &model); err != nil {
				t.Fatal(err)
			}
			for j := range want {
				if float64(model.W[j]) != want[j] {
					t.Fatalf("w[%d] = %v over websockets, %v in process", j, model.W[j], want[j])
				}
			}
			first, last := st.History[0].RoundMetrics(), st.History[rounds].RoundMetrics()
			t.Logf("%s over websockets: P %.6f -> %.6f; the model equals the in-process run's", tc.algo, first.Primal, last.Primal)
			if !(last.Primal < first.Primal) {
				t.Fatalf("P %v -> %v", first.Primal, last.Primal)
			}
		})
	}
}
