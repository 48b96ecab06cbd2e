package solve

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/gram"
	"github.com/hyfed/hyfed/shared/loss"
)

// solveCase is a group subproblem as a holder meets it: h picks of sparse
// rows with a bias feature (the stiff direction of every Gram), dual values
// inside the box, margins from some w. It returns the subproblem, the rows
// and their Gram.
func solveCase(t testing.TB, l loss.Loss, h int, seed uint64) (Sub, *dataset.Matrix, []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	const m = 200
	x := dataset.NewDense(h, m+1)
	for r := range h {
		for j := 0; j < 10; j++ {
			x.Data[r*(m+1)+rng.IntN(m)] = rng.NormFloat64()
		}
		x.Data[r*(m+1)+m] = 1 // the bias
	}
	s := Sub{Loss: l, LambdaN: 0.5}
	for range h {
		y := float64(1 - 2*rng.IntN(2))
		s.Y = append(s.Y, y)
		s.Alpha = append(s.Alpha, y*(0.05+0.9*rng.Float64()))
		s.Z = append(s.Z, rng.NormFloat64())
	}
	a := make([]float64, h*h)
	for r := range h {
		for c := range h {
			a[r*h+c] = x.Dot(r, x.Data[c*(m+1):(c+1)*(m+1)])
		}
	}
	return s, x, a
}

// objective is the subproblem Group maximises (times N).
func objective(s Sub, a []float64, sigma float64, d []float64) float64 {
	h := len(s.Y)
	v := 0.0
	for r := range h {
		v += s.Loss.Conj(s.Alpha[r]+d[r], s.Y[r]) - s.Loss.Conj(s.Alpha[r], s.Y[r]) - d[r]*s.Z[r]
		ad := 0.0
		for c := range h {
			ad += a[r*h+c] * d[c]
		}
		v -= sigma * d[r] * ad / (2 * s.LambdaN)
	}
	return v
}

// TestGroupNearOptimum: the group solve, which stops once a sweep adds
// less than SweepGain of its gain, ends within 1e-3 of the subproblem's
// optimum (a reference run of 5,000 plain sweeps), with every dual value
// inside its box, on both losses.
func TestGroupNearOptimum(t *testing.T) {
	for _, l := range []loss.Loss{loss.Hinge{}, loss.Logistic{}} {
		for seed := uint64(1); seed <= 3; seed++ {
			s, _, a := solveCase(t, l, 150, seed)
			h := len(s.Y)
			const sigma = 2
			d := Group(s, NewGram(a, h), sigma, nil, nil)
			got := objective(s, a, sigma, d)
			ref, ad := make([]float64, h), make([]float64, h)
			for pass := 0; pass < 5000; pass++ {
				for x := range h {
					dl := l.Step(s.Alpha[x]+ref[x], s.Y[x], s.Z[x]+sigma*ad[x]/s.LambdaN, sigma*a[x*h+x], s.LambdaN)
					ref[x] += dl
					for c := range h {
						ad[c] += dl * a[x*h+c]
					}
				}
			}
			best := objective(s, a, sigma, ref)
			if !(got > 0) || got < best*(1-1e-3) {
				t.Errorf("%s seed %d: the solve gains %.9g, the optimum %.9g: short by %.2g of it", l.Name(), seed, got, best, 1-got/best)
			}
			for r := range h {
				if b := (s.Alpha[r] + d[r]) * s.Y[r]; b < -1e-12 || b > 1+1e-12 {
					t.Fatalf("%s seed %d: pick %d ends at a y = %v, outside [0, 1]", l.Name(), seed, r, b)
				}
			}
		}
	}
}

// TestModelsAgree: the row models give the Gram model's numbers, move by
// move: M d for the rows (Sr X X^T, and with shared directions the split
// model) and for the centered rows (CenterGram's Gram).
func TestModelsAgree(t *testing.T) {
	s, x, a := solveCase(t, loss.Hinge{}, 40, 4)
	h := len(s.Y)
	picks := make([]int, h)
	for i := range picks {
		picks[i] = i
	}
	ac := append([]float64(nil), a...)
	CenterGram(ac, h)
	split := gram.Split(append([]float64(nil), a...), h, 4, 2, 5)
	cases := []struct {
		name  string
		rows  Model
		dense []float64
	}{
		{"rows", NewRows(x, picks, gram.RowModel{Sr: 1}), a},
		{"split rows", NewRows(x, picks, gram.SplitRows(x, picks, x.Cols, 4, 2, 5)), split},
		{"centered rows", NewCenteredRows(x, picks), ac},
	}
	for _, c := range cases {
		g := NewGram(c.dense, h)
		rng := rand.New(rand.NewPCG(9, 9))
		for step := range 60 {
			k := rng.IntN(h)
			if d, e := g.Diag(k), c.rows.Diag(k); math.Abs(d-e) > 1e-9*math.Max(1, math.Abs(d)) {
				t.Fatalf("%s: diag %d: Gram %v, rows %v", c.name, k, d, e)
			}
			if d, e := g.At(k), c.rows.At(k); math.Abs(d-e) > 1e-9*math.Max(1, math.Abs(d)) {
				t.Fatalf("%s: step %d: (M d)_%d: Gram %v, rows %v", c.name, step, k, d, e)
			}
			dl := rng.NormFloat64()
			g.Move(k, dl)
			c.rows.Move(k, dl)
		}
	}
}

// TestCenterGram: the centered Gram's rows and columns sum to zero.
func TestCenterGram(t *testing.T) {
	_, _, a := solveCase(t, loss.Hinge{}, 25, 2)
	CenterGram(a, 25)
	for r := range 25 {
		row, col := 0.0, 0.0
		for c := range 25 {
			row += a[r*25+c]
			col += a[c*25+r]
		}
		if math.Abs(row) > 1e-9 || math.Abs(col) > 1e-9 {
			t.Fatalf("row %d sums to %v, column to %v", r, row, col)
		}
	}
}

// TestCandidates: the dual search prices 0, the maximiser and its
// multiples within the limit (and powers of two for a smooth loss); the
// primal search a grid up to twice the maximiser.
func TestCandidates(t *testing.T) {
	if got := Candidates(1, 1.5, false, false); len(got) != 5 || got[0] != 0 || got[1] != 1 || got[4] != 1.25 {
		t.Errorf("dual, limit 1.5: %v", got)
	}
	got := Candidates(1, 100, false, true)
	for _, g := range got {
		if g > 100 {
			t.Errorf("smooth: %v beyond the limit", g)
		}
	}
	if len(got) < 10 {
		t.Errorf("smooth: %d candidates, want the powers of two too", len(got))
	}
	if got := Candidates(1, 100, true, false); len(got) != 17 || got[len(got)-1] != 2 {
		t.Errorf("primal: %v", got)
	}
	if got := Candidates(0, 100, true, false); len(got) != 2 {
		t.Errorf("primal, no gain: %v", got)
	}
}

// BenchmarkGroup times one group solve of 450 picks (the sparse grid's
// H), the participant's main work a round under the block step.
func BenchmarkGroup(b *testing.B) {
	for _, l := range []loss.Loss{loss.Hinge{}, loss.Logistic{}} {
		b.Run(l.Name(), func(b *testing.B) {
			s, _, a := solveCase(b, l, 450, 1)
			for b.Loop() {
				Group(s, NewGram(a, len(s.Y)), 2, nil, nil)
			}
		})
	}
}
