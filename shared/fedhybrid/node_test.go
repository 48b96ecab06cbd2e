package fedhybrid

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

func closeTo(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-12 {
			t.Errorf("%s = %v, want %v", what, got, want)
			return
		}
	}
}

// matrixOf stores rows dense or sparse (the two Hessian paths).
func matrixOf(rows [][]float64, sparse bool) *dataset.Matrix {
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

// The local updates of Algorithm 1 (lines 5-6 and 9-10) on an example
// written out by hand, with the block stored dense and sparse: one sample x = (1, 2), y = +1 of N = 2 training
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

func TestLocalStepHandComputed(t *testing.T) {
	type example struct {
		name                  string
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
			name: "logistic gradient-type", rows: [][]float64{{1, 2}}, y: []float64{1},
			nTotal: 2, lambda: 0.5, mu: 1, x: []float64{0, 0}, lam: []float64{0.1, -0.2}, x0: []float64{0.5, 0},
			a: 0.5, b: 0.25, wantX: []float64{0.425, 0.15}, wantLam: []float64{0.225, -0.2},
			wantGrad: []float64{-0.25, -0.5},
		},
		{
			name: "logistic Newton-type", rows: [][]float64{{1, 2}}, y: []float64{1},
			nTotal: 2, lambda: 0.5, mu: 1, x: []float64{0, 0}, lam: []float64{0.1, -0.2}, x0: []float64{0.5, 0},
			newton: true, a: 0.5, b: 0.25,
			wantX: []float64{0.5 * 1.4125 / 2.34375, 0.5 * 0.2 / 2.34375}, wantLam: []float64{0.271875, -0.16875},
			wantGrad: []float64{-0.25, -0.5}, wantNewtonD: []float64{1.375, 0.25, 0.25, 1.75},
		},
	}
	for _, e := range ex {
		for _, sparse := range []bool{false, true} {
			name := fmt.Sprintf("%s sparse=%v", e.name, sparse)
			p := &Node{
				newton: e.newton, a: e.a, b: e.b, mu: e.mu, lambda: e.lambda, nTotal: e.nTotal,
				x: append([]float64(nil), e.x...), lam: append([]float64(nil), e.lam...),
				X: matrixOf(e.rows, sparse), y: e.y,
			}
			closeTo(t, name+": grad f_i", p.gradient(p.x), e.wantGrad)
			if e.newton {
				p.newtonMatrix(p.x)
				closeTo(t, name+": D", []float64{p.hess.Data[0], p.hess.Data[1], p.hess.Data[1], p.hess.Data[p.hess.Stride+1]}, e.wantNewtonD)
			}
			if err := p.step(e.x0); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			closeTo(t, name+": x_i", p.x, e.wantX)
			closeTo(t, name+": lambda_i", p.lam, e.wantLam)
		}
	}
}

// The loss's first and second derivatives match central differences of
// its values.
func TestLossDerivatives(t *testing.T) {
	const h = 1e-5
	for _, l := range []logisticLoss{{}} {
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

// The two-limb sealing carries a sum to 2^-56, not the 2^-28 of one slot,
// and refuses values that could wrap the sum.
func TestSealTwoLimbs(t *testing.T) {
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
			sv, err := sealSummand(k, v, 1000*1000)
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
		got, err := Open(k, sum, 3)
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if math.Abs(got[j]-want[j]) > 3*math.Ldexp(1, -56)+4*math.Abs(want[j])*0x1p-52 {
				t.Errorf("%s: sum[%d] = %.17g, want %.17g (diff %.3g)", name, j, got[j], want[j], got[j]-want[j])
			}
		}
		if _, err := sealSummand(k, []float64{1, 20000}, 16384); err == nil || !strings.Contains(err.Error(), "beyond") {
			t.Errorf("%s: value beyond the bound: err %v", name, err)
		}
	}
}
