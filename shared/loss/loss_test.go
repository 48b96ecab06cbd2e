package loss

import (
	"math"
	"testing"
)

// dualGain is the change of N*D when coordinate a moves by delta with w
// fixed: -l*(-(a+delta)) + l*(-a) - delta z - delta^2 q/(2 lambda N).
func dualGain(l Loss, a, y, z, q, lambdaN, delta float64) float64 {
	return l.Conj(a+delta, y) - l.Conj(a, y) - delta*z - delta*delta*q/(2*lambdaN)
}

// bruteStep maximises the gain over a fine grid of feasible b = (a+delta) y.
func bruteStep(l Loss, a, y, z, q, lambdaN float64) float64 {
	best, bestB := math.Inf(-1), 0.0
	const n = 200000
	for i := 0; i <= n; i++ {
		b := float64(i) / n
		if g := dualGain(l, a, y, z, q, lambdaN, y*b-a); g > best {
			best, bestB = g, b
		}
	}
	return y*bestB - a
}

func TestStepMatchesBruteForce(t *testing.T) {
	cases := []struct {
		name             string
		a, y, z, q, lamN float64
	}{
		{"inside margin positive", 0.2, 1, 0.3, 2.5, 1.7},
		{"inside margin negative", -0.4, -1, -0.1, 1.2, 0.9},
		{"clipped at 1", 0, 1, -3, 0.5, 4},
		{"clipped at 0", 0.7, 1, 5, 0.5, 0.3},
		{"negative label clipped", -0.9, -1, 4, 3, 2},
		{"large norm", 0.5, 1, 0.9, 800, 60},
		{"bias-like norm", 0.1, -1, 0.4, 110, 20},
	}
	for _, l := range []Loss{Hinge{}, Logistic{}} {
		for _, c := range cases {
			t.Run(l.Name()+"/"+c.name, func(t *testing.T) {
				got := l.Step(c.a, c.y, c.z, c.q, c.lamN)
				want := bruteStep(l, c.a, c.y, c.z, c.q, c.lamN)
				gGot := dualGain(l, c.a, c.y, c.z, c.q, c.lamN, got)
				gWant := dualGain(l, c.a, c.y, c.z, c.q, c.lamN, want)
				// The closed form must be at least as good as the grid and
				// land next to its maximiser.
				if gGot < gWant-1e-9 {
					t.Errorf("step %v gains %v, brute force %v gains %v", got, gGot, want, gWant)
				}
				if math.Abs(got-want) > 2e-5 {
					t.Errorf("step %v, brute force %v", got, want)
				}
				if b := (c.a + got) * c.y; b < -1e-12 || b > 1+1e-12 {
					t.Errorf("step leaves b=%v outside [0,1]", b)
				}
			})
		}
	}
}

func TestHingeStepIsNotThePaperFormula(t *testing.T) {
	// The published formula ignores ||x||^2 and the label in the margin;
	// with q != 1 and y = -1 the two differ.
	a, y, z, q, lamN := -0.1, -1.0, 0.2, 4.0, 1.0
	paper := y*math.Max(0, math.Min(1, lamN*(1-z)+y*a)) - a
	if got := (Hinge{}).Step(a, y, z, q, lamN); math.Abs(got-paper) < 1e-6 {
		t.Fatalf("closed form %v equals the paper's simplified formula", got)
	}
}

func TestValuesAndConjugates(t *testing.T) {
	tests := []struct {
		l       Loss
		z, y, v float64
	}{
		{Hinge{}, 0.5, 1, 0.5},
		{Hinge{}, 2, 1, 0},
		{Hinge{}, 0.5, -1, 1.5},
		{Logistic{}, 0, 1, math.Log(2)},
		{Logistic{}, 800, -1, 800},
		{Logistic{}, 800, 1, 0},
	}
	for _, tc := range tests {
		if got := tc.l.Value(tc.z, tc.y); math.Abs(got-tc.v) > 1e-12 {
			t.Errorf("%s(%v,%v) = %v, want %v", tc.l.Name(), tc.z, tc.y, got, tc.v)
		}
	}
	if got := (Logistic{}).Conj(0.5, 1); math.Abs(got-math.Log(2)) > 1e-12 {
		t.Errorf("logistic conjugate at b=1/2 = %v, want log 2", got)
	}
	if got := (Hinge{}).Conj(-0.25, -1); got != 0.25 {
		t.Errorf("hinge conjugate = %v, want 0.25", got)
	}
	if _, err := Parse("squared"); err == nil {
		t.Error("Parse accepted an unknown loss")
	}
}
