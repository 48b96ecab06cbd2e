package solve

import "math"

// GroupQP maximises a.x - x^T G x/2 (G positive semi-definite, 2K
// unknowns: x[j] the weight on group j's direction, x[K+j] on its centered
// one) from the feasible x by cyclic coordinate ascent. The first K
// weights are one (every group's own direction weighed alike, as by the
// block step's line search, which is where x starts); each centered
// weight is the group's own. Each group's pair stays in the triangle of
// (0, 0), (hi[j], 0) and (1, hi[K+j]): the dual values as held, moved by
// the first direction up to its limit, moved by it and then by the
// centered one (which continues from the first's end) up to its own;
// every point of the triangle keeps the dual values feasible. With
// neutral set (per group: its centered direction's bias share), the
// centered weights keep sum_j x[K+j] neutral[j] where it is (0 from the
// start): those with a share move in pairs, (neutral[l], -neutral[j]), as
// SMO does. A move with no curvature goes to its bound if it gains. Every
// move gains.
func GroupQP(x, a, g, hi, neutral []float64) {
	k2 := len(a)
	k := k2 / 2
	grad := func(i int) float64 {
		r := a[i]
		for j := range k2 {
			r -= g[i*k2+j] * x[j]
		}
		return r
	}
	step := func(r, curv, x0, lo, hi float64) float64 {
		if lo > hi {
			return x0 // rounding at a vertex: stay
		}
		switch {
		case curv > 0:
			return math.Max(lo, math.Min(hi, x0+r/curv))
		case r > 0:
			return hi
		case r < 0:
			return lo
		}
		return x0
	}
	for sweep := 0; sweep < 1000; sweep++ {
		// the common weight
		r, curv, lo, up := 0.0, 0.0, 0.0, math.Inf(1)
		for j := range k {
			r += grad(j)
			for l := range k {
				curv += g[j*k2+l]
			}
			la, lb, b := hi[j], hi[k+j], x[k+j]
			lo = math.Max(lo, b/lb)
			up = math.Min(up, la-b*math.Max(0, la-1)/lb)
		}
		v := step(r, curv, x[0], lo, up)
		change := math.Abs(v-x[0]) / math.Max(1, v)
		for j := range k {
			x[j] = v
		}
		upper := func(j int) float64 {
			la, lb := hi[j], hi[k+j]
			up := lb * v
			if la > 1 {
				up = math.Min(up, lb*(la-v)/(la-1))
			}
			return math.Max(0, up)
		}
		for j := range k {
			if neutral != nil && neutral[j] != 0 {
				continue // moved in pairs below
			}
			b := step(grad(k+j), g[(k+j)*k2+k+j], x[k+j], 0, upper(j))
			change = math.Max(change, math.Abs(b-x[k+j])/math.Max(1, b))
			x[k+j] = b
		}
		for j := range k {
			for l := j + 1; l < k && neutral != nil && neutral[j] != 0; l++ {
				if neutral[l] == 0 {
					continue
				}
				// Along (neutral[l], -neutral[j]) on the pair's
				// second weights: sum_g x'_g neutral[g] stays.
				vj, vl := neutral[l], -neutral[j]
				lo, up := math.Inf(-1), math.Inf(1)
				for _, c := range [2][3]float64{{x[k+j], upper(j), vj}, {x[k+l], upper(l), vl}} {
					a0, b0 := (0-c[0])/c[2], (c[1]-c[0])/c[2]
					lo, up = math.Max(lo, math.Min(a0, b0)), math.Min(up, math.Max(a0, b0))
				}
				r := grad(k+j)*vj + grad(k+l)*vl
				curv := vj*vj*g[(k+j)*k2+k+j] + 2*vj*vl*g[(k+j)*k2+k+l] + vl*vl*g[(k+l)*k2+k+l]
				t := step(r, curv, 0, math.Min(0, lo), math.Max(0, up))
				if t == 0 {
					continue
				}
				bj, bl := math.Max(0, x[k+j]+t*vj), math.Max(0, x[k+l]+t*vl)
				change = math.Max(change, math.Max(math.Abs(bj-x[k+j])/math.Max(1, bj), math.Abs(bl-x[k+l])/math.Max(1, bl)))
				x[k+j], x[k+l] = bj, bl
			}
		}
		if change < 1e-13 {
			break
		}
	}
}

// GroupStepLimit is the largest multiple t of a group's weights (xa, xb)
// that stays in GroupQP's triangle for limits la, lb.
func GroupStepLimit(xa, xb, la, lb float64) float64 {
	if d := xa + xb*math.Max(0, la-1)/lb; d > 0 {
		return la / d
	}
	return math.Inf(1)
}

// FallToCoupling returns sigma' after a round whose line search the dual
// values' box cut, from the round's sigma' and the coupling rho = ||sum_g
// u_g||^2 / sum_g ||u_g||^2 of the groups' primal directions u_g. CoCoA+
// prices every group's direction at the number K of updating groups
// because rho <= K always; sigma' >= rho is what the combined direction
// needs (the groups' models then bound its curvature), and how far rho
// falls below sigma' is what the directions leave on the table. With 125
// image groups every round was cut (an exact group solve puts a pick on a
// bound, so the limit is 1) and a sigma' that learned only from uncut
// rounds stayed at round 1's 62 of 125 while the dual crawled; rho
// measures 2-43 there (docs/results/2026-11-28-sigma-after-cut-rounds.md).
// sigma' falls halfway in logarithm (sqrt(sigma' rho), as adaptSigma
// moves, so that one round of nearly orthogonal directions does not make
// the next ones bold), never below 1, and never rises here: a cut round does not say the directions were
// too bold (an uncut round with a step below 1 does, and raises it).
func FallToCoupling(sigma, rho float64) float64 {
	if !(rho > 0) || rho >= sigma {
		return sigma
	}
	return math.Max(1, math.Sqrt(sigma*rho))
}
