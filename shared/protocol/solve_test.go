package protocol

import (
	"math/rand/v2"
	"testing"

	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
)

// solveCase is a group subproblem as a holder meets it: h picks of sparse
// rows with a bias feature (the stiff direction of every Gram), dual values
// inside the box, margins from some w.
func solveCase(t testing.TB, l loss.Loss, h int, seed uint64) (*Participant, []int, []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	const m = 200
	rows := make([][]float64, h)
	for r := range rows {
		x := make([]float64, m+1)
		for j := 0; j < 10; j++ {
			x[rng.IntN(m)] = rng.NormFloat64()
		}
		x[m] = 1 // the bias
		rows[r] = x
	}
	p := &Participant{loss: l, lambdaN: 0.5, block: &partition.Block{}}
	picks := make([]int, h)
	for r := range h {
		picks[r] = r
		y := float64(1 - 2*rng.IntN(2))
		p.block.Y = append(p.block.Y, y)
		p.alpha = append(p.alpha, y*(0.05+0.9*rng.Float64()))
		p.ip = append(p.ip, rng.NormFloat64())
	}
	a := make([]float64, h*h)
	for r := range h {
		for s := range h {
			for j, v := range rows[r] {
				a[r*h+s] += v * rows[s][j]
			}
		}
	}
	return p, picks, a
}

// subproblem is the objective solveGroup maximises (times N).
func subproblem(p *Participant, picks []int, a []float64, sigma float64, d []float64) float64 {
	h := len(picks)
	v := 0.0
	for r, i := range picks {
		y := p.block.Y[i]
		v += p.loss.Conj(p.alpha[i]+d[r], y) - p.loss.Conj(p.alpha[i], y) - d[r]*p.ip[i]
		ad := 0.0
		for s := range h {
			ad += a[r*h+s] * d[s]
		}
		v -= sigma * d[r] * ad / (2 * p.lambdaN)
	}
	return v
}

// TestSolveGroupNearOptimum: the group solve, which stops once a sweep adds
// less than solveSweepGain of its gain, ends within 1e-3 of the
// subproblem's optimum (a reference run of 5,000 plain sweeps), with
// every dual value inside its box, on both losses.
func TestSolveGroupNearOptimum(t *testing.T) {
	for _, l := range []loss.Loss{loss.Hinge{}, loss.Logistic{}} {
		for seed := uint64(1); seed <= 3; seed++ {
			p, picks, a := solveCase(t, l, 150, seed)
			const sigma = 2
			d := p.solveGroup(picks, a, sigma)
			got := subproblem(p, picks, a, sigma, d)
			// The reference: the same coordinate steps, far longer.
			h := len(picks)
			ref, ad := make([]float64, h), make([]float64, h)
			for pass := 0; pass < 5000; pass++ {
				for x := range h {
					i := picks[x]
					dl := l.Step(p.alpha[i]+ref[x], p.block.Y[i], p.ip[i]+sigma*ad[x]/p.lambdaN, sigma*a[x*h+x], p.lambdaN)
					ref[x] += dl
					for s := range h {
						ad[s] += dl * a[x*h+s]
					}
				}
			}
			best := subproblem(p, picks, a, sigma, ref)
			if !(got > 0) || got < best*(1-1e-3) {
				t.Errorf("%s seed %d: the solve gains %.9g, the optimum %.9g: short by %.2g of it", l.Name(), seed, got, best, 1-got/best)
			}
			for r, i := range picks {
				if b := (p.alpha[i] + d[r]) * p.block.Y[i]; b < -1e-12 || b > 1+1e-12 {
					t.Fatalf("%s seed %d: pick %d ends at a y = %v, outside [0, 1]", l.Name(), seed, r, b)
				}
			}
			t.Logf("%s seed %d: gain %.9g of %.9g (%.1e short)", l.Name(), seed, got, best, 1-got/best)
		}
	}
}

// BenchmarkSolveGroup times one group solve of 450 picks (the sparse
// grid's H), the participant's main work a round under the block step.
func BenchmarkSolveGroup(b *testing.B) {
	for _, l := range []loss.Loss{loss.Hinge{}, loss.Logistic{}} {
		b.Run(l.Name(), func(b *testing.B) {
			p, picks, a := solveCase(b, l, 450, 1)
			for b.Loop() {
				p.solveGroup(picks, a, 2)
			}
		})
	}
}
