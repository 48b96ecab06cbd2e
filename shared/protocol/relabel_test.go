package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"
)

// TestPseudonymValuesDoNotMatter: pseudonyms count only by which samples
// they match. Replacing every pseudonym with another string that matches
// the same samples (a hash of it, which orders them differently) gives the
// same layout, picks and model bit for bit, as the OPRF's pseudonyms must.
func TestPseudonymValuesDoNotMatter(t *testing.T) {
	d := testData(240, 9, 3)
	for _, tc := range []struct {
		name string
		cfg  Config
		k, q int
	}{
		{"block grid", Config{Lambda: 1e-2, Inner: 8, Rounds: 12, Fraction: 0.7, Seed: 3}, 3, 2},
		{"block vertical", Config{Lambda: 1e-2, Inner: 8, Rounds: 12}, 1, 3},
		{"paper grid", Config{Lambda: 1e-2, Step: StepPaper, Inner: 4, Gamma: 0.5, Rounds: 12, Seed: 3}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks := gridBlocks(d, tc.k, tc.q)
			plain := newFed(t, blocks, tc.cfg)
			h0 := plain.run(t)
			relabelled := newFed(t, blocks, tc.cfg)
			n := 0
			for qi := range relabelled.mem.queue { // the hellos, queued as the participants connected
				if e := &relabelled.mem.queue[qi]; e.Kind == EventJoin {
					ps := make([]string, len(e.Msg.Pseudonyms))
					for i, p := range e.Msg.Pseudonyms {
						s := sha256.Sum256([]byte(p))
						ps[i] = hex.EncodeToString(s[:])
					}
					e.Msg.Pseudonyms = ps
					n++
				}
			}
			if n != len(blocks) {
				t.Fatalf("relabelled %d hellos of %d", n, len(blocks))
			}
			sameHistory(t, h0, relabelled.run(t))
			w0, w1 := plain.coord.Model().W, relabelled.coord.Model().W
			for j := range w0 {
				if !sameBits(w0[j], w1[j]) {
					t.Fatalf("weight %d: %v, relabelled %v", j, w0[j], w1[j])
				}
			}
			for k := range blocks {
				if s0, s1 := plain.coord.clients[k].slots, relabelled.coord.clients[k].slots; !equalInts(s0, s1) {
					t.Fatalf("participant %d's slots %v, relabelled %v", k, s0, s1)
				}
			}
		})
	}
}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// sameHistory fails unless two runs recorded the same rounds with the same
// primal and dual, bit for bit.
func sameHistory(t *testing.T, h0, h1 []RoundMetrics) {
	t.Helper()
	if len(h0) != len(h1) {
		t.Fatalf("%d rounds, the other run %d", len(h0)-1, len(h1)-1)
	}
	for i := range h0 {
		if !sameBits(h0[i].Primal, h1[i].Primal) || !sameBits(h0[i].Dual, h1[i].Dual) {
			t.Fatalf("round %d: P %v D %v, the other run P %v D %v", i, h0[i].Primal, h0[i].Dual, h1[i].Primal, h1[i].Dual)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
