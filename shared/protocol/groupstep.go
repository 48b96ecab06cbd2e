package protocol

import (
	"fmt"
	"github.com/hyfed/hyfed/shared/solve"
	"math"
	"sort"

	"github.com/hyfed/hyfed/shared/mix"
)

// Group steps (Config.GroupSteps, on by default in the block step). With two or more sample
// groups the block step stalls (issue 14): what the groups' samples share
// couples them. The bias feature (the same value c in every sample) is the
// extreme case: moving a group's sum of dual values by s moves every
// margin by c^2 s/(lambda N), H times any other feature's curvature, so a
// group alone cannot move its sum. But the dual mass often has to move
// between groups, one group's sum up and another's down, which leaves the
// bias (and, with similar groups, the mean row) where it is: a direction
// of small curvature that no group's own subproblem sees. Measured on
// digits horizontal:2, logistic: the groups' sums of a - a* stay at +7 and
// -7 and shrink by 1.7e-3 a round; the dual gains 2.4e-7 a round.
//
// Under group steps every group's holders solve the subproblem twice from
// the same summed Gram: as the block step does (d_g), and then on from
// where d_g leads (its dual values and margins) against the Gram of the
// picks less their mean row (centerGram, d'_g), which has no curvature
// along moving all picks alike: the bias's part drops out exactly, with
// whatever else the picks share. The server then weighs the directions,
// x d_g + x'_g d'_g: one weight x for all groups' own directions (the
// block step's line search, where it starts) and each group's own weight
// x'_g on its second direction, maximising over the weights the dual's
// model
//
//	a.(x, x') - lambda/2 ||sum_g x u_g + x'_g u'_g||^2
//
// (a from the conjugate changes and w.u), whose quadratic term, from the
// groups' primal directions u (plaintext: the holders' shares of dw),
// holds the coupling through the bias and the mean rows exactly: groups
// that move the shared directions the same way are held back together,
// groups that move them in opposite ways go ahead. The conjugate part is
// exact for the hinge loss (linear in the weights) and chords for a smooth
// loss. The second directions' weights keep the bias where the first
// directions put it (sum_g x'_g s'_g = 0, s'_g the group's sum of its
// second changes, whose bias share the server sees): the step across the
// groups only moves dual mass between them, which is what no group's own
// solve can do, and leaves the rest to the block step (without a
// declared bias feature they are free). Each group's weights stay in the
// triangle of 0, its first
// direction at its feasibility limit and both directions (the second at
// its own limit from the first's end), so every dual value stays
// feasible; they start from the block step's own line search, so the
// model never gains less than it (with every x'_g 0 the round is the
// block step's). The combined direction is then priced on the block
// step's grid of multiples with the exact dual, so the dual never falls
// (the step 0 is a candidate).
//
// Measured and not kept: the second weights free (the mass moved between
// the groups, but a group alone also took its second direction while its
// first still had far to go, and the rounds after lost more than it
// gained: fashion-mnist quadrants:2, hinge, 1e-2 at round 37, the block
// step's 27; digits quadrants:2, hinge, 36 for 14); the second direction
// from the first's end with sigma'-scaled margins (the hinge's stall
// remained on digits horizontal:2); the second direction solved from the dual values
// as held instead of from the first's end (it fixed the logistic stall
// but not the hinge's: with the first direction at its limit, common for
// the hinge loss, the convex hull of the two leaves the second no room);
// every group's own direction with its own weight too (more gain a round,
// less over a run: breast-cancer horizontal:4, hinge, behind from round 2
// on).
//
// The server needs each group's u apart: every holder of an updating
// group holds no other updating group (quadrants, horizontal, grid) and
// the primal is not sealed. Otherwise the round is the block step's. The
// cost: a second solve per group and a second dw share per holder (its
// features' plaintext numbers, as the first), nothing more per sample;
// the sealed traffic is the block step's.

// groupStepsApply reports whether the round's updating groups take their
// own steps.
func (c *Coordinator) groupStepsApply() bool {
	if !c.cfg.GroupSteps || c.cfg.SealPrimal || len(c.updating) < 2 {
		return false
	}
	seen := map[int]bool{}
	for _, gi := range c.updating {
		for _, h := range c.groups[gi].holders {
			if seen[h] {
				return false
			}
			seen[h] = true
		}
	}
	return true
}

