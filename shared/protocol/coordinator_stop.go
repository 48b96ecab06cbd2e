package protocol

import "math"

// When training stops: every complete round's dual value is a lower bound
// on the optimum P*, and the model handed out has the lowest primal of the
// complete rounds, so (P_best - D_max) / D_max bounds how far above P* it
// is, relative. Training stops once that bound is at most Config.Tol.

// noteDual keeps the largest dual of the complete rounds since the
// objective last changed (re-forming resets it).
func (c *Coordinator) noteDual(r RoundMetrics) {
	if r.Partial || math.IsNaN(r.Dual) || (c.dualSeen && !(r.Dual > c.dualMax)) {
		return
	}
	c.dualMax, c.dualSeen = r.Dual, true
}

// dualFromHistory rebuilds noteDual's state from the history since the
// last re-forming (a restored coordinator).
func (c *Coordinator) dualFromHistory() {
	c.dualMax, c.dualSeen = 0, false
	from := 0
	for i, r := range c.history {
		if r.Reformed {
			from = i
		}
	}
	for _, r := range c.history[from:] {
		c.noteDual(r)
	}
}

// Bound returns the certified relative distance of the model handed out
// from the optimum, (P_best - D_max) / D_max; NaN before a complete round
// has both, and always for the baselines, which have no dual.
func (c *Coordinator) Bound() float64 {
	if c.best == nil || !c.dualSeen || !(c.dualMax > 0) {
		return math.NaN()
	}
	return max(0, (c.best.Primal-c.dualMax)/c.dualMax)
}

// Converged reports whether training stopped, or would stop now, because
// the bound reached Config.Tol.
func (c *Coordinator) Converged() bool {
	tol := c.cfg.Tol.Bound()
	return tol > 0 && c.Bound() <= tol
}

// done reports whether the federation has run its last round.
func (c *Coordinator) done() bool { return c.round >= c.cfg.Rounds || c.Converged() }
