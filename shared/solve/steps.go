package solve

import (
	"math"
	"slices"
)

// StepFactors are the multiples of the line search's step that the dual
// search also prices.
var StepFactors = []float64{0.5, 0.8, 1.25, 2}

// MaxCandidates bounds len(Candidates(...)): 0, gammaD and 16 grid
// steps with primal set (the smooth loss's: 0, gammaD, 4 multiples and 11
// powers of two).
const MaxCandidates = 18

// Candidates returns the steps to price along a round's direction: 0, the
// dual's maximiser gammaD and a few multiples of it, and with a smooth
// loss (whose gammaD comes from a chord of the conjugate term, which can
// even say 0 on an ascent direction) powers of two, all at most gmax: the
// priced duals are exact. With primal set, a grid over the interval on
// which the dual does not fall instead (the dual is a concave quadratic
// with its peak at gammaD), capped at gmax.
func Candidates(gammaD, gmax float64, primal, smooth bool) []float64 {
	if !primal {
		out := []float64{0, gammaD}
		add := func(g float64) {
			if g > 0 && g <= gmax && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
		for _, f := range StepFactors {
			add(f * gammaD)
		}
		if smooth {
			for e := -6; e <= 4; e++ {
				add(math.Ldexp(1, e))
			}
		}
		return out
	}
	if gammaD == 0 {
		return []float64{0, gammaD}
	}
	hi := math.Min(gmax, 2*gammaD)
	out := []float64{0, gammaD}
	const n = 16
	for j := 1; j <= n; j++ {
		if g := hi * float64(j) / n; g != gammaD {
			out = append(out, g)
		}
	}
	return out
}