// groupLineSearch chooses the groups' weights on their two directions
// from the holders' shares of dw and starts the trial phase along the
// weighted direction. It returns false (nothing started) when no group
// moves: the round then takes the one line search.
func (c *Coordinator) groupLineSearch(targets []int, replies map[int]Message) bool {
	lambda, n := c.cfg.Lambda, float64(c.numTrain)
	lambdaN := lambda * n
	in := map[int]bool{}
	for _, k := range targets {
		in[k] = true
	}
	// Unknowns: x[b] on bucket b's first directions, x[kk+b] on its
	// centered ones; a bucket is one group unless more than
	// maxGroupWeights update (groupBuckets).
	bucket, kk := groupBuckets(c.round, c.updating)
	us := make([][]float64, 2*kk)
	for b := range us {
		us[b] = make([]float64, c.numFeatures)
	}
	a := make([]float64, 2*kk)
	lim := make([]float64, 2*kk)
	for b := range lim {
		lim[b] = maxBlockStep
	}
	glim := make([][2]float64, len(c.updating)) // each group's own limits
	conj := make([]float64, 2*kk)
	sumA, sumConj := make([]float64, c.numFeatures), 0.0
	ug := make([]float64, c.numFeatures) // the group's own first direction
	apart := 0.0                         // sum_g ||u_g||^2
	for j, gi := range c.updating {
		b := bucket[j]
		ua, ub := us[b], us[kk+b]
		clear(ug)
		la, lb := float64(maxBlockStep), float64(maxBlockStep)
		ca, cb := 0.0, 0.0
		for _, h := range c.groups[gi].holders {
			m, ok := replies[h]
			if !in[h] || !ok || len(m.DWCentered) != len(m.DW) {
				return false
			}
			ca += m.DConj
			cb += m.DConjCentered
			if m.GammaMax > 0 {
				la = math.Min(la, m.GammaMax)
			}
			if m.GammaMaxCentered > 0 {
				lb = math.Min(lb, m.GammaMaxCentered)
			}
			for jj, f := range c.clients[h].features {
				ua[f] += m.DW[jj] / lambdaN
				ub[f] += m.DWCentered[jj] / lambdaN
				ug[f] += m.DW[jj] / lambdaN
			}
		}
		for _, v := range ug {
			apart += v * v
		}
		conj[b] += ca
		conj[kk+b] += cb
		sumConj += ca
		glim[j] = [2]float64{la, lb}
		lim[b], lim[kk+b] = math.Min(lim[b], la), math.Min(lim[kk+b], lb)
	}
	for b := range kk {
		wa, wb := 0.0, 0.0
		for f, v := range us[b] {
			wa += c.w[f] * v
			wb += c.w[f] * us[kk+b][f]
			sumA[f] += v
		}
		a[b], a[kk+b] = conj[b]/n-lambda*wa, conj[kk+b]/n-lambda*wb
	}
	g := make([]float64, 4*kk*kk)
	for i := range 2 * kk {
		for j := i; j < 2*kk; j++ {
			s := 0.0
			for f, v := range us[i] {
				s += v * us[j][f]
			}
			g[i*2*kk+j], g[j*2*kk+i] = lambda*s, lambda*s
		}
	}
	// Start from the block step's own line search along the groups'
	// first directions: the weights found are never worse by the model.
	x := make([]float64, 2*kk)
	wu, uu, lmin := 0.0, 0.0, float64(maxBlockStep)
	for f, v := range sumA {
		wu += c.w[f] * v
		uu += v * v
	}
	for j := range kk {
		lmin = math.Min(lmin, lim[j])
	}
	// What the round teaches sigma' (adaptStep): the groups' coupling,
	// and the model's step along their first directions where no
	// limit cuts it.
	if apart > 0 {
		c.flow.coupling = uu / apart
	}
	if num := sumConj/n - lambda*wu; uu > 0 && num > 0 {
		g0 := num / (lambda * uu)
		for j := range kk {
			x[j] = math.Min(lmin, g0)
		}
		if g0 < lmin*(1-1e-9) {
			c.flow.stepMean = g0
		} else {
			c.flow.cut = true
		}
	}
	// The second directions only move dual mass between the groups: their
	// weights keep the bias where the first directions put it (the
	// server sees each second direction's bias share, c/(lambda N) times
	// the group's sum of its changes).
	var neutral []float64
	if c.cfg.BiasValue != 0 {
		neutral = make([]float64, kk)
		for j := range kk {
			neutral[j] = us[kk+j][c.cfg.BiasFeature]
		}
	}
	solve.GroupQP(x, a, g, lim, neutral)
	moved := false
	for _, v := range x {
		moved = moved || v > 0
	}
	if !moved {
		return false
	}
	// The weighted direction, the holders' weighted shares (the primal
	// contributions move by them), the weights the participants apply.
	u := make([]float64, c.numFeatures)
	c.flow.scale = map[int][2]float64{}
	tmax := float64(maxBlockStep)
	for b := range kk {
		for f := range u {
			u[f] += x[b]*us[b][f] + x[kk+b]*us[kk+b][f]
		}
	}
	for j, gi := range c.updating {
		xa, xb := x[bucket[j]], x[kk+bucket[j]]
		for _, h := range c.groups[gi].holders {
			m := replies[h]
			dw := make([]float64, len(m.DW))
			for jj := range dw {
				dw[jj] = xa*m.DW[jj] + xb*m.DWCentered[jj]
			}
			c.dirDW[h] = dw
			c.flow.scale[h] = [2]float64{xa, xb}
		}
		tmax = math.Min(tmax, solve.GroupStepLimit(xa, xb, glim[j][0], glim[j][1]))
	}
	c.gammaMax = tmax
	c.trialPhase(u, math.Min(1, tmax))
	return true
}

