package protocol

import (
	"math"
	"testing"
)

func TestHyFedConvergesToCentralOptimum(t *testing.T) {
	d := testData(400, 12, 1)
	const lambda = 1e-2
	pstar := optimum(t, d, lambda)
	for _, tc := range []struct {
		name     string
		k, q     int
		fraction float64
		rounds   int
		inner    int
	}{
		{"hybrid 2x3 full", 2, 3, 1, 600, 10},
		{"hybrid 2x3 half", 2, 3, 0.5, 600, 10},
		{"horizontal 4", 4, 1, 1, 300, 10},
		{"vertical 3", 1, 3, 1, 300, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFed(t, gridBlocks(d, tc.k, tc.q), Config{Lambda: lambda, Inner: tc.inner, Fraction: tc.fraction, Rounds: tc.rounds, Seed: 3})
			h := f.run(t)
			if len(h) != tc.rounds+1 {
				t.Fatalf("got %d rounds of metrics, want %d", len(h), tc.rounds+1)
			}
			last := h[len(h)-1]
			rel := (last.Primal - pstar) / pstar
			t.Logf("P=%.8f P*=%.8f rel=%.3g gap=%.3g", last.Primal, pstar, rel, last.Gap)
			if !(rel < 1e-3) || rel < -1e-9 {
				t.Errorf("relative loss %.3g after %d rounds, want below 1e-3", rel, tc.rounds)
			}
			for i := 1; i < len(h); i++ {
				if h[i].Dual < h[i-1].Dual-1e-12*math.Abs(h[i-1].Dual) {
					t.Fatalf("dual fell in round %d: %.12f -> %.12f", h[i].Round, h[i-1].Dual, h[i].Dual)
				}
			}
		})
	}
}
