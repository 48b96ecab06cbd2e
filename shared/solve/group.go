package solve

import (
	"math"

	"github.com/hyfed/hyfed/shared/loss"
)

// Sub is a sample group's dual subproblem at its picks, one entry a pick:
// the labels, the dual values and the margins x_i.w, with the loss and
// lambda N of the federation.
type Sub struct {
	Loss     loss.Loss
	Y, Alpha []float64
	Z        []float64
	LambdaN  float64
}

// Group maximises by coordinate ascent, from zero, the group's subproblem
// over the picks' dual changes d:
//
//	sum_i -l*(-(a_i + d_i)) - d.z - sigma/(2 lambda N) d^T M d   (times 1/N)
//
// with z the picks' margins: sequential SDCA on the picks against the
// model M, sweeping forward and backward, until a sweep adds less than
// SweepGain of what the solve has gained, or no coordinate moves by 1e-8
// (at most 300 sweeps). Every holder runs it on the same numbers in the
// same order and gets the same d. With base set, it starts from the dual
// values moved by base and the margins by zoff: the subproblem's
// continuation from a point it reached.
func Group(s Sub, m Model, sigma float64, base, zoff []float64) []float64 {
	h := len(s.Y)
	d := make([]float64, h)
	// conj[x]: the pick's conjugate term at its current value, so a move
	// prices its gain with one evaluation.
	conj := make([]float64, h)
	for x := range h {
		a0 := s.Alpha[x]
		if base != nil {
			a0 += base[x]
		}
		conj[x] = s.Loss.Conj(a0, s.Y[x])
	}
	gained := 0.0
	// The dense model's methods are called on its type, not through the
	// interface, so that they inline: in wasm a call costs several times
	// what it does natively, and the loop makes three per move.
	g, dense := m.(*Gram)
	for pass := 0; pass < 300; pass++ {
		maxd, sweep := 0.0, 0.0
		for c := 0; c < h; c++ {
			x := c
			if pass%2 == 1 {
				x = h - 1 - c
			}
			var mxx, mdx float64
			if dense {
				mxx, mdx = g.Diag(x), g.At(x)
			} else {
				mxx, mdx = m.Diag(x), m.At(x)
			}
			q := sigma * mxx
			if q <= 0 {
				q = 1e-12 // a zero row does not move w
			}
			z := s.Z[x] + sigma*mdx/s.LambdaN
			a0 := s.Alpha[x]
			if base != nil {
				z += zoff[x]
				a0 += base[x]
			}
			dl := s.Loss.Step(a0+d[x], s.Y[x], z, q, s.LambdaN)
			if dl == 0 {
				continue
			}
			// The subproblem's gain from this move (Step maximises it).
			c := s.Loss.Conj(a0+d[x]+dl, s.Y[x])
			sweep += c - conj[x] - dl*z - q*dl*dl/(2*s.LambdaN)
			conj[x] = c
			d[x] += dl
			if dense {
				g.Move(x, dl)
			} else {
				m.Move(x, dl)
			}
			maxd = max(maxd, math.Abs(dl))
		}
		gained += sweep
		if maxd < 1e-8 || sweep <= SweepGain*gained {
			break
		}
	}
	return d
}

// SweepGain ends a group solve: a sweep that adds less than this
// share of the solve's gain so far. The sweeps' gains fall geometrically
// but slowly after the first few (the first sweep brings about 95%, and on
// a sparse grid the 300th still added 1e-7 of the total): the solve then
// stops about 1e-3 short of the subproblem's optimum, a tenth of the gap
// left by the next round's picks, at a tenth of the sweeps. Measured
// (docs/results/2026-11-24-group-steps.md): rounds to 1e-2 unchanged, a
// run's wall time 81 s against 152 s (sparse grid) and 24 s against 33 s.
const SweepGain = 1e-5

// CenterGram replaces the h x h Gram a of the picks by that of the picks
// less their mean row, (I - 11^T/h) A (I - 11^T/h): the bias's part (the
// same in every entry) drops out, and so does whatever the picks share
// (with images, the mean image).
func CenterGram(a []float64, h int) {
	mean := make([]float64, h)
	tot := 0.0
	for r := 0; r < h; r++ {
		s := 0.0
		for c := 0; c < h; c++ {
			s += a[r*h+c]
		}
		mean[r] = s / float64(h)
		tot += s
	}
	tot /= float64(h * h)
	for r := 0; r < h; r++ {
		for c := 0; c < h; c++ {
			a[r*h+c] += tot - mean[r] - mean[c]
		}
	}
}
