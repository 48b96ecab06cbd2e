package protocol

import (
	"math"
	"sync"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// TestSealPrimalReachesTheSameOptimum: sealing the primal side changes
// what the server sees, not where training goes. Each rule runs with and
// without SealPrimal, with a participant that leaves and returns (under
// the paper rule that is also an opener leaving); both end at the same
// model.
func TestSealPrimalReachesTheSameOptimum(t *testing.T) {
	d := testData(300, 10, 5)
	const lambda = 1e-2
	pstar := optimum(t, d, lambda)
	for _, tc := range []struct {
		name   string
		cfg    Config
		scheme seal.Scheme
		tol    float64 // on the relative loss of both runs (0: the rule does not get there)
		diff   float64 // on the relative difference of their final primal
	}{
		// The block rule measures its CoCoA+ scale from u, which under
		// SealPrimal is the sum of the quantised shares: the two runs part
		// by the rounding and meet at the optimum.
		{"block plaintext", Config{Lambda: lambda, Inner: 20, Fraction: 0.7, Rounds: 400, Seed: 5}, seal.Plaintext{Len: 64}, 1.1e-4, 1e-6},
		{"paper plaintext", Config{Lambda: lambda, Step: StepPaper, Inner: 2, Gamma: 0.5, Fraction: 0.7, Rounds: 300, Seed: 5}, seal.Plaintext{Len: 64}, 0, 1e-6},
		// Under BGV the runs part by the rounding until both reach the optimum:
		// 200 rounds (picks fill the Gram's chunk: every violator of these small groups).
		{"block bgv", Config{Lambda: lambda, Inner: 20, Rounds: 200, Seed: 5}, bgvScheme(t), 5e-3, 1e-6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var final, first [2]RoundMetrics
			for i, sealed := range []bool{false, true} {
				cfg := tc.cfg
				cfg.SealPrimal = sealed
				f := newFedScheme(t, gridBlocks(d, 2, 2), cfg, tc.scheme)
				f.mem.Hook = func() {
					r := f.coord.Round()
					switch {
					case r >= 10 && r < 20 && f.mem.Connected(1):
						f.mem.Drop(1)
					case r >= 20 && !f.mem.Connected(1):
						if err := f.mem.Join(1); err != nil {
							t.Fatal(err)
						}
					}
				}
				h := f.run(t)
				if len(h) != cfg.Rounds+1 {
					t.Fatalf("sealed %v: %d rounds of metrics, want %d", sealed, len(h), cfg.Rounds+1)
				}
				first[i], final[i] = h[0], h[len(h)-1]
			}
			for i, r := range final {
				rel := (r.Primal - pstar) / pstar
				t.Logf("sealed primal %v: P=%.10g rel=%.3g gap=%.3g", i == 1, r.Primal, rel, r.Gap)
				if tc.tol > 0 && !(rel < tc.tol) {
					t.Errorf("sealed primal %v: relative loss %.3g, want below %g", i == 1, rel, tc.tol)
				}
				if !(r.Primal < 0.9*first[i].Primal) {
					t.Errorf("sealed primal %v: P went from %.6g to %.6g", i == 1, first[i].Primal, r.Primal)
				}
			}
			if diff := math.Abs(final[1].Primal-final[0].Primal) / pstar; !(diff < tc.diff) {
				t.Errorf("final primal %.10g sealed vs %.10g plain: relative difference %.3g", final[1].Primal, final[0].Primal, diff)
			}
		})
	}
}