// maxGroupWeights bounds the weights the server chooses a round: the
// model's quadratic term costs (2B)^2 dot products over the features and
// groupQP O(B^3) a sweep, so with hundreds of updating groups (500 or
// 5,000 participants) the groups share weights in at most this many
// buckets.
const maxGroupWeights = 16

// groupBuckets deals the round's updating groups into the buckets whose
// directions share weights: each group its own while there are at most
// maxGroupWeights, else maxGroupWeights buckets, dealt afresh every round
// in an order drawn from the round and the group (so that over rounds
// mass moves between any two groups), sizes differing by at most one. It
// returns each updating group's bucket and the number of buckets.
func groupBuckets(round int, updating []int) ([]int, int) {
	bucket := make([]int, len(updating))
	if len(updating) <= maxGroupWeights {
		for j := range bucket {
			bucket[j] = j
		}
		return bucket, len(updating)
	}
	order := make([]int, len(updating))
	keys := make([]uint64, len(updating))
	for j, gi := range updating {
		order[j], keys[j] = j, mix.SplitMix64(uint64(round)<<32^uint64(gi))
	}
	sort.Slice(order, func(p, q int) bool { return keys[order[p]] < keys[order[q]] })
	for r, j := range order {
		bucket[j] = r % maxGroupWeights
	}
	return bucket, maxGroupWeights
}

// groupScale adds to a trial message for client k its group's weights
// (group steps): the client combines its two directions by them before
// pricing.
func (c *Coordinator) groupScale(k int, m *Message) {
	s, ok := c.flow.scale[k]
	if !ok {
		return
	}
	for _, gi := range c.updating {
		if lg, ok := c.clients[k].localGroup[gi]; ok {
			m.Groups = append(m.Groups, lg)
			m.GroupScale = append(m.GroupScale, s[0])
			m.GroupCentered = append(m.GroupCentered, s[1])
		}
	}
}

// adaptStep sets the next round's sigma' after the round's chosen
// multiple t of its direction (adaptSigma); under group steps from the
// block step's own line search along the groups' first directions, which
// starts the weights. A step g below the feasibility limit says the
// subproblems were sigma'/g too bold or timid (sigma'/sqrt(g), as
// adaptSigma). A step cut by the limit says only that the model wanted at
// least the limit (at least 1: every group's own solve stays feasible):
// the directions were not too bold, and sigma' falls towards the coupling
// the server measured (fallToCoupling). A round without a gain along the
// first directions says nothing.
func (c *Coordinator) adaptStep(t float64) {
	if c.flow.scale == nil {
		c.adaptSigma(t)
		return
	}
	if len(c.updating) < 2 {
		return
	}
	if g := c.flow.stepMean; g > 0 && t > 0 {
		c.sigma = math.Max(1, math.Min(float64(len(c.updating)), c.roundSigma/math.Sqrt(g)))
		return
	}
	if c.flow.cut {
		c.sigma = solve.FallToCoupling(c.roundSigma, c.flow.coupling)
	}
}

// scaleGroups applies a trial message's group weights: the participant's
// direction on each named group's samples becomes x times its direction
// plus x' times its centered one, and the step the direction allows follows.
func (p *Participant) scaleGroups(m Message) error {
	if len(m.GroupScale) == 0 {
		return nil
	}
	if len(m.GroupScale) != len(m.Groups) || len(m.GroupCentered) != len(m.Groups) || p.pending == nil || p.centered == nil {
		return fmt.Errorf("participant: trial: %d+%d group weights for %d groups (directions held: %v, %v)",
			len(m.GroupScale), len(m.GroupCentered), len(m.Groups), p.pending != nil, p.centered != nil)
	}
	for j, g := range m.Groups {
		xa, xb := m.GroupScale[j], m.GroupCentered[j]
		if _, ok := p.limits[g]; !ok || !(xa >= 0) || !(xb >= 0) || g < 0 || g >= len(p.groupTrain) {
			return fmt.Errorf("participant: trial: weights %v, %v for group %d, which has no direction this round", xa, xb, g)
		}
		for _, i := range p.groupTrain[g] {
			u, v := xa*p.pending[i], xb*p.centered[i]
			p.pending[i] = u + v
			if math.Abs(u+v) <= 1e-12*(math.Abs(u)+math.Abs(v)) {
				// The two cancel (a pick that the first direction
				// moves off a bound and the second back onto it, at a
				// vertex of the server's triangle): what is left is
				// rounding, which could point out of the box.
				p.pending[i] = 0
			}
		}
	}
	p.centered = nil
	p.gammaMax = math.Inf(1)
	for _, i := range p.train {
		if d := p.pending[i]; d != 0 {
			y := p.block.Y[i]
			db, b := d*y, p.alpha[i]*y
			switch {
			case db > 0:
				p.gammaMax = math.Min(p.gammaMax, (1-b)/db)
			case db < 0:
				p.gammaMax = math.Min(p.gammaMax, b/(-db))
			}
		}
	}
	return nil
}
