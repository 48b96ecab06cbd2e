package protocol

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/hyfed/hyfed/shared/baseline"
	"github.com/hyfed/hyfed/shared/seal"
)

// TestAveragingMatchesInProcessBaselines runs FedAvg, HyFEM-Avg and
// HyFEM-Prox through the coordinator, the participants and the memory
// transport, and checks them against package baseline's in-process runs
// with the same settings: the same participants active in every round and
// the same global model, bit for bit (both seal the same quantized
// weights and divide the same sums by the same counts).
func TestAveragingMatchesInProcessBaselines(t *testing.T) {
	d := testData(240, 10, 9)
	blocks := gridBlocks(d, 2, 2)
	for _, tc := range []struct {
		algo     string
		mu       float64
		fraction float64
	}{
		{baseline.FedAvg, 0, 1},
		{baseline.FedAvg, 0, 0.6},
		{baseline.HyFEMAvg, 0, 0.6},
		{baseline.HyFEMProx, 0.05, 0.6},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			const rounds, inner, a, b, lambda, seed = 25, 7, 0.3, 2.0, 1e-2, 11
			var want [][]float64
			var active []int
			hist, err := baseline.Run(context.Background(), d, blocks, baseline.Options{Algo: tc.algo, Loss: "hinge", Lambda: lambda,
				Rounds: rounds, Inner: inner, StepA: a, StepB: b, Mu: tc.mu, Fraction: tc.fraction, Seed: seed, Scheme: "plaintext",
				OnRound: func(m baseline.RoundMetrics, w []float64) {
					want = append(want, append([]float64(nil), w...))
					active = append(active, m.Active)
				}})
			if err != nil {
				t.Fatal(err)
			}
			f := newFed(t, blocks, Config{Algo: tc.algo, Loss: "hinge", Lambda: lambda, Rounds: rounds, Inner: inner,
				StepA: a, StepB: b, Mu: tc.mu, Fraction: tc.fraction, Seed: seed})
			h := runMatching(t, f, rounds, want, active)
			last, ref := h[rounds], hist[rounds-1]
			if math.Abs(last.Primal-ref.Primal) > 1e-6*ref.Primal || !math.IsNaN(last.Dual) || !math.IsNaN(last.Gap) {
				t.Fatalf("final primal %v (dual %v, gap %v), in process %v", last.Primal, last.Dual, last.Gap, ref.Primal)
			}
			if !(last.Primal < h[0].Primal) {
				t.Fatalf("%s did not lower P: %v -> %v", tc.algo, h[0].Primal, last.Primal)
			}
			t.Logf("%s fraction %v: P %.6f -> %.6f, same as in process", tc.algo, tc.fraction, h[0].Primal, last.Primal)
		})
	}
}

// runMatching runs f and checks every round against an in-process run:
// the same number of active participants and the same model w, bit for
// bit (w holds the round's model once its metrics start).
func runMatching(t *testing.T, f *fed, rounds int, want [][]float64, active []int) []RoundMetrics {
	t.Helper()
	var got [][]float64
	f.mem.Hook = func() {
		if r := f.coord.Round(); r > len(got) && f.coord.Phase() == PhaseIP {
			got = append(got, append([]float64(nil), f.coord.W()...))
		}
	}
	h := f.run(t)
	if len(h) != rounds+1 || len(got) != rounds || len(want) != rounds {
		t.Fatalf("%d rounds of metrics, %d models and %d in process for %d rounds", len(h), len(got), len(want), rounds)
	}
	for r := range rounds {
		if h[r+1].Active != active[r] {
			t.Fatalf("round %d: %d active, in process %d", r+1, h[r+1].Active, active[r])
		}
		for j := range want[r] {
			if got[r][j] != want[r][j] {
				t.Fatalf("round %d: w[%d] = %v, in process %v", r+1, j, got[r][j], want[r][j])
			}
		}
	}
	return h
}

// TestAveragingTrafficHoldsNoLocalModel: under BGV the server receives
// every participant's local weights only as ciphertexts, and what an
// opener returns is their sum over the round's active holders.
func TestAveragingTrafficHoldsNoLocalModel(t *testing.T) {
	d := testData(200, 8, 12)
	blocks := gridBlocks(d, 2, 2)
	scheme := bgvScheme(t)
	key, all := testKeyAndFeatures(t, scheme, d.M())
	f := newFedScheme(t, blocks, Config{Algo: baseline.HyFEMProx, Lambda: 1e-2, Rounds: 8, Inner: 5, StepA: 0.2, StepB: 1, Mu: 0.1, Seed: 3}, scheme)
	var mu sync.Mutex
	local := map[int]map[int][]float64{} // round -> client -> local weights (opened here with the key)
	opened := 0
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		mu.Lock()
		defer mu.Unlock()
		if !toServer {
			return
		}
		switch m.Kind {
		case KindLocalPart:
			if len(m.W)+len(m.HatW)+len(m.DW) != 0 {
				t.Fatalf("client %d sent plaintext weights", k)
			}
			for ci, c := range m.Sealed {
				if _, ok := c.(*seal.Cipher); !ok {
					t.Fatalf("local-part chunk %d is a %T, not a ciphertext", ci, c)
				}
			}
			v, err := seal.OpenSlots(key, m.Sealed, all)
			if err != nil {
				t.Fatal(err)
			}
			if local[m.Round] == nil {
				local[m.Round] = map[int][]float64{}
			}
			local[m.Round][k] = v
		case KindOpened:
			opened++
			for j := range m.W {
				s := 0.0
				for _, v := range local[m.Round] {
					s += v[j]
				}
				if math.Abs(s-m.W[j]) > 1e-6 {
					t.Fatalf("round %d: opened %v at feature %d, the local weights sum to %v", m.Round, m.W[j], j, s)
				}
			}
			for k, v := range local[m.Round] {
				same := true
				for _, fi := range blocks[k].Features {
					same = same && math.Abs(v[fi]-m.W[fi]) < 1e-9
				}
				if same {
					t.Fatalf("round %d: the opened vector equals client %d's local weights", m.Round, k)
				}
			}
		}
	}
	h := f.run(t)
	if opened != 8 {
		t.Fatalf("%d openings in 8 rounds", opened)
	}
	if !(h[8].Primal < h[0].Primal) {
		t.Fatalf("P %v -> %v", h[0].Primal, h[8].Primal)
	}
}

