package protocol

import (
	"fmt"
	"slices"
)

// A dropped participant's features are gone for good, so the margins of
// the sample groups it held can no longer be computed. At the next round
// boundary where every other holder of those groups is connected, the
// federation re-forms without them: their dual values leave (their
// chunks of the sealed dual vector are deleted, which reads as zero),
// the training count shrinks, every participant is set up again with the
// groups marked lost and refreshed, and w is recomputed from the fresh
// primal contributions. The problem is now the one over the remaining
// samples: the round is marked Reformed and the model handed out is the
// best since. Until then, and where re-forming is not built (threshold
// keys, sealed primal, the baselines), the rounds are recorded partial.

// canReform reports whether this federation re-forms after a drop.
func (c *Coordinator) canReform() bool {
	return c.rule.dual() && c.cfg.Algo == AlgoHyFDCA && c.cfg.Keys != KeysThreshold && !c.cfg.SealPrimal
}

// pendingLost returns the groups that a dropped participant holds and
// that are still in the federation.
func (c *Coordinator) pendingLost() []int {
	var out []int
	for gi, g := range c.groups {
		if c.isLost(gi) {
			continue
		}
		if c.disputed[gi] {
			out = append(out, gi)
			continue
		}
		for _, h := range g.holders {
			if c.clients[h].dropped != "" {
				out = append(out, gi)
				break
			}
		}
	}
	return out
}

func (c *Coordinator) isLost(gi int) bool { return gi < len(c.lost) && c.lost[gi] }

// maybeReform re-forms the federation at a round boundary if a drop left
// groups to take out and every other holder of them is here to be set up
// again (an absent one's primal contribution would keep their terms).
func (c *Coordinator) maybeReform() {
	lost := c.pendingLost()
	if len(lost) == 0 || !c.canReform() {
		return
	}
	for _, gi := range lost {
		for _, h := range c.groups[gi].holders {
			if cs := c.clients[h]; cs.dropped == "" && !(cs.connected && cs.ready) {
				return
			}
		}
	}
	samples := c.applyLost(lost)
	if c.numTrain == 0 {
		c.fail(fmt.Errorf("every sample group lost a holder to a drop: nothing is left to train on"))
		return
	}
	cl := c.scheme.ChunkLen()
	for _, gi := range lost {
		g := c.groups[gi]
		for ci := g.start / cl; ci < g.start/cl+g.chunks; ci++ {
			delete(c.alpha, ci)
		}
	}
	for _, cs := range c.clients {
		if cs.dropped != "" && cs.hatW != nil {
			cs.hatW = make([]float64, len(cs.features)) // all its samples left
		}
	}
	for _, k := range c.connected() {
		cs := c.clients[k]
		cs.stale, cs.returned = true, true // refreshed before anything: fresh dual values, fresh hat_w
		c.sendSetup(k, false)
		if c.prep != nil {
			c.sendPrep(k)
		}
		c.sendNorms(k)
	}
	c.needFullIP = true
	c.best, c.dualSeen = nil, false
	c.cur.Reformed = true
	c.note(fmt.Sprintf("From round %d the federation trains without the %d samples of the groups it lost (a dropped holder's, or disputed): "+
		"the dual values, the counts and w start from the rest, and the model handed out is the best since", c.round+1, samples))
}

// applyLost marks groups lost and takes their samples out of the counts;
// it returns how many samples left. (Restore applies the checkpoint's.)
func (c *Coordinator) applyLost(lost []int) int {
	if len(c.lost) != len(c.groups) {
		c.lost = make([]bool, len(c.groups))
	}
	samples := 0
	for _, gi := range lost {
		if c.lost[gi] {
			continue
		}
		g := c.groups[gi]
		c.lost[gi] = true
		c.numTrain -= g.train
		c.numHeld -= g.size - g.train
		samples += g.size
		for _, h := range g.holders {
			c.clients[h].trainN -= g.train
		}
	}
	return samples
}

// lostGroups lists the lost groups (for the checkpoint).
func (c *Coordinator) lostGroups() []int {
	var out []int
	for gi := range c.lost {
		if c.lost[gi] {
			out = append(out, gi)
		}
	}
	return out
}

// localLost returns client k's lost groups as its local group indexes.
func (c *Coordinator) localLost(k int) []int {
	var out []int
	for lg, gi := range c.clients[k].groups {
		if c.isLost(gi) {
			out = append(out, lg)
		}
	}
	slices.Sort(out)
	return out
}
