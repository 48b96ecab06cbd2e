package protocol

import (
	"math"

	"github.com/hyfed/hyfed/shared/schema"
)

// What a participant's plaintext numbers can be, given what the server
// knows: its groups' sizes, the picks a round allows, the losses' ranges.
// A number outside is an ImpossibleError (its sender is dropped);
// docs/security.md lists what these checks catch and what they cannot.

// Both losses' conjugate terms lie in [0, 1] per sample (hinge: a y in
// [0, 1]; logistic: the binary entropy, at most log 2), so a sum over n
// samples lies in [0, n] and a step changes it by at most 1 a sample.
// valueSlack absorbs the fixed-point rounding of opened dual values.
const valueSlack = 1e-6

// checkDirValues checks a block step's dir-part: its step limit and its
// conjugate changes against the picks of the groups it reports.
func (c *Coordinator) checkDirValues(k int, m Message) error {
	cs := c.clients[k]
	picks := 0
	for _, lg := range c.flow.report[k] {
		if lg >= 0 && lg < len(cs.groups) {
			picks += gramPicks(c.cfg, c.groups[cs.groups[lg]].train)
		}
	}
	bound := float64(picks)*(1+valueSlack) + valueSlack
	if math.Abs(m.DConj) > bound || math.Abs(m.DConjCentered) > bound {
		return impossible("conjugate change %g (centered %g): at most %d picked samples move, by at most 1 each", m.DConj, m.DConjCentered, picks)
	}
	// The direction solves a box-constrained subproblem: every picked
	// dual value stays feasible at step 1, so the largest feasible step
	// is at least 1.
	if picks > 0 && m.GammaMax != 0 && m.GammaMax < 1-valueSlack {
		return impossible("step limit %g: the direction keeps the picked dual values feasible at step 1", m.GammaMax)
	}
	return c.checkShareValues(k, m)
}

// checkShareValues checks a plaintext share of the direction, sum_n d_n
// x_{k,n} over the picks of k's updating groups, where a schema bounds
// every value the federation trains on (clipped, 0/1, the intercept):
// each |d_n| <= 1 (the box), so |dw_j| <= picks x the column's bound. A
// share beyond would make the other holders unable to seal x.u.
func (c *Coordinator) checkShareValues(k int, m Message) error {
	if c.prep == nil || c.prep.maps == nil || len(m.DW) == 0 {
		return nil
	}
	cs := c.clients[k]
	picks := 0
	for _, gi := range c.updating {
		if _, ok := cs.localGroup[gi]; ok {
			picks += gramPicks(c.cfg, c.groups[gi].train)
		}
	}
	for j, f := range cs.features {
		if j >= len(m.DW) || f >= len(c.prep.maps) || !c.prep.ok[f] {
			continue
		}
		b := columnBound(c.prep.maps[f])
		if v := m.DW[j]; math.Abs(v) > float64(picks)*b*(1+valueSlack)+valueSlack {
			return impossible("direction share %g on column %d: at most %d picked samples with values within ±%g, each moving by at most 1", v, f, picks, b)
		}
	}
	return nil
}

// columnBound is the largest magnitude a column's map gives: its clip, or
// for an unclipped map (a category's 0/1, the intercept's 1) the image of 1.
func columnBound(mp schema.Map) float64 {
	if mp.Clipped() {
		return math.Max(math.Abs(mp.Lo), math.Abs(mp.Hi))
	}
	return math.Abs(mp.Apply(1) - mp.Apply(0))
}

// checkMetricValues checks a metrics reply against the samples of the
// groups it reports: the counts, the conjugate terms' range and the
// losses' sign.
func (c *Coordinator) checkMetricValues(k int, m Message) error {
	cs := c.clients[k]
	train, held := 0, 0
	for _, lg := range c.phaseReport[k] {
		if lg >= 0 && lg < len(cs.groups) {
			g := c.groups[cs.groups[lg]]
			train += g.train
			held += g.size - g.train
		}
	}
	if m.TrainN > train || m.HeldN > held {
		return impossible("%d training and %d held-out samples reported; its reported groups have %d and %d", m.TrainN, m.HeldN, train, held)
	}
	n := float64(m.TrainN)
	for i := range m.GridLoss {
		if m.GridTrainOK[i] > m.TrainN || m.GridHeldOK[i] > m.HeldN {
			return impossible("more samples right (%d, %d) than reported (%d, %d)", m.GridTrainOK[i], m.GridHeldOK[i], m.TrainN, m.HeldN)
		}
		if m.GridLoss[i] < 0 {
			return impossible("loss sum %g below 0", m.GridLoss[i])
		}
		if v := m.GridConj[i]; v < -valueSlack*(n+1) || v > n*(1+valueSlack)+valueSlack {
			return impossible("conjugate sum %g outside [0, %d] for %d training samples", v, m.TrainN, m.TrainN)
		}
	}
	return c.checkCrossValues(k, m)
}
