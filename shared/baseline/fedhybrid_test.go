package baseline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// The FedHybrid federation of these tests: 400 samples x 10 features (the
// last the bias), 5% label noise, 20% held out, 4 participants holding all
// features of 100 samples each.
var (
	fedHybridOnce sync.Once
	fedHybridFed  *prepared
	fedHybridErr  error
)

func fedHybridFederation(t *testing.T) *prepared {
	t.Helper()
	fedHybridOnce.Do(func() {
		fedHybridFed, fedHybridErr = prepare("synthetic:400,10,1,0.05,3", 0.2, "horizontal:4")
	})
	if fedHybridErr != nil {
		t.Fatal(fedHybridErr)
	}
	return fedHybridFed
}

// fedHybridCentral minimizes P(w) = (1/N) sum_train l(y_n, x_n.w) +
// lambda/2 ||w||^2 on the pooled training samples with Newton's method
// (gonum Cholesky) until the gradient vanishes to rounding: the w* the
// federated runs are measured against.
func fedHybridCentral(t *testing.T, d *dataset.Dataset, l fedHybridLoss, lambda float64) []float64 {
	t.Helper()
	m := d.M()
	w := make([]float64, m)
	n := float64(d.NumTrain())
	for it := 0; ; it++ {
		if it == 100 {
			t.Fatal("central Newton did not converge")
		}
		g := make([]float64, m)
		h := mat.NewSymDense(m, nil)
		for i := 0; i < d.N(); i++ {
			if d.Heldout[i] {
				continue
			}
			x := make([]float64, m)
			d.X.AddRowTo(i, 1, x)
			z := d.X.Dot(i, w)
			c1, c2 := l.deriv(z, d.Y[i])/n, l.second(z, d.Y[i])/n
			for j := range x {
				g[j] += c1 * x[j]
				for k := j; k < m; k++ {
					h.SetSym(j, k, h.At(j, k)+c2*x[j]*x[k])
				}
			}
		}
		gn := 0.0
		for j := range g {
			g[j] += lambda * w[j]
			h.SetSym(j, j, h.At(j, j)+lambda)
			gn += g[j] * g[j]
		}
		if math.Sqrt(gn) < 1e-15 {
			return w
		}
		var ch mat.Cholesky
		if !ch.Factorize(h) {
			t.Fatal("central Hessian not positive definite")
		}
		var dir mat.VecDense
		if err := ch.SolveVecTo(&dir, mat.NewVecDense(m, g)); err != nil {
			t.Fatal(err)
		}
		for j := range w {
			w[j] -= dir.AtVec(j)
		}
	}
}

// fedHybridErrors returns e_t = ||x_0^t - w*|| for t = 0 (x_0^0 = 0) and
// every recorded round.
func fedHybridErrors(hist []FedHybridRound, ws []float64) []float64 {
	dist := func(w []float64) float64 {
		s := 0.0
		for j := range ws {
			s += (w[j] - ws[j]) * (w[j] - ws[j])
		}
		return math.Sqrt(s)
	}
	out := []float64{dist(make([]float64, len(ws)))}
	for _, r := range hist {
		out = append(out, dist(r.W))
	}
	return out
}

// firstBelow returns the first t with e[t] <= tol, or -1.
func fedHybridFirstBelow(e []float64, tol float64) int {
	for t, v := range e {
		if v <= tol {
			return t
		}
	}
	return -1
}

func fedHybridClose(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-12 {
			t.Errorf("%s = %v, want %v", what, got, want)
			return
		}
	}
}

// fedHybridMatrix stores rows dense or sparse (the two Hessian paths).
func fedHybridMatrix(rows [][]float64, sparse bool) *dataset.Matrix {
	if !sparse {
		m := dataset.NewDense(len(rows), len(rows[0]))
		for i, r := range rows {
			copy(m.Data[i*m.Cols:], r)
		}
		return m
	}
	m := dataset.NewSparseBuilder(len(rows[0]))
	for _, r := range rows {
		var idx []int32
		var val []float64
		for j, v := range r {
			if v != 0 {
				idx, val = append(idx, int32(j)), append(val, v)
			}
		}
		m.AppendRow(idx, val)
	}
	return m
}