// TestSealPrimalTrafficHoldsNoPrimalShare records, under BGV with
// SealPrimal, every message the server received: no primal contribution
// or change of one comes in plaintext, every sealed one is a ciphertext
// (opened here with the federation's key to get each client's share), and
// what an opener returns is the sum over all clients, never one client's
// share.
func TestSealPrimalTrafficHoldsNoPrimalShare(t *testing.T) {
	d := testData(200, 8, 12)
	blocks := gridBlocks(d, 2, 2)
	scheme := bgvScheme(t)
	key, all := testKeyAndFeatures(t, scheme, d.M())
	for _, step := range []string{StepBlock, StepPaper} {
		f := newFedScheme(t, blocks, Config{Lambda: 1e-2, Step: step, Inner: 10, Gamma: 0.5, Rounds: 12, Seed: 3, SealPrimal: true}, scheme)
		var mu sync.Mutex
		shares := map[int]map[int][]float64{} // round -> client -> its sealed share (this round's last)
		var opened []Message
		var want [][]float64          // per opening: the sum the opener should return
		latest := map[int][]float64{} // paper rule: each client's last share of w
		f.mem.Observe = func(toServer bool, k int, m *Message) {
			mu.Lock()
			defer mu.Unlock()
			if !toServer {
				return
			}
			if len(m.HatW) != 0 || len(m.DW) != 0 {
				t.Fatalf("%s: client %d sent a %s message with plaintext primal values", step, k, m.Kind)
			}
			switch m.Kind {
			case KindPrimal, KindDirPart:
				for ci, c := range m.Sealed {
					if _, ok := c.(*seal.Cipher); !ok {
						t.Fatalf("%s: %s chunk %d is a %T, not a ciphertext", step, m.Kind, ci, c)
					}
				}
				if len(m.Sealed) == 0 {
					return // an acknowledgement (default rule's refresh)
				}
				v, err := seal.OpenSlots(key, m.Sealed, all)
				if err != nil {
					t.Fatal(err)
				}
				if shares[m.Round] == nil {
					shares[m.Round] = map[int][]float64{}
				}
				shares[m.Round][k] = v
				if m.Kind == KindPrimal {
					latest[k] = v
				}
			case KindOpened:
				src := shares[m.Round]
				if step == StepPaper {
					src = latest
				}
				sum := make([]float64, d.M())
				for _, v := range src {
					for i, x := range v {
						sum[i] += x
					}
				}
				opened, want = append(opened, *m), append(want, sum)
			}
		}
		f.run(t)
		if len(opened) == 0 {
			t.Fatalf("%s: nothing was opened", step)
		}
		for i, m := range opened {
			for j := range m.W {
				if math.Abs(want[i][j]-m.W[j]) > 1e-6 {
					t.Fatalf("%s round %d: opened %v at feature %d, the clients' shares sum to %v", step, m.Round, m.W[j], j, want[i][j])
				}
			}
		}
		// No opened vector equals one client's share on its features.
		for _, m := range opened {
			for _, byClient := range shares {
				for k, v := range byClient {
					same, nonzero := true, false
					for _, fidx := range blocks[k].Features {
						nonzero = nonzero || v[fidx] != 0
						same = same && math.Abs(v[fidx]-m.W[fidx]) < 1e-9
					}
					if same && nonzero {
						t.Fatalf("%s round %d: the opened vector equals client %d's own share", step, m.Round, k)
					}
				}
			}
		}
		t.Logf("%s: %d openings, each the sum of the clients' shares", step, len(opened))
	}
}

// TestSealPrimalRestore: the clients' sealed shares of w survive a
// checkpoint. A restored run differs from an uninterrupted one by design
// (everyone refreshes, inner products are recomputed), so the check is
// that the restored runs with and without SealPrimal end at the same model.
func TestSealPrimalRestore(t *testing.T) {
	d := testData(200, 8, 4)
	blocks := gridBlocks(d, 2, 2)
	for _, step := range []string{StepBlock, StepPaper} {
		t.Run(step, func(t *testing.T) {
			var final [2]float64
			for i, sealed := range []bool{false, true} {
				cfg := Config{Lambda: 1e-2, Step: step, Inner: 2, Gamma: 0.5, Rounds: 60, Seed: 5, SealPrimal: sealed, NoGroupSteps: true, EveryHolderSolves: true, SharedDirections: NoDirections}
				phase := PhaseGram
				if step == StepPaper {
					phase = PhaseStep
				}
				last := crashAt(t, newFed(t, blocks, cfg), 21, phase)
				c, err := Restore(seal.Plaintext{Len: 64}, last.Setup, last.RoundData)
				if err != nil {
					t.Fatal(err)
				}
				g := newFed(t, blocks, cfg)
				g.coord = c
				h := g.run(t)
				if len(h) != cfg.Rounds+1 {
					t.Fatalf("sealed %v: %d rounds recorded, want %d", sealed, len(h), cfg.Rounds+1)
				}
				final[i] = h[len(h)-1].Primal
			}
			t.Logf("final primal after a restore: %.10g plain, %.10g sealed", final[0], final[1])
			// The block step measures sigma' from u, under SealPrimal the sum
			// of the quantised shares: its two runs part by the rounding.
			tol := 1e-8
			if step == StepBlock {
				tol = 1e-5
			}
			if math.Abs(final[0]-final[1]) > tol*final[0] {
				t.Fatalf("restored runs end at %.10g (plain primal) and %.10g (sealed primal)", final[0], final[1])
			}
		})
	}
}
