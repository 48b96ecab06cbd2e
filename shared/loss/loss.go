// Package loss holds the per-sample losses of the primal problem, their
// conjugates as they enter the dual, and the closed-form or Newton
// coordinate step that maximises the dual in one coordinate.
//
// Conventions (docs/design.md section 1): P(w) = lambda/2 ||w||^2 + 1/N sum l_n(x_n.w),
// D(a) = 1/N sum -l*_n(-a_n) - lambda/2 ||w(a)||^2, w(a) = 1/(lambda N) sum a_n x_n.
// For both losses the dual variable is feasible iff b = a*y lies in [0, 1].
package loss

import (
	"fmt"
	"math"
)

// Loss is a convex, Lipschitz per-sample loss for labels y in {-1,+1}.
type Loss interface {
	// Name is the flag value: "hinge" or "logistic".
	Name() string
	// Value returns l(z) for margin input z = x.w and label y.
	Value(z, y float64) float64
	// Conj returns -l*(-a), the dual's per-sample term; a must be feasible.
	Conj(a, y float64) float64
	// Step returns the change delta of a that maximises
	// -l*(-(a+delta)) - delta*z - delta^2 q/(2 lambda N)
	// i.e. the dual in coordinate n with w held fixed, where z = x_n.w and
	// q = ||x_n||^2. The result keeps a+delta feasible.
	Step(a, y, z, q, lambdaN float64) float64
}

// Parse returns the loss with the given name.
func Parse(name string) (Loss, error) {
	switch name {
	case "hinge", "":
		return Hinge{}, nil
	case "logistic":
		return Logistic{}, nil
	}
	return nil, fmt.Errorf("loss %q: want hinge or logistic", name)
}

// Hinge is max(0, 1 - y z), the SVM loss.
type Hinge struct{}

// Name implements Loss.
func (Hinge) Name() string { return "hinge" }

// Value implements Loss.
func (Hinge) Value(z, y float64) float64 { return math.Max(0, 1-y*z) }

// Conj implements Loss: -l*(-a) = a y on the feasible set.
func (Hinge) Conj(a, y float64) float64 { return a * y }

// Step implements Loss with the closed form of docs/design.md section 1, which keeps
// ||x_n||^2 and the label inside the margin (the paper's Algorithm 5
// formula drops both).
func (Hinge) Step(a, y, z, q, lambdaN float64) float64 {
	b := a * y
	if q <= 0 {
		// A zero row does not move w: the dual term a*y alone is maximised at b=1.
		return y*1 - a
	}
	nb := lambdaN*(1-y*z)/q + b
	return y*clip01(nb) - a
}

// Logistic is log(1 + exp(-y z)).
type Logistic struct{}

// Name implements Loss.
func (Logistic) Name() string { return "logistic" }

// Value implements Loss, stable for large |z|.
func (Logistic) Value(z, y float64) float64 {
	m := -y * z
	if m > 0 {
		return m + math.Log1p(math.Exp(-m))
	}
	return math.Log1p(math.Exp(m))
}

// Conj implements Loss: -l*(-a) = binary entropy of b = a y.
func (Logistic) Conj(a, y float64) float64 { return entropy(a * y) }

func entropy(b float64) float64 {
	if b <= 0 || b >= 1 {
		return 0
	}
	return -b*math.Log(b) - (1-b)*math.Log(1-b)
}

// Step implements Loss by a safeguarded 1-D Newton method on the strictly
// concave problem in b' = (a+delta) y over (0, 1); there is no closed form.
func (Logistic) Step(a, y, z, q, lambdaN float64) float64 {
	b := a * y
	c := q / lambdaN
	// f'(t) = log((1-t)/t) - y z - (t - b) c, strictly decreasing on (0,1).
	df := func(t float64) float64 { return math.Log((1-t)/t) - y*z - (t-b)*c }
	const eps = 1e-15
	lo, hi := eps, 1-eps
	t := math.Min(math.Max(b, 1e-3), 1-1e-3)
	for it := 0; it < 60; it++ {
		g := df(t)
		if g > 0 {
			lo = t
		} else {
			hi = t
		}
		if math.Abs(g) < 1e-13 {
			break
		}
		h := -1/(t*(1-t)) - c
		nt := t - g/h
		if !(nt > lo && nt < hi) {
			nt = (lo + hi) / 2 // Newton left the bracket: bisect
		}
		if math.Abs(nt-t) < 1e-16 {
			t = nt
			break
		}
		t = nt
	}
	return y*t - a
}

func clip01(v float64) float64 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}