// The local updates of Algorithm 1 (lines 5-6 and 9-10) on two examples
// written out by hand, each with the block stored dense and sparse.
//
// Example 1, logistic: one sample x = (1, 2), y = +1 of N = 2 training
// samples in all, lambda = 0.5 (so lambda N_i/N = 0.25), mu = 1, a = 0.5,
// b = 0.25, x_i = (0, 0), lambda_i = (0.1, -0.2), x_0 = (0.5, 0).
//
//	z = 0, l'(0) = -sigma(0) = -0.5, l''(0) = 0.25
//	grad f_i = (1/2)(-0.5)(1, 2) + 0.25 (0, 0) = (-0.25, -0.5)
//	grad_i = grad f_i - lambda_i + mu (x_i - x_0) = (-0.25-0.1-0.5, -0.5+0.2-0) = (-0.85, -0.3)
//	gradient-type: x_i' = x_i - 0.5 grad_i = (0.425, 0.15)
//	               lambda_i' = lambda_i + 0.25 (x_0 - x_i) = (0.225, -0.2)
//	Newton-type:   D = (1/2)(0.25)[1 2; 2 4] + 0.25 I + 1 I = [1.375 0.25; 0.25 1.75], det 2.34375
//	               D^-1 grad_i = [1.75 -0.25; -0.25 1.375](-0.85, -0.3)/2.34375 = (-1.4125, -0.2)/2.34375
//	               x_i' = x_i - 0.5 D^-1 grad_i = (0.30133.., 0.042666..)
//	               lambda_i' = lambda_i + 0.25 D (0.5, 0) = (0.1+0.171875, -0.2+0.03125) = (0.271875, -0.16875)
//
// Example 2, squared hinge: x_1 = (1, 0), y_1 = +1; x_2 = (1, 1), y_2 = -1;
// N = 4, lambda = 0.2 (lambda N_i/N = 0.1), mu = 0.5, x_i = lambda_i = 0,
// x_0 = (1, 1); Newton a = 1, b = 0.5; gradient a = 0.5, b = 0.5.
//
//	z = 0 for both: l' = -2y, l'' = 2
//	grad f_i = (1/4)(-2 (1, 0) + 2 (1, 1)) = (0, 0.5)
//	grad_i = (0, 0.5) - 0 + 0.5 ((0, 0) - (1, 1)) = (-0.5, 0)
//	gradient-type: x_i' = -0.5 grad_i = (0.25, 0), lambda_i' = 0.5 (1, 1) = (0.5, 0.5)
//	Newton-type:   D = (1/4)(2)([1 0; 0 0] + [1 1; 1 1]) + 0.1 I + 0.5 I = [1.6 0.5; 0.5 1.1], det 1.51
//	               D^-1 grad_i = [1.1 -0.5; -0.5 1.6](-0.5, 0)/1.51 = (-0.55, 0.25)/1.51
//	               x_i' = (0.55, -0.25)/1.51, lambda_i' = 0.5 D (1, 1) = 0.5 (2.1, 1.6) = (1.05, 0.8)
func TestFedHybridLocalStepHandComputed(t *testing.T) {
	type example struct {
		name                  string
		loss                  fedHybridLoss
		rows                  [][]float64
		y                     []float64
		nTotal, lambda, mu    float64
		x, lam, x0            []float64
		newton                bool
		a, b                  float64
		wantX, wantLam        []float64
		wantGrad, wantNewtonD []float64 // grad f_i(x_i); D row-major (Newton only)
	}
	ex := []example{
		{
			name: "logistic gradient-type", loss: fedHybridLogistic, rows: [][]float64{{1, 2}}, y: []float64{1},
			nTotal: 2, lambda: 0.5, mu: 1, x: []float64{0, 0}, lam: []float64{0.1, -0.2}, x0: []float64{0.5, 0},
			a: 0.5, b: 0.25, wantX: []float64{0.425, 0.15}, wantLam: []float64{0.225, -0.2},
			wantGrad: []float64{-0.25, -0.5},
		},
		{
			name: "logistic Newton-type", loss: fedHybridLogistic, rows: [][]float64{{1, 2}}, y: []float64{1},
			nTotal: 2, lambda: 0.5, mu: 1, x: []float64{0, 0}, lam: []float64{0.1, -0.2}, x0: []float64{0.5, 0},
			newton: true, a: 0.5, b: 0.25,
			wantX: []float64{0.5 * 1.4125 / 2.34375, 0.5 * 0.2 / 2.34375}, wantLam: []float64{0.271875, -0.16875},
			wantGrad: []float64{-0.25, -0.5}, wantNewtonD: []float64{1.375, 0.25, 0.25, 1.75},
		},
		{
			name: "squared hinge gradient-type", loss: fedHybridSquaredHinge, rows: [][]float64{{1, 0}, {1, 1}}, y: []float64{1, -1},
			nTotal: 4, lambda: 0.2, mu: 0.5, x: []float64{0, 0}, lam: []float64{0, 0}, x0: []float64{1, 1},
			a: 0.5, b: 0.5, wantX: []float64{0.25, 0}, wantLam: []float64{0.5, 0.5},
			wantGrad: []float64{0, 0.5},
		},
		{
			name: "squared hinge Newton-type", loss: fedHybridSquaredHinge, rows: [][]float64{{1, 0}, {1, 1}}, y: []float64{1, -1},
			nTotal: 4, lambda: 0.2, mu: 0.5, x: []float64{0, 0}, lam: []float64{0, 0}, x0: []float64{1, 1},
			newton: true, a: 1, b: 0.5, wantX: []float64{0.55 / 1.51, -0.25 / 1.51}, wantLam: []float64{1.05, 0.8},
			wantGrad: []float64{0, 0.5}, wantNewtonD: []float64{1.6, 0.5, 0.5, 1.1},
		},
	}
	for _, e := range ex {
		for _, sparse := range []bool{false, true} {
			name := fmt.Sprintf("%s sparse=%v", e.name, sparse)
			p := &fedHybridParticipant{
				newton: e.newton, a: e.a, b: e.b, mu: e.mu, loss: e.loss, lambda: e.lambda, nTotal: e.nTotal,
				x: append([]float64(nil), e.x...), lam: append([]float64(nil), e.lam...),
				X: fedHybridMatrix(e.rows, sparse), y: e.y,
			}
			fedHybridClose(t, name+": grad f_i", p.gradient(p.x), e.wantGrad)
			if e.newton {
				p.newtonMatrix(p.x)
				fedHybridClose(t, name+": D", []float64{p.hess.At(0, 0), p.hess.At(0, 1), p.hess.At(1, 0), p.hess.At(1, 1)}, e.wantNewtonD)
			}
			if err := p.step(e.x0); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fedHybridClose(t, name+": x_i", p.x, e.wantX)
			fedHybridClose(t, name+": lambda_i", p.lam, e.wantLam)
		}
	}
}

