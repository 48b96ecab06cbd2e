package protocol

import (
	"math"
	"sort"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/solve"
)

// lineSearch takes the round's primal direction u and the summed conjugate
// change at step 1, finds the step gamma* in [0, gmax] that maximises the
// dual along the direction (exactly for the hinge loss, whose conjugate
// term is linear in the step; from the chord at 1 otherwise), then lets
// the label holders price candidate steps.
func (c *Coordinator) lineSearch(u []float64, dconj, gmax float64) {
	wu, uu := 0.0, 0.0
	for i, v := range u {
		wu += c.w[i] * v
		uu += v * v
	}
	num := dconj/float64(c.numTrain) - c.cfg.Lambda*wu
	gamma := 0.0
	switch {
	case uu > 0:
		gamma = math.Max(0, math.Min(gmax, num/(c.cfg.Lambda*uu)))
	case num > 0:
		gamma = gmax
	}
	c.gammaMax = gmax
	c.trialPhase(u, gamma)
}

// trialPhase sends the direction u, sums the sealed x_n.u, and has one
// holder per group price the candidate steps; then it applies the chosen
// step to the sealed dual values, the primal contributions and w at once,
// and records the round. With u nil nothing moves and the round only
// reports its metrics.
func (c *Coordinator) trialPhase(u []float64, gammaD float64) {
	targets := c.eligible()
	c.flow.u, c.flow.grid = u, []float64{0}
	c.flow.trialTo, c.flow.wAtTrial = map[int]bool{}, c.wVersion
	if u != nil {
		c.flow.grid = solve.Candidates(gammaD, c.gammaMax, c.cfg.Search == SearchPrimal, c.cfg.Loss != "hinge")
	}
	for _, k := range targets {
		m := Message{Kind: KindTrial, Round: c.round, W: c.onFeatures(k, u)}
		c.flow.trialTo[k] = true
		if u != nil {
			c.groupScale(k, &m)
		}
		c.send(k, m)
	}
	c.flow.partial = len(targets) < c.numRegistered()
	c.await(PhaseTrial, targets, c.trialSumsIn)
}

// trialSumsIn: the sealed x_n.u are in; their sums go back with the
// candidate steps, and the label holders price them.
func (c *Coordinator) trialSumsIn(p *phaseState) {
	got, ok := c.returnSums(p, c.flow.grid, false)
	if !ok {
		return
	}
	c.flow.partial = c.flow.partial || len(p.dropped) > 0
	c.await(PhasePrice, got, c.trialMetricsIn)
}

// trialMetricsIn: every candidate step is priced. The best is applied
// (applyPhase); the round is recorded at the step that moved.
func (c *Coordinator) trialMetricsIn(p *phaseState) {
	f := &c.flow
	doubt := c.crossCheck(p.replies)
	f.partial = f.partial || len(p.dropped) > 0 || doubt
	f.metrics = p.replies
	gi := 0
	if f.u != nil && !doubt {
		gi = c.chooseStep(f.grid, f.u, f.metrics, f.partial)
		if c.cfg.Step == StepBlock {
			c.adaptStep(f.grid[gi])
		}
	}
	if f.grid[gi] == 0 {
		c.finishRound(0)
		return
	}
	c.applyPhase(f.u, f.grid[gi], func(applied bool) {
		if !applied {
			gi = 0
		}
		c.finishRound(gi)
	})
}

// finishRound records the round priced at candidate gi (w already moved
// by it), sends every participant the step and w, and starts the next
// round.
func (c *Coordinator) finishRound(gi int) {
	f := &c.flow
	gamma := f.grid[gi]
	c.cur.Gamma = gamma
	c.record(f.metrics, gi, f.partial)
	if f.partial {
		c.needFullIP = true
	}
	// A client that held w before the step and got the trial direction
	// takes the step itself (stepW, the same operations on the same
	// numbers): its message carries no w.
	moved := 0
	if gamma > 0 {
		moved = 1
	}
	follow := f.trialTo != nil && c.wVersion == f.wAtTrial+moved
	for _, k := range c.eligible() {
		cs := c.clients[k]
		m := Message{Kind: KindWeights, Round: c.round, Gamma: gamma, Applied: gamma > 0}
		if follow && f.trialTo[k] && cs.wHeld == f.wAtTrial+1 {
			m.Follow = true
		} else {
			m.W = c.onFeatures(k, c.w)
		}
		cs.wHeld = c.wVersion + 1
		c.send(k, m)
	}
	c.nextRound()
}

