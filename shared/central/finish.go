package central

import (
	"context"
	"fmt"
	"gonum.org/v1/gonum/mat"
	"math"

	"github.com/hyfed/hyfed/shared/dataset"
)

// maxFinish bounds the reduced problem finishHinge builds (|F|^2 floats).
const maxFinish = 6000

// finishHinge closes the gap that coordinate ascent leaves on correlated
// data. Near the optimum only the samples on the margin (0 < b < 1) and
// those that violate the optimality conditions matter; the others are
// fixed at b = 0 or 1. Over that small set F the dual is a box-constrained
// quadratic with the dense matrix K_fg = y_f y_g x_f.x_g / (lambda N):
// a few thousand sweeps of coordinate descent on K (|F| per step instead of
// a row of the data) and then an exact active-set solve. Repeated while
// samples outside F violate the conditions.
func finishHinge(ctx context.Context, d *dataset.Dataset, train []int, lambdaN float64, w, alpha []float64, check func() bool) error {
	for round := 0; round < 8; round++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("central: %w", err)
		}
		var free []int
		for _, i := range train {
			y := d.Y[i]
			b := alpha[i] * y
			g := y*d.X.Dot(i, w) - 1
			if (b > 0 && b < 1) || (b <= 0 && g < 0) || (b >= 1 && g > 0) {
				free = append(free, i)
			}
		}
		k := len(free)
		if k == 0 || k > maxFinish {
			return nil
		}
		// c = w minus the free samples' share.
		c := append([]float64(nil), w...)
		for _, i := range free {
			d.X.AddRowTo(i, -alpha[i]/lambdaN, c)
		}
		rows := make([][]float64, k)
		for a, i := range free {
			rows[a] = make([]float64, d.M())
			d.X.AddRowTo(i, d.Y[i], rows[a])
		}
		kk := make([]float64, k*k)
		r := make([]float64, k)
		b := make([]float64, k)
		for a := range rows {
			for e := a; e < k; e++ {
				v := dot(rows[a], rows[e]) / lambdaN
				kk[a*k+e], kk[e*k+a] = v, v
			}
			r[a] = 1 - dot(rows[a], c)
			b[a] = alpha[free[a]] * d.Y[free[a]]
		}
		kb := make([]float64, k)
		for a := range kb {
			kb[a] = dot(kk[a*k:(a+1)*k], b)
		}
		for sweep := 0; sweep < 3000; sweep++ {
			worst := 0.0
			for a := 0; a < k; a++ {
				kaa := kk[a*k+a]
				if kaa <= 0 {
					continue
				}
				grad := kb[a] - r[a]
				nb := math.Max(0, math.Min(1, b[a]-grad/kaa))
				if diff := nb - b[a]; diff != 0 {
					worst = math.Max(worst, math.Abs(diff))
					row := kk[a*k : (a+1)*k]
					for e := range kb {
						kb[e] += diff * row[e]
					}
					b[a] = nb
				}
			}
			if worst < 1e-15 {
				break
			}
		}
		activeSetSolve(kk, r, b)
		for a, i := range free {
			alpha[i] = d.Y[i] * b[a]
		}
		if check() {
			return nil
		}
	}
	return nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for j := range a {
		s += a[j] * b[j]
	}
	return s
}

// activeSetSolve polishes the box-constrained quadratic min 1/2 b'Kb - r'b,
// 0 <= b <= 1, from a near-solution: the b strictly inside the box solve
// K_SS b_S = r_S - K_SB b_B exactly; a b that leaves the box is fixed at
// its bound, a bound b whose gradient points inwards is freed, until the
// optimality conditions hold. Coordinate descent alone crawls on the
// ill-conditioned K of correlated data.
func activeSetSolve(kk, r, b []float64) {
	k := len(b)
	for it := 0; it < 100; it++ {
		var s []int
		inS := make([]bool, k)
		for a, v := range b {
			if v > 0 && v < 1 {
				s = append(s, a)
				inS[a] = true
			}
		}
		if len(s) > 0 {
			n := len(s)
			ks := make([]float64, n*n)
			rhs := make([]float64, n)
			for p, a := range s {
				rhs[p] = r[a]
				for e := 0; e < k; e++ {
					if !inS[e] {
						rhs[p] -= kk[a*k+e] * b[e]
					}
				}
				for q, e := range s {
					ks[p*n+q] = kk[a*k+e]
				}
			}
			var ch mat.Cholesky
			if !ch.Factorize(mat.NewSymDense(n, ks)) {
				return
			}
			var sol mat.VecDense
			if err := ch.SolveVecTo(&sol, mat.NewVecDense(n, rhs)); err != nil {
				return
			}
			// Step from the current point towards the solution as far as the
			// box allows; the first variable to hit a bound stays there.
			t := 1.0
			for p, a := range s {
				x := sol.AtVec(p)
				if x < 0 {
					t = math.Min(t, b[a]/(b[a]-x))
				} else if x > 1 {
					t = math.Min(t, (1-b[a])/(x-b[a]))
				}
			}
			for p, a := range s {
				b[a] += t * (sol.AtVec(p) - b[a])
				if b[a] < 1e-15 {
					b[a] = 0
				} else if b[a] > 1-1e-15 {
					b[a] = 1
				}
			}
			if t < 1 {
				continue
			}
		}
		// Free the bound variable whose gradient violates optimality most.
		worst, wa := 1e-14, -1
		for a := 0; a < k; a++ {
			if b[a] > 0 && b[a] < 1 {
				continue
			}
			g := dot(kk[a*k:(a+1)*k], b) - r[a]
			if (b[a] == 0 && -g > worst) || (b[a] == 1 && g > worst) {
				worst, wa = math.Abs(g), a
			}
		}
		if wa < 0 {
			return
		}
		b[wa] = math.Max(1e-12, math.Min(1-1e-12, b[wa]))
	}
}
