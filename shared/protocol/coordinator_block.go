package protocol

import (
	"math"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
)

// The block step (StepBlock). A round:
//
//  1. gram: every holder of an updating group picks the same H samples of
//     the group among those that violate optimality at the current margins
//     (a seed from the federation secret, the group and the round), and
//     seals its partial Gram X_k X_k^T of the picks (its own features of
//     them) into the group's chunks of the Gram layout;
//  2. gram-sum: the server adds the ciphertexts per group and returns each
//     holder its groups' sums; every holder solves the group's
//     H-dimensional box-constrained dual subproblem (sequential SDCA on the
//     picks against that Gram, scaled by kappa, its leading directions by
//     the number of updating groups and the rest by sigma': gram.Split,
//     Config.SharedDirections) until a sweep
//     adds less than 1e-5 of its gain (solveSweepGain) and gets
//     the same direction from the same numbers, then sends its share of dw
//     as under the hyfed rule (plus, for the groups it reports, the
//     feasibility limit of the step);
//  3. the server's exact dual line search along the combined direction,
//     up to the feasibility limit (steps beyond 1 are common: the scaled
//     subproblems are conservative), priced and applied as under hyfed.
//
// sigma' starts at CoCoA+'s safe scale, the number of updating groups, and
// follows the line search (adaptSigma); under group steps a round the
// feasibility limit cut lets it fall towards the groups' measured coupling
// (adaptStep, fallToCoupling). When a group's holders hold disjoint features (feature
// blocks) their partial Grams add up to the exact Gram (kappa 1); when
// they share features (a sample's non-zeros dealt among them) the sum
// misses the cross-holder terms, and kappa times it, kappa up to the
// number of holders, bounds the exact Gram from above (||sum_k a_k||^2 <=
// Q sum_k ||a_k||^2); the server measures kappa from the group's last
// direction where it sees the holders' shares.

// MaxBlockPicks caps H under the block step: every holder of an updating
// group seals H(H+1)/2 Gram entries a round (512: 33 ciphertexts at ring
// degree 4096).
const MaxBlockPicks = 512

// maxBlockStep bounds a step along the combined direction when no picked
// dual value limits it.
const maxBlockStep = 1e6

// blockPicks is the number of samples an updating group picks a round
// under the block step: H (Config.Inner) up to MaxBlockPicks, filled up to
// the BGV chunks its Gram takes (fillPicks).
func blockPicks(cfg Config) int { return BlockPicks(cfg.Inner) }

// BlockPicks is the number of samples a sample group updates per round
// under the block step with H = inner (fewer when fewer of its samples
// violate optimality).
func BlockPicks(inner int) int { return fillPicks(min(inner, MaxBlockPicks), gramFillLen) }

// gramFillLen is the chunk length fillPicks fills: BGV's (the ring degree,
// and the plaintext scheme's default). It is fixed, not the scheme's, so
// that every scheme picks the same samples (tests run the plaintext scheme
// with shorter chunks).
var gramFillLen = seal.Plaintext{}.ChunkLen()

// fillPicks returns the picks from H = h: the most whose packed Gram still
// fits the chunks of chunkLen slots that H's takes (at most MaxBlockPicks).
// A sealed chunk costs the same sealing and opening work however many of
// its slots hold a value (its bytes follow its values), so the last chunk's
// unused slots are picks at the cost of their bytes: the same ciphertexts
// and trips, more samples per round. With chunks of 4,096 slots H =
// 67 becomes 90 (one chunk), 225 becomes 238 (seven), 449 becomes 452
// (25).
func fillPicks(h, chunkLen int) int {
	if h < 1 || chunkLen < 1 {
		return h
	}
	slots := gramChunks(h, chunkLen) * chunkLen
	// the largest f with f(f+1)/2 <= slots
	f := int((math.Sqrt(8*float64(slots)+1) - 1) / 2)
	for f*(f+1)/2 > slots {
		f--
	}
	for (f+1)*(f+2)/2 <= slots {
		f++
	}
	return max(h, min(f, MaxBlockPicks))
}

// gramPicks is the most samples a group of train training samples picks
// under cfg: its Gram's span, the packed triangle its holders seal (padded
// with zeros when fewer samples violate optimality, so that the server can
// check every holder's chunk without learning the picks).
func gramPicks(cfg Config, train int) int { return min(blockPicks(cfg), train) }