// stepW moves w by gamma u, each product rounded before the sum (the
// conversion forbids a fused multiply-add, which some platforms would
// use): a participant following the step (onWeights) computes the same
// bits.
func stepW(w, u []float64, gamma float64) {
	for i, v := range u {
		w[i] += float64(gamma * v)
	}
}

// applyPhase moves the dual values, the primal contributions and w by gamma
// times the round's direction. The server cannot scale a ciphertext by a
// real gamma exactly, so one holder of each updated group seals
// Quantize(gamma*d_n) (cut back to the feasible set) for the group's samples,
// the very numbers every holder adds to its own copy. All or nothing: if a reporter is missing, nothing
// moves and done gets false.
func (c *Coordinator) applyPhase(u []float64, gamma float64, done func(applied bool)) {
	el := map[int]bool{}
	for _, k := range c.eligible() {
		el[k] = true
	}
	report := map[int][]int{}
	for _, gi := range c.updating {
		found := false
		for _, h := range c.groups[gi].holders {
			if el[h] {
				report[h] = append(report[h], c.clients[h].localGroup[gi])
				found = true
				break
			}
		}
		if !found {
			done(false)
			return
		}
	}
	targets := make([]int, 0, len(report))
	for k := range report {
		targets = append(targets, k)
	}
	sort.Ints(targets)
	for _, k := range targets {
		c.send(k, Message{Kind: KindApply, Round: c.round, Gamma: gamma, Report: report[k]})
	}
	c.await(PhaseApply, targets, func(p *phaseState) {
		if len(p.dropped) > 0 {
			done(false)
			return
		}
		if err := seal.AddInto(c.scheme, c.alpha, p.sum); err != nil {
			c.fail(err)
			return
		}
		stepW(c.w, u, gamma)
		c.wVersion++
		for k, dw := range c.dirDW {
			hw := c.clients[k].hatW
			for j, v := range dw {
				hw[j] += gamma * v
			}
		}
		done(true)
	})
}

// chooseStep picks the candidate: the dual's maximiser, or (primal
// search) the candidate with the smallest primal among those that gain at
// least half of the dual's best gain, so that the dual keeps its rate while
// the model does not jump about.
func (c *Coordinator) chooseStep(grid, u []float64, replies map[int]Message, partial bool) int {
	n := float64(c.numTrain)
	duals := make([]float64, len(grid))
	primals := make([]float64, len(grid))
	for gi, g := range grid {
		loss, conj := 0.0, 0.0
		for _, k := range sortedKeys(replies) { // a fixed order: same seed, same sums
			m := replies[k]
			loss += m.GridLoss[gi]
			conj += m.GridConj[gi]
		}
		ww := 0.0
		for i, v := range c.w {
			x := v + g*u[i]
			ww += x * x
		}
		duals[gi] = c.dualAt(replies, gi, conj, ww)
		if math.IsNaN(duals[gi]) {
			// A client is missing (partial): its part of the dual's
			// quadratic term with it. Price with w itself, as the
			// round reports no dual anyway.
			duals[gi] = conj/n - c.cfg.Lambda/2*ww
		}
		primals[gi] = c.cfg.Lambda/2*ww + loss/n
	}
	// The dual values move by Quantize(gamma*d_n) (cut back to the
	// feasible set), not gamma*d_n: the reporters priced exactly that, and a step that would lower the dual
	// by the rounding is not taken.
	if c.cfg.Search != SearchPrimal {
		best := 0
		for gi := range grid {
			if duals[gi] > duals[best] {
				best = gi
			}
		}
		return best
	}
	if duals[1] <= duals[0] {
		return 0
	}
	if partial {
		return 1
	}
	floor := duals[0] + searchGain*(duals[1]-duals[0])
	best := 1
	for gi := range grid {
		if duals[gi] >= floor && primals[gi] < primals[best] {
			best = gi
		}
	}
	return best
}

// searchGain is the share of the best dual gain the primal search keeps.
const searchGain = 0.5
