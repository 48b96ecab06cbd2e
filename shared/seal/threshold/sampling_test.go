package threshold

import (
	"math"
	"math/big"
	"testing"
)

// TestSamplers: ternary coefficients are -1, 0, 1 a third each; binomial
// errors have variance 10.5 within ±21; flooding is uniform on [-2^k, 2^k)
// over every prime (its values exceed both primes and come back by CRT),
// with its low bits uniform too (what Lattigo's Gaussian sampler does not
// give at large sigma).
func TestSamplers(t *testing.T) {
	f, _ := federation(t, 2, 2)
	rq := f.params.RingQ()
	qs := f.params.Q()
	r, err := stream()
	if err != nil {
		t.Fatal(err)
	}
	p := rq.NewPoly()
	const reps = 16
	var tern [3]int
	var bsum, bsq float64
	for range reps {
		sampleTernary(r, p, qs)
		for _, x := range centered(f, p.Coeffs) {
			tern[int(x)+1]++
		}
		sampleBinomial(r, p, qs)
		for _, x := range centered(f, p.Coeffs) {
			if math.Abs(x) > 21 {
				t.Fatalf("binomial sample %v", x)
			}
			bsum, bsq = bsum+x, bsq+x*x
		}
	}
	n := float64(reps * p.N())
	for v, c := range tern {
		if math.Abs(float64(c)/n-1.0/3) > 0.01 {
			t.Errorf("ternary value %d: share %.4f", v-1, float64(c)/n)
		}
	}
	if v := bsq/n - (bsum/n)*(bsum/n); math.Abs(v/binomialVar-1) > 0.05 {
		t.Errorf("binomial variance %.2f, want %.1f", v, binomialVar)
	}
	for _, k := range []int{1, 20, 57, MaxFloodBits} {
		lo, hi := math.Ldexp(-1, k), math.Ldexp(1, k)
		var sum, sq float64
		var low [16]int
		for range reps {
			sampleFlood(r, k, p, qs)
			for _, xb := range centeredBig(f, p.Coeffs) {
				x, _ := new(big.Float).SetInt(xb).Float64()
				if x < lo || x >= hi {
					t.Fatalf("flood 2^%d: sample %v outside [-2^k, 2^k)", k, xb)
				}
				sum, sq = sum+x, sq+x*x
				low[new(big.Int).And(xb, big.NewInt(15)).Int64()]++
			}
		}
		if v := sq/n - (sum/n)*(sum/n); math.Abs(v/floodVar(k)-1) > 0.05 {
			t.Errorf("flood 2^%d: variance %.4g, want %.4g", k, v, floodVar(k))
		}
		if k >= 20 {
			for b, c := range low {
				if math.Abs(float64(c)/n-1.0/16) > 0.01 {
					t.Errorf("flood 2^%d: low bits %d in %.4f of samples", k, b, float64(c)/n)
				}
			}
		}
	}
}