// gramChunks is the number of chunks the packed upper triangle of an h x h
// Gram takes.
func gramChunks(h, chunkLen int) int { return (h*(h+1)/2 + chunkLen - 1) / chunkLen }

// blockStep runs the gram phase for the round's updating groups.
func (c *Coordinator) blockStep() {
	targets := c.selectUpdating()
	if len(targets) == 0 {
		c.trialPhase(nil, 0)
		return
	}
	c.initBlock()
	per := gramChunks(blockPicks(c.cfg), c.scheme.ChunkLen())
	for _, k := range targets {
		cs := c.clients[k]
		m := Message{Kind: KindGram, Round: c.round, Active: cs.activeRound}
		for _, gi := range c.updating {
			if lg, ok := cs.localGroup[gi]; ok {
				m.Groups = append(m.Groups, lg)
				m.GramAt = append(m.GramAt, gi*per)
			}
		}
		c.send(k, m)
	}
	c.await(PhaseGram, targets, c.gramsIn)
}

// gramsIn: the partial Grams are in. Each group's sum goes to the group's
// holders, with sigma' and kappa, to solve the group's subproblem.
func (c *Coordinator) gramsIn(p *phaseState) {
	// A group's Gram chunks hold nothing else.
	per := gramChunks(blockPicks(c.cfg), c.scheme.ChunkLen())
	targets, sum, ok := c.sumUpdating(p, func(ci int) int { return ci / per })
	if !ok {
		return
	}
	c.flow.targets = targets
	c.flow.groupSteps = c.groupStepsApply()
	report := c.reporters(targets)
	c.flow.report = report
	sigma := float64(len(c.updating))
	if c.sigma > 0 {
		sigma = math.Min(sigma, c.sigma)
	}
	c.roundSigma = sigma
	// Under SolveOnce each group's reporter alone is sent its Gram.
	solvers := targets
	c.flow.solves = nil
	if c.cfg.SolveOnce() {
		solvers = nil
		c.flow.solves = map[int]map[int]bool{}
		for _, k := range targets {
			cs := c.clients[k]
			for _, gi := range c.updating {
				if lg, ok := cs.localGroup[gi]; ok && slices.Contains(report[k], lg) {
					if c.flow.solves[k] == nil {
						c.flow.solves[k] = map[int]bool{}
						solvers = append(solvers, k)
					}
					c.flow.solves[k][gi] = true
				}
			}
		}
	}
	for _, k := range solvers {
		cs := c.clients[k]
		m := Message{Kind: KindGramSum, Round: c.round, Sealed: seal.Vec{}, Report: report[k], Sigma: sigma, Centered: c.flow.groupSteps}
		if c.cfg.SharedDirections.Count() > 0 {
			m.SigmaShared = float64(len(c.updating))
		}
		for _, gi := range c.updating {
			lg, ok := cs.localGroup[gi]
			if !ok || (c.flow.solves != nil && !c.flow.solves[k][gi]) {
				continue
			}
			m.Groups = append(m.Groups, lg)
			m.Kappa = append(m.Kappa, c.kappa[gi])
			for ci := gi * per; ci < (gi+1)*per; ci++ {
				if ch, ok := sum[ci]; ok {
					m.Sealed[ci] = ch
				}
			}
		}
		c.send(k, m)
	}
	if c.cfg.SolveOnce() {
		c.await(PhaseSolve, solvers, c.solvedIn)
		return
	}
	c.await(PhaseDirection, targets, c.directionIn)
}