// TestFedHybridMatchesInProcess runs FedHybrid through the coordinator,
// the participants and the memory transport on a horizontal partition and
// checks every round's consensus against baseline.RunFedHybrid with the
// same settings, bit for bit; a hybrid partition is refused.
func TestFedHybridMatchesInProcess(t *testing.T) {
	d := testData(240, 10, 9)
	blocks := gridBlocks(d, 4, 1)
	for _, tc := range []struct {
		mode     string
		fraction float64
	}{{"newton", 1}, {"gradient", 0.6}, {"mixed", 0.6}} {
		t.Run(tc.mode, func(t *testing.T) {
			const rounds, lambda, mu, seed = 20, 1e-2, 0.05, 13
			ref, err := baseline.RunFedHybrid(context.Background(), d, blocks, baseline.FedHybridOptions{Loss: "logistic", Lambda: lambda,
				Rounds: rounds, Mode: tc.mode, Mu: mu, Fraction: tc.fraction, Seed: seed, Scheme: "plaintext"})
			if err != nil {
				t.Fatal(err)
			}
			f := newFed(t, blocks, Config{Algo: baseline.FedHybrid, Loss: "logistic", Lambda: lambda, Rounds: rounds, Inner: 1,
				Mu: mu, Mode: tc.mode, Fraction: tc.fraction, Seed: seed})
			var want [][]float64
			var active []int
			for _, r := range ref {
				want, active = append(want, r.W), append(active, r.Active)
			}
			h := runMatching(t, f, rounds, want, active)
			last := h[rounds]
			if math.Abs(last.Primal-ref[rounds-1].Primal) > 1e-6*ref[rounds-1].Primal {
				t.Fatalf("final primal %v, in process %v", last.Primal, ref[rounds-1].Primal)
			}
			t.Logf("fedhybrid %s fraction %v: P %.8f -> %.8f, same models as in process", tc.mode, tc.fraction, h[0].Primal, last.Primal)
		})
	}
	f := newFed(t, gridBlocks(d, 2, 2), Config{Algo: baseline.FedHybrid, Loss: "logistic", Lambda: 1e-2, Rounds: 3, Inner: 1, Mu: 0.05})
	if err := Serve(context.Background(), f.coord, f.mem, nil); err == nil || !strings.Contains(err.Error(), "horizontal partition") {
		t.Fatalf("fedhybrid on a hybrid partition: %v, want a refusal naming the horizontal partition", err)
	}
}

// TestAveragingRestore: a FedAvg federation whose server dies mid-round
// and comes back from its last checkpoint ends with the uninterrupted
// run's model, bit for bit (the participants keep nothing between rounds
// but the step count, which the checkpoint holds).
func TestAveragingRestore(t *testing.T) {
	d := testData(200, 8, 4)
	blocks := gridBlocks(d, 2, 2)
	// Quorum 1: the first round after the restore waits for everyone.
	cfg := Config{Algo: baseline.FedAvg, Lambda: 1e-2, Rounds: 30, Inner: 5, StepA: 0.3, StepB: 1, Fraction: 0.7, Seed: 5, Quorum: 1}
	whole := newFed(t, blocks, cfg)
	whole.run(t)
	last := crashAt(t, newFed(t, blocks, cfg), 12, PhaseLocal)
	c, err := Restore(seal.Plaintext{Len: 64}, last.Setup, last.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	g := newFed(t, blocks, cfg)
	g.coord = c
	if h := g.run(t); len(h) != cfg.Rounds+1 {
		t.Fatalf("%d rounds recorded, want %d", len(h), cfg.Rounds+1)
	}
	for j, v := range whole.coord.W() {
		if c.W()[j] != v {
			t.Fatalf("after a restore w[%d] = %v, uninterrupted %v", j, c.W()[j], v)
		}
	}
}

// TestAveragingReturningParticipantTakesPart: a participant that leaves
// and comes back is active again in the next rounds (the baselines have
// no dual values for it to catch up on).
func TestAveragingReturningParticipantTakesPart(t *testing.T) {
	d := testData(200, 8, 4)
	f := newFed(t, gridBlocks(d, 2, 2), Config{Algo: baseline.FedAvg, Lambda: 1e-2, Rounds: 14, Inner: 5, StepA: 0.3, StepB: 1, Seed: 5})
	f.mem.Hook = func() {
		r := f.coord.Round()
		switch {
		case r >= 5 && r < 8 && f.mem.Connected(2):
			f.mem.Drop(2)
		case r >= 8 && !f.mem.Connected(2):
			if err := f.mem.Join(2); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := f.run(t)
	if h[6].Active != 3 || h[14].Active != 4 {
		t.Fatalf("active participants: round 6 %d (want 3, one away), round 14 %d (want 4, it is back)", h[6].Active, h[14].Active)
	}
}
