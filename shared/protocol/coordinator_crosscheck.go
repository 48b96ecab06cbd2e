package protocol

import (
	"fmt"
	"math"
	"slices"
)

// Only a group's reporter prices it, so a loss it inflates (the primal
// the federation records, the model it hands out) would pass every range
// check. Every holder of a group holds its labels, dual values, margins
// and direction, so a second holder, rotating from round to round, prices
// the group too and the coordinator compares the two. A disagreement
// holds the round's step back (its numbers are in doubt). A participant
// that disagrees with two different holders is dropped; the two holders
// of a group of two cannot be told apart, so that group is taken out
// (coordinator_reform.go) and both are named. A group of one holder
// (horizontal data) has nobody to check it.

// crossPair is a group, its reporter and its checker in a pricing phase.
type crossPair struct{ group, reporter, checker int }

// checkers picks a second holder among got for every group that has one:
// the local groups each checks, and the pairs to compare.
func (c *Coordinator) checkers(got []int) (map[int][]int, []crossPair) {
	in := map[int]bool{}
	for _, k := range got {
		in[k] = true
	}
	check := map[int][]int{}
	var pairs []crossPair
	for gi, g := range c.groups {
		if c.isLost(gi) {
			continue
		}
		var hs []int
		for _, h := range g.holders {
			if in[h] {
				hs = append(hs, h)
			}
		}
		if len(hs) < 2 {
			continue
		}
		ch := hs[1+c.round%(len(hs)-1)] // hs[0] reports it (reporters)
		check[ch] = append(check[ch], c.clients[ch].localGroup[gi])
		pairs = append(pairs, crossPair{gi, hs[0], ch})
	}
	return check, pairs
}

// sameSum reports whether two holders' sums of the same samples agree:
// they add the same numbers, perhaps in another order.
func sameSum(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(math.Abs(a)+math.Abs(b))+1e-12 }

// crossCheck compares the pricing phase's pairs. It returns whether the
// round's numbers are in doubt (a disagreement, or a participant dropped
// and its reply taken out of replies).
func (c *Coordinator) crossCheck(replies map[int]Message) bool {
	n := max(1, len(c.phaseGrid))
	doubt := false
	for _, pr := range c.phasePairs {
		r, okR := replies[pr.reporter]
		ch, okC := replies[pr.checker]
		if !okR || !okC {
			continue
		}
		i := slices.Index(c.phaseReport[pr.reporter], c.clients[pr.reporter].localGroup[pr.group])
		j := slices.Index(c.phaseCheck[pr.checker], c.clients[pr.checker].localGroup[pr.group])
		agree := i >= 0 && j >= 0
		for gi := 0; agree && gi < n; gi++ {
			agree = sameSum(r.GroupLoss[i*n+gi], ch.CheckLoss[j*n+gi]) && sameSum(r.GroupConj[i*n+gi], ch.CheckConj[j*n+gi])
		}
		if !agree {
			doubt = true
			c.disputeOf(pr)
		}
	}
	for k := range replies {
		if c.clients[k].dropped != "" {
			delete(replies, k)
			doubt = true
		}
	}
	return doubt
}

// disputeOf records that a pair priced its group differently.
func (c *Coordinator) disputeOf(pr crossPair) {
	a, b := c.clients[pr.reporter], c.clients[pr.checker]
	if a.disagree == nil {
		a.disagree = map[int]bool{}
	}
	if b.disagree == nil {
		b.disagree = map[int]bool{}
	}
	first := !a.disagree[pr.checker]
	a.disagree[pr.checker], b.disagree[pr.reporter] = true, true
	if first {
		c.note(fmt.Sprintf("round %d: %s and %s price a sample group they both hold differently: one of them sends wrong numbers; the round's step is held back",
			c.round, c.name(pr.reporter), c.name(pr.checker)))
	}
	for _, k := range []int{pr.reporter, pr.checker} {
		if cs := c.clients[k]; cs.dropped == "" && len(cs.disagree) >= 2 {
			c.drop(k, fmt.Sprintf("its prices of the groups it holds disagree with those of %d other holders", len(cs.disagree)))
			c.afterDrop(k)
		}
	}
	if g := c.groups[pr.group]; len(g.holders) == 2 && a.dropped == "" && b.dropped == "" && !c.disputed[pr.group] {
		if c.disputed == nil {
			c.disputed = map[int]bool{}
		}
		c.disputed[pr.group] = true
		c.note(fmt.Sprintf("%s and %s, its only two holders, disagree on a sample group: nobody can tell which is right, so the federation goes on without that group",
			c.name(pr.reporter), c.name(pr.checker)))
	}
}

// checkCrossValues checks a metrics reply's per-group sums: their
// lengths, their ranges, and that the reported ones add up to its totals.
func (c *Coordinator) checkCrossValues(k int, m Message) error {
	n := max(1, len(c.phaseGrid))
	cs := c.clients[k]
	rep, chk := c.phaseReport[k], c.phaseCheck[k]
	if len(m.GroupLoss) != len(rep)*n || len(m.GroupConj) != len(rep)*n || len(m.CheckLoss) != len(chk)*n || len(m.CheckConj) != len(chk)*n {
		return fmt.Errorf("metrics: %d+%d and %d+%d group sums for %d reported and %d checked groups of %d steps",
			len(m.GroupLoss), len(m.GroupConj), len(m.CheckLoss), len(m.CheckConj), len(rep), len(chk), n)
	}
	for _, part := range []struct {
		groups     []int
		loss, conj []float64
	}{{rep, m.GroupLoss, m.GroupConj}, {chk, m.CheckLoss, m.CheckConj}} {
		for j, lg := range part.groups {
			train := 0
			if lg >= 0 && lg < len(cs.groups) {
				train = c.groups[cs.groups[lg]].train
			}
			for gi := range n {
				l, v := part.loss[j*n+gi], part.conj[j*n+gi]
				if math.IsNaN(l) || math.IsNaN(v) || math.IsInf(l, 0) || math.IsInf(v, 0) {
					return fmt.Errorf("metrics: a group sum is not finite")
				}
				if l < 0 || v < -valueSlack*float64(train+1) || v > float64(train)*(1+valueSlack)+valueSlack {
					return impossible("group sums (loss %g, conjugate %g) outside their range for %d training samples", l, v, train)
				}
			}
		}
	}
	for gi := range n {
		loss, conj := 0.0, 0.0
		for j := range rep {
			loss += m.GroupLoss[j*n+gi]
			conj += m.GroupConj[j*n+gi]
		}
		if !sameSum(loss, m.GridLoss[gi]) || !sameSum(conj, m.GridConj[gi]) {
			return impossible("its groups' sums (loss %g, conjugate %g) do not add up to its totals (%g, %g)", loss, conj, m.GridLoss[gi], m.GridConj[gi])
		}
	}
	return nil
}