// solvedIn (SolveOnce): the groups' solvers sent their sealed directions.
// Each group's goes to all of its holders (Sealed: the direction, Alpha:
// the centered one under group steps), which answer with their shares of
// dw as after a gram-sum. A solver that left takes its groups out of the
// round.
func (c *Coordinator) solvedIn(p *phaseState) {
	targets := c.flow.targets
	// A holder that left while the solvers worked (it was not waited for)
	// takes its groups out too: the direction phase would wait for it.
	gone := slices.Clone(p.dropped)
	for _, k := range targets {
		if !c.clients[k].connected && !slices.Contains(gone, k) {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		if targets = c.withoutGroupsOf(gone); len(targets) == 0 {
			c.trialPhase(nil, 0)
			return
		}
		c.flow.targets = targets
	}
	keep := map[int]bool{}
	for _, gi := range c.updating {
		keep[gi] = true
	}
	// Each chunk comes from its group's one solver (check): the "sum" of
	// the directions is the solvers' chunks, the centered ones are theirs.
	d, cent := seal.Vec{}, seal.Vec{}
	for ci, ch := range p.sum {
		if keep[c.chunkGroup[ci]] {
			d[ci] = ch
		}
	}
	for _, m := range p.replies {
		for ci, ch := range m.Alpha {
			if keep[c.chunkGroup[ci]] {
				cent[ci] = ch
			}
		}
	}
	report := c.reporters(targets)
	c.flow.report = report
	for _, k := range targets {
		cs := c.clients[k]
		m := Message{Kind: KindDirection, Round: c.round, Sealed: seal.Restrict(c.scheme, d, cs.slots), Report: report[k],
			Centered: c.flow.groupSteps}
		if c.flow.groupSteps {
			m.Alpha = seal.Restrict(c.scheme, cent, cs.slots)
		}
		for _, gi := range c.updating {
			if lg, ok := cs.localGroup[gi]; ok {
				m.Groups = append(m.Groups, lg)
			}
		}
		c.send(k, m)
	}
	c.await(PhaseDirection, targets, c.directionIn)
}

// initBlock sets kappa's starting values once the groups are known: 1 for
// groups whose holders hold disjoint features, the number of holders
// otherwise (the safe bound).
func (c *Coordinator) initBlock() {
	if len(c.dealt) == len(c.groups) && len(c.kappa) == len(c.groups) {
		return
	}
	c.dealt = make([]bool, len(c.groups))
	for gi, g := range c.groups {
		seen := map[int]bool{}
		for _, h := range g.holders {
			for _, f := range c.clients[h].features {
				if c.cfg.BiasValue != 0 && f == c.cfg.BiasFeature {
					continue // entered exactly, whoever holds it
				}
				if seen[f] {
					c.dealt[gi] = true
				}
				seen[f] = true
			}
		}
	}
	if len(c.kappa) != len(c.groups) { // not restored from a checkpoint
		c.kappa = make([]float64, len(c.groups))
		for gi, g := range c.groups {
			c.kappa[gi] = 1
			if c.dealt[gi] {
				c.kappa[gi] = float64(len(g.holders))
			}
		}
	}
}

// measureKappa sets the next kappa of each dealt group whose holders hold
// no other updating group: ||sum_k dw_k||^2 / sum_k ||dw_k||^2 from their
// plaintext shares of the round's direction (none under SealPrimal),
// clamped to [1, holders]: how much of the direction's curvature the
// partial Grams miss.
func (c *Coordinator) measureKappa() {
	count := map[int]int{}
	for _, gi := range c.updating {
		for _, h := range c.groups[gi].holders {
			count[h]++
		}
	}
	full := make([]float64, c.numFeatures)
	for _, gi := range c.updating {
		g := c.groups[gi]
		if !c.dealt[gi] {
			continue
		}
		own := true
		for _, h := range g.holders {
			own = own && count[h] == 1
		}
		if !own {
			continue
		}
		clear(full)
		part := 0.0
		for _, h := range g.holders {
			for j, f := range c.clients[h].features {
				if c.cfg.BiasValue != 0 && f == c.cfg.BiasFeature {
					continue // entered exactly, not bounded
				}
				v := c.dirDW[h][j]
				full[f] += v
				part += v * v
			}
		}
		ff := 0.0
		for _, v := range full {
			ff += v * v
		}
		if part > 0 {
			c.kappa[gi] = math.Max(1, math.Min(float64(len(g.holders)), ff/part))
		}
	}
}

// adaptSigma sets the next round's sigma' from the step the line search
// chose: with the subproblems' quadratic term sigma' A and the combined
// direction's true curvature about c A, the direction comes out c/sigma'
// times too long or short and the exact line search answers gamma about
// sigma'/c. sigma'/sqrt(gamma) moves halfway (in logarithm) to that c,
// clamped to [1, groups] (CoCoA+'s safe value). A step cut by the
// feasibility limit or no step says nothing.
func (c *Coordinator) adaptSigma(g float64) {
	if len(c.updating) < 2 || g <= 0 || g >= c.gammaMax*(1-1e-9) {
		return
	}
	c.sigma = math.Max(1, math.Min(float64(len(c.updating)), c.roundSigma/math.Sqrt(g)))
}