// The losses' first and second derivatives match central differences of
// their values (away from the squared hinge's kink at y z = 1).
func TestFedHybridLossDerivatives(t *testing.T) {
	const h = 1e-5
	for _, l := range []fedHybridLoss{fedHybridLogistic, fedHybridSquaredHinge} {
		for _, y := range []float64{1, -1} {
			for _, z := range []float64{-30, -3, -0.7, 0, 0.4, 2.5, 30} {
				d1 := (l.value(z+h, y) - l.value(z-h, y)) / (2 * h)
				d2 := (l.deriv(z+h, y) - l.deriv(z-h, y)) / (2 * h)
				if math.Abs(d1-l.deriv(z, y)) > 1e-6*math.Max(1, math.Abs(d1)) || math.Abs(d2-l.second(z, y)) > 1e-6 {
					t.Errorf("%v y=%v z=%v: l' %v (numeric %v), l'' %v (numeric %v)", l, y, z, l.deriv(z, y), d1, l.second(z, y), d2)
				}
			}
		}
	}
}

// The required test (issue 6): all four participants Newton-type on a
// strongly convex problem (logistic, lambda = 0.1), plaintext scheme. The
// error e_t = ||x_0^t - w*||, w* from the centralized Newton solve, must
// shrink by at least q every round until it reaches 1e-10. Measured here
// with mu = 0.03, a_i = 1, b_i = 0.3 (the best of a grid over mu and b):
// e_0 = 1.27, the ratio e_{t+1}/e_t is 0.404 in round 1 (the largest), then
// 0.33-0.36 every round, and e reaches 1e-10 in round 23 (7.6e-11); it
// ends at ~4e-16, rounding. q = 0.5 leaves a margin of 0.1 over the worst
// round. (With the default mu and steps the ratio is 0.42-0.70, 1e-10 in
// round 35.)
func TestFedHybridNewtonLinearRate(t *testing.T) {
	p := fedHybridFederation(t)
	const lambda, q = 0.1, 0.5
	ws := fedHybridCentral(t, p.Data, fedHybridLogistic, lambda)
	hist, err := RunFedHybrid(context.Background(), p.Data, p.Blocks, FedHybridOptions{
		Loss: "logistic", Lambda: lambda, Rounds: 40, Mode: "newton", Mu: 0.03, A: []float64{1}, B: []float64{0.3}, Scheme: "plaintext",
	})
	if err != nil {
		t.Fatal(err)
	}
	e := fedHybridErrors(hist, ws)
	end := fedHybridFirstBelow(e, 1e-10)
	if end < 0 {
		t.Fatalf("error never reached 1e-10: %v", e)
	}
	worst := 0.0
	for k := 0; k < end; k++ {
		r := e[k+1] / e[k]
		worst = math.Max(worst, r)
		if r >= q {
			t.Errorf("round %d: e = %.3g after %.3g, ratio %.3f >= q = %v", k+1, e[k+1], e[k], r, q)
		}
	}
	t.Logf("e_0 = %.3g, 1e-10 at round %d (e = %.3g), worst ratio %.3f, last ratio %.3f", e[0], end, e[end], worst, e[end]/e[end-1])
	// The consensus reaches the centralized optimum to rounding.
	if last := e[len(e)-1]; last > 1e-13 {
		t.Errorf("final error %.3g, want ~rounding", last)
	}
}

