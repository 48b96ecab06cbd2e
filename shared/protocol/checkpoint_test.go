package protocol

import (
	"math"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// TestRestoreFinishesAtTheSameOptimum interrupts a federation in the middle
// of a round, rebuilds the coordinator from the last checkpoint with fresh
// participants (a killed server and reloaded pages), and checks that the
// restored run records every round exactly once and ends where the
// uninterrupted run ends.
func TestRestoreFinishesAtTheSameOptimum(t *testing.T) {
	d := testData(300, 10, 4)
	blocks := gridBlocks(d, 3, 2)
	for _, scheme := range []seal.Scheme{seal.Plaintext{Len: 64}, bgvScheme(t)} {
		t.Run(scheme.Name(), func(t *testing.T) {
			cfg := Config{Lambda: 1e-2, Inner: 25, Fraction: 0.7, Rounds: 200, Seed: 5}
			whole := newFedScheme(t, blocks, cfg, scheme).run(t)

			crashed := newFedScheme(t, blocks, cfg, scheme)
			last := crashAt(t, crashed, 31, PhaseDirection) // the server dies mid-round
			if last == nil || last.Round != 30 {
				t.Fatalf("last checkpoint %+v, want round 30", last)
			}
			c, err := Restore(scheme, last.Setup, last.RoundData)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Waiting() || c.Round() != 30 || len(c.History()) != 31 {
				t.Fatalf("restored: waiting %v round %d history %d", c.Waiting(), c.Round(), len(c.History()))
			}
			// The model handed out comes back: the best of rounds 0-30.
			if got, want := c.Model(), crashed.coord.Model(); !want.Best || !sameIterate(got, want) {
				t.Fatalf("restored model: round %d P %v best %v, before the crash: round %d P %v best %v",
					got.Round, got.Primal, got.Best, want.Round, want.Primal, want.Best)
			}
			g := newFedScheme(t, blocks, cfg, scheme) // fresh participants, joining again
			g.coord = c
			h := g.run(t)
			if len(h) != cfg.Rounds+1 {
				t.Fatalf("%d rounds recorded, want %d", len(h), cfg.Rounds+1)
			}
			for i, r := range h {
				if r.Round != i {
					t.Fatalf("history entry %d is round %d: a round lost or doubled", i, r.Round)
				}
			}
			if m := g.coord.Model(); m.Round != bestRound(h) || m.Primal != h[m.Round].Primal {
				t.Fatalf("model of the restored run: round %d P %v; the lowest primal recorded: round %d", m.Round, m.Primal, bestRound(h))
			}
			for i := 0; i <= 30; i++ {
				if h[i].Primal != whole[i].Primal && !(math.IsNaN(h[i].Primal) && math.IsNaN(whole[i].Primal)) {
					t.Fatalf("round %d before the checkpoint: primal %v, uninterrupted %v", i, h[i].Primal, whole[i].Primal)
				}
			}
			// Both runs converge to the optimum; the restored one took a
			// refresh and full inner products the other did not, so its
			// iterates differ in the last bits and the trajectories part.
			pstar := optimum(t, d, cfg.Lambda)
			for name, r := range map[string]RoundMetrics{"restored": h[len(h)-1], "uninterrupted": whole[len(whole)-1]} {
				if gap := (pstar - r.Dual) / pstar; gap > 2e-3 || gap < -1e-9 {
					t.Errorf("%s run: dual %.9g, P* %.9g: relative dual gap %.2g", name, r.Dual, pstar, gap)
				}
			}
			t.Logf("final dual restored %.12g, uninterrupted %.12g, P* %.12g", h[len(h)-1].Dual, whole[len(whole)-1].Dual, pstar)
		})
	}
}

func TestRestoreRefusesMismatchedParts(t *testing.T) {
	d := testData(120, 6, 4)
	blocks := gridBlocks(d, 2, 2)
	scheme := seal.Plaintext{Len: 64}
	f := newFedScheme(t, blocks, Config{Lambda: 1e-2, Inner: 10, Rounds: 3, Seed: 1}, scheme)
	f.coord.EnableCheckpoints()
	var cps []*Checkpoint
	f.mem.OnReady = func(r Ready) {
		if r.Checkpoint != nil {
			cps = append(cps, r.Checkpoint.Encode())
		}
	}
	f.run(t)
	if len(cps) != 4 {
		t.Fatalf("%d checkpoints for rounds 0..3", len(cps))
	}
	other := newFedScheme(t, gridBlocks(testData(120, 6, 5), 2, 2), Config{Lambda: 1e-2, Inner: 10, Rounds: 3, Seed: 1}, scheme)
	other.coord.EnableCheckpoints()
	var ocp *Checkpoint
	other.mem.OnReady = func(r Ready) {
		if r.Checkpoint != nil {
			ocp = r.Checkpoint.Encode()
		}
	}
	other.run(t)
	for _, tc := range []struct {
		name         string
		setup, round []byte
		scheme       seal.Scheme
	}{
		{"round of another federation", cps[1].Setup, ocp.RoundData, scheme},
		{"truncated round", cps[1].Setup, cps[1].RoundData[:len(cps[1].RoundData)/2], scheme},
		{"garbage setup", []byte("not a checkpoint"), cps[1].RoundData, scheme},
		{"other scheme", cps[1].Setup, cps[1].RoundData, bgvScheme(t)},
	} {
		if _, err := Restore(tc.scheme, tc.setup, tc.round); err == nil {
			t.Errorf("%s: restored", tc.name)
		}
	}
	c, err := Restore(scheme, cps[3].Setup, cps[3].RoundData)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Finished() {
		t.Fatal("a checkpoint after the last round restores unfinished")
	}
}

// sameIterate compares two iterates bit for bit.
func sameIterate(a, b Iterate) bool {
	if a.Round != b.Round || a.Primal != b.Primal || a.HeldAcc != b.HeldAcc || a.TrainAcc != b.TrainAcc ||
		a.Best != b.Best || len(a.W) != len(b.W) {
		return false
	}
	for i := range a.W {
		if a.W[i] != b.W[i] {
			return false
		}
	}
	return true
}

// bestRound returns the first round with the lowest primal in h (-1: none).
func bestRound(h []RoundMetrics) int {
	best := -1
	for i, r := range h {
		if !r.Partial && !math.IsNaN(r.Primal) && (best < 0 || r.Primal < h[best].Primal) {
			best = i
		}
	}
	return best
}
