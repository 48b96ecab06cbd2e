package solve

import (
	"math"
	"testing"
)

// TestGroupQPStaysFeasibleAndGains: the weights stay in each pair's hull
// and never do worse by the model than the start.
func TestGroupQPStaysFeasibleAndGains(t *testing.T) {
	a := []float64{1, -0.5, 2, 1}
	g := []float64{
		2, 0.5, 1, 0,
		0.5, 1, 0, 0.2,
		1, 0, 1, 0.1,
		0, 0.2, 0.1, 0.5,
	}
	hi := []float64{1.5, 3, 0.4, 2}
	model := func(x []float64) float64 {
		v := 0.0
		for i := range x {
			v += a[i] * x[i]
			for j := range x {
				v -= x[i] * g[i*4+j] * x[j] / 2
			}
		}
		return v
	}
	x := []float64{0.2, 0.2, 0, 0}
	// (the first two weights are one)
	start := model(x)
	GroupQP(x, a, g, hi, nil)
	if model(x) < start {
		t.Fatalf("model fell from %v to %v", start, model(x))
	}
	if x[0] != x[1] {
		t.Fatalf("the groups' own directions weighed %v and %v, not alike", x[0], x[1])
	}
	for j := range 2 {
		xa, xb, la, lb := x[j], x[j+2], hi[j], hi[j+2]
		if xa < 0 || xb < 0 || xb > lb*xa*(1+1e-12) || xa+xb*math.Max(0, la-1)/lb > la*(1+1e-12) {
			t.Fatalf("pair %d: %v, %v outside the triangle of limits %v, %v", j, xa, xb, la, lb)
		}
		if l := GroupStepLimit(xa, xb, la, lb); l < 1-1e-12 {
			t.Fatalf("pair %d: step limit %v below 1", j, l)
		}
	}
}

// TestGroupQPKeepsTheBias: with the bias shares given, the centered
// weights move mass between the groups only (their bias share sums to 0),
// and the model still gains.
func TestGroupQPKeepsTheBias(t *testing.T) {
	const k = 3
	a := []float64{1, 1, 1, 0.5, 0.8, -0.2}
	g := make([]float64, 4*k*k)
	for i := range 2 * k {
		g[i*2*k+i] = 1
		if i+1 < 2*k {
			g[i*2*k+i+1], g[(i+1)*2*k+i] = 0.3, 0.3
		}
	}
	hi := []float64{2, 2, 2, 3, 3, 3}
	neutral := []float64{1, -2, 0.5}
	x := []float64{0.5, 0.5, 0.5, 0, 0, 0}
	GroupQP(x, a, g, hi, neutral)
	s := 0.0
	for j := range k {
		s += x[k+j] * neutral[j]
	}
	if math.Abs(s) > 1e-12 {
		t.Fatalf("centered weights %v move the bias by %v", x[k:], s)
	}
	if x[k] == 0 && x[k+1] == 0 && x[k+2] == 0 {
		t.Fatalf("no mass moved: %v", x)
	}
}

// TestFallToCoupling: after a cut round sigma' falls halfway in logarithm
// towards a smaller coupling, never below 1, and never rises.
func TestFallToCoupling(t *testing.T) {
	for _, tc := range []struct{ sigma, rho, want float64 }{
		{sigma: 16, rho: 1, want: 4},   // halfway in logarithm
		{sigma: 2, rho: 0.25, want: 1}, // never below 1
		{sigma: 4, rho: 16, want: 4},   // a cut round never raises it
		{sigma: 8, rho: 8, want: 8},    // at the coupling: stays
		{sigma: 8, rho: 0, want: 8},    // not measured
		{sigma: 8, rho: math.NaN(), want: 8},
	} {
		if got := FallToCoupling(tc.sigma, tc.rho); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("FallToCoupling(%v, %v) = %v, want %v", tc.sigma, tc.rho, got, tc.want)
		}
	}
}
