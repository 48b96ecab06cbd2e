package protocol

import (
	"math"
	"sort"

	"github.com/hyfed/hyfed/shared/solve"

	"github.com/hyfed/hyfed/shared/mix"
)

// Group steps (Config.GroupSteps): each updating group's second, centered
// direction weighed on its own by the server, which moves dual mass between
// groups where the bias couples them (docs/design.md, "The step rules").

// groupStepsApply reports whether the round's updating groups take their
// own steps.
func (c *Coordinator) groupStepsApply() bool {
	if !c.cfg.GroupSteps() || c.cfg.SealPrimal || len(c.updating) < 2 {
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