// Gradient-type participants converge too, and slower; a mix of both lies
// in between; with half the participants active per round (stale sealed
// vectors for the others) they still converge. Defaults for mu and the
// step sizes, lambda = 0.01. Measured (rounds to e <= 1e-6): Newton 56,
// mixed 117, gradient 172; at fraction 0.5 (seed 7): 149, 201, 341.
func TestFedHybridGradientAndMixed(t *testing.T) {
	p := fedHybridFederation(t)
	const lambda = 0.01
	ws := fedHybridCentral(t, p.Data, fedHybridLogistic, lambda)
	pstar, _, _ := fedHybridObjectives(p.Data, fedHybridLogistic, lambda, ws)
	reach := map[string]int{}
	for _, mode := range []string{"newton", "mixed", "gradient"} {
		for _, frac := range []float64{1, 0.5} {
			name := fmt.Sprintf("%s fraction %v", mode, frac)
			hist, err := RunFedHybrid(context.Background(), p.Data, p.Blocks, FedHybridOptions{
				Lambda: lambda, Rounds: 450, Mode: mode, Fraction: frac, Seed: 7, Scheme: "plaintext",
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			e := fedHybridErrors(hist, ws)
			reach[name] = fedHybridFirstBelow(e, 1e-6)
			if reach[name] < 0 {
				t.Errorf("%s: error %.3g after %d rounds, want <= 1e-6", name, e[len(e)-1], len(hist))
			}
			last := hist[len(hist)-1]
			if rel := (last.Primal - pstar) / pstar; math.Abs(rel) > 1e-10 {
				t.Errorf("%s: P = %.12g, P* = %.12g", name, last.Primal, pstar)
			}
			if frac < 1 {
				partial := 0
				for _, r := range hist {
					if r.Active < 4 {
						partial++
					}
				}
				if partial == 0 || partial == len(hist) {
					t.Errorf("%s: %d of %d rounds with fewer than 4 active", name, partial, len(hist))
				}
			}
		}
	}
	t.Logf("rounds to 1e-6: %v", reach)
	for _, frac := range []string{"1", "0.5"} {
		n, m, g := reach["newton fraction "+frac], reach["mixed fraction "+frac], reach["gradient fraction "+frac]
		if !(n < m && m < g) {
			t.Errorf("fraction %s: rounds to 1e-6 newton %d, mixed %d, gradient %d: want newton < mixed < gradient", frac, n, m, g)
		}
	}
}

// The squared hinge runs as well, Newton-type with its generalized Hessian,
// and reaches its centralized optimum (measured with the defaults: 1e-10 at
// round 94).
func TestFedHybridSquaredHinge(t *testing.T) {
	p := fedHybridFederation(t)
	const lambda = 0.1
	ws := fedHybridCentral(t, p.Data, fedHybridSquaredHinge, lambda)
	hist, err := RunFedHybrid(context.Background(), p.Data, p.Blocks, FedHybridOptions{
		Loss: "squared_hinge", Lambda: lambda, Rounds: 130, Mode: "newton", Scheme: "plaintext",
	})
	if err != nil {
		t.Fatal(err)
	}
	e := fedHybridErrors(hist, ws)
	if last := e[len(e)-1]; last > 1e-10 {
		t.Errorf("squared hinge: error %.3g after %d rounds", last, len(hist))
	}
	if acc := hist[len(hist)-1].HeldAcc; acc < 0.8 {
		t.Errorf("held-out accuracy %.3f", acc)
	}
}

// Sealed sums are exact in both schemes, so an encrypted run is the
// plaintext run bit for bit (mixed types, partial participation).
func TestFedHybridBGVEqualsPlaintext(t *testing.T) {
	p := fedHybridFederation(t)
	o := FedHybridOptions{Lambda: 0.01, Rounds: 12, Mode: "mixed", Fraction: 0.75, Seed: 3}
	var runs [2][]FedHybridRound
	for k, scheme := range []string{"plaintext", "bgv"} {
		o.Scheme = scheme
		hist, err := RunFedHybrid(context.Background(), p.Data, p.Blocks, o)
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		runs[k] = hist
	}
	for r := range runs[0] {
		a, b := runs[0][r], runs[1][r]
		if a.Primal != b.Primal || a.Active != b.Active || a.TrainAcc != b.TrainAcc || a.HeldAcc != b.HeldAcc {
			t.Fatalf("round %d: plaintext %+v, bgv %+v", r+1, a, b)
		}
		for j := range a.W {
			if a.W[j] != b.W[j] {
				t.Fatalf("round %d: w[%d] plaintext %v, bgv %v", r+1, j, a.W[j], b.W[j])
			}
		}
	}
}

// The two-limb sealing carries a sum to 2^-56, not the 2^-28 of one slot,
// and refuses values that could wrap the sum.
func TestFedHybridSealTwoLimbs(t *testing.T) {
	for _, name := range []string{"plaintext", "bgv"} {
		s, err := seal.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		vs := [][]float64{{1.0 / 3, -math.Pi, 1e-12}, {math.E, 1.0 / 7, -2e-12}, {-0.1, 12345.678901234, 5e-13}}
		var sealed []seal.Vec
		want := make([]float64, 3)
		for _, v := range vs {
			k, err := seal.NewKeyFor(s, secret.FromSeed(1).Derive(seal.KeyPurpose))
			if err != nil {
				t.Fatal(err)
			}
			sv, err := fedHybridSeal(k, v, 1000*1000)
			if err != nil {
				t.Fatal(err)
			}
			sealed = append(sealed, sv)
			for j := range v {
				want[j] += v[j]
			}
		}
		sum, err := seal.Sum(s, sealed...)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := seal.NewKeyFor(s, secret.FromSeed(1).Derive(seal.KeyPurpose))
		got, err := fedHybridOpen(k, sum, 3)
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if math.Abs(got[j]-want[j]) > 3*math.Ldexp(1, -56)+4*math.Abs(want[j])*0x1p-52 {
				t.Errorf("%s: sum[%d] = %.17g, want %.17g (diff %.3g)", name, j, got[j], want[j], got[j]-want[j])
			}
		}
		if _, err := fedHybridSeal(k, []float64{1, 20000}, 16384); err == nil || !strings.Contains(err.Error(), "beyond") {
			t.Errorf("%s: value beyond the bound: err %v", name, err)
		}
	}
}

// Bad options are refused with an error naming the field; so are a
// non-horizontal partition and a non-smooth loss.
func TestFedHybridBadOptions(t *testing.T) {
	p := fedHybridFederation(t)
	good := FedHybridOptions{Lambda: 0.01, Rounds: 2, Scheme: "plaintext"}
	cases := []struct {
		name  string
		edit  func(o *FedHybridOptions)
		field string
	}{
		{"rounds", func(o *FedHybridOptions) { o.Rounds = 0 }, "Rounds"},
		{"lambda", func(o *FedHybridOptions) { o.Lambda = -1 }, "Lambda"},
		{"lambda NaN", func(o *FedHybridOptions) { o.Lambda = math.NaN() }, "Lambda"},
		{"mu", func(o *FedHybridOptions) { o.Mu = -0.5 }, "Mu"},
		{"mu inf", func(o *FedHybridOptions) { o.Mu = math.Inf(1) }, "Mu"},
		{"fraction", func(o *FedHybridOptions) { o.Fraction = 1.5 }, "Fraction"},
		{"mode", func(o *FedHybridOptions) { o.Mode = "quasi" }, "Mode"},
		{"newton length", func(o *FedHybridOptions) { o.Newton = []bool{true, false} }, "Newton"},
		{"a length", func(o *FedHybridOptions) { o.A = []float64{1, 1} }, "A has 2"},
		{"a negative", func(o *FedHybridOptions) { o.A = []float64{1, 1, -1, 1} }, "A[2]"},
		{"b zero", func(o *FedHybridOptions) { o.B = []float64{0} }, "B[0]"},
		{"loss", func(o *FedHybridOptions) { o.Loss = "hinge" }, "Loss"},
		{"loss name", func(o *FedHybridOptions) { o.Loss = "exp" }, "Loss"},
		{"scheme", func(o *FedHybridOptions) { o.Scheme = "ckks" }, "Scheme"},
	}
	for _, c := range cases {
		o := good
		c.edit(&o)
		_, err := RunFedHybrid(context.Background(), p.Data, p.Blocks, o)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err %v, want one naming %s", c.name, err, c.field)
		}
	}
	if _, err := RunFedHybrid(context.Background(), p.Data, p.Blocks, good); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for _, spec := range []string{"vertical:2", "grid:2,2"} {
		s, err := partition.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := s.Split(p.Data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := RunFedHybrid(context.Background(), p.Data, blocks, good); err == nil || !strings.Contains(err.Error(), "horizontal") {
			t.Errorf("%s: err %v, want a refusal naming the horizontal partition", spec, err)
		}
	}
	if _, err := RunFedHybrid(context.Background(), p.Data, p.Blocks[:3], good); err == nil {
		t.Error("blocks missing samples: no error")
	}
	if _, err := RunFedHybrid(context.Background(), nil, p.Blocks, good); err == nil {
		t.Error("no data set: no error")
	}
}

// A cancelled context stops the run with its error.
func TestFedHybridCancel(t *testing.T) {
	p := fedHybridFederation(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hist, err := RunFedHybrid(ctx, p.Data, p.Blocks, FedHybridOptions{Lambda: 0.01, Rounds: 5, Scheme: "plaintext"})
	if !errors.Is(err, context.Canceled) || len(hist) != 0 {
		t.Errorf("got %d rounds, err %v; want none and context.Canceled", len(hist), err)
	}
}

// Four hospitals, each holding all features of its own patients, train a
// logistic model with FedHybrid: two take Newton-type steps, two
// gradient-type; the server only ever adds BGV ciphertexts.
func ExampleRunFedHybrid() {
	p, err := prepare("synthetic:400,10,1,0.05,3", 0.2, "horizontal:4")
	if err != nil {
		fmt.Println(err)
		return
	}
	hist, err := RunFedHybrid(context.Background(), p.Data, p.Blocks, FedHybridOptions{
		Loss: "logistic", Lambda: 0.01, Rounds: 150, Newton: []bool{true, true, false, false}, Scheme: "bgv",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range []FedHybridRound{hist[0], hist[9], hist[149]} {
		fmt.Printf("round %3d: P = %.6f, held-out accuracy %.3f\n", r.Round, r.Primal, r.HeldAcc)
	}
	// Output:
	// round   1: P = 0.461019, held-out accuracy 0.908
	// round  10: P = 0.344725, held-out accuracy 0.929
	// round 150: P = 0.339156, held-out accuracy 0.939
}
