package protocol

import (
	"fmt"
	"github.com/hyfed/hyfed/shared/solve"
	"maps"
	"math"
	"slices"

	"github.com/hyfed/hyfed/shared/gram"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/vec"
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
	c.awaitSum(PhaseStep, KindGramPart, targets, c.gramsIn)
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
	sigma := float64(len(c.updating))
	if c.sigma > 0 {
		sigma = math.Min(sigma, c.sigma)
	}
	c.roundSigma = sigma
	// Under SolveOnce each group's reporter alone is sent its Gram.
	solvers := targets
	c.flow.solves = nil
	if c.cfg.SolveOnce {
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
		if c.cfg.SharedDirections > 0 {
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
	if c.cfg.SolveOnce {
		c.awaitSum(PhaseDirection, KindSolved, solvers, c.solvedIn)
		return
	}
	c.awaitSum(PhaseDirection, KindDirPart, targets, c.directionIn)
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
	c.awaitSum(PhaseDirection, KindDirPart, targets, c.directionIn)
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

// biasColumn returns the block's column of the federation's bias feature
// (Config.BiasFeature), or -1 if there is none or the block does not hold it.
func (p *Participant) biasColumn() int {
	cfg := p.setup.Config
	if cfg.BiasValue == 0 {
		return -1
	}
	if j, ok := slices.BinarySearch(p.block.Features, cfg.BiasFeature); ok {
		return j
	}
	return -1
}

// checkBias refuses a block whose bias feature is not the declared
// constant: its part of the Grams would be wrong.
func (p *Participant) checkBias() error {
	j := p.biasColumn()
	if j < 0 {
		return nil
	}
	cfg := p.setup.Config
	for i := 0; i < p.block.N(); i++ {
		if v := p.block.X.At(i, j); v != 0 && v != cfg.BiasValue {
			return fmt.Errorf("participant: setup: sample %s holds %v in the bias feature %d, not the federation's %v", p.block.IDs[i], v, cfg.BiasFeature, cfg.BiasValue)
		}
	}
	return nil
}

// violates reports whether sample i's dual value is not optimal for the
// current margin (its projected dual gradient beyond a small tolerance):
// LIBLINEAR's shrinking rule, which every holder evaluates alike.
func (p *Participant) violates(i int) bool {
	y := p.block.Y[i]
	b := p.alpha[i] * y
	yz := y * p.ip[i]
	if p.loss.Name() == "hinge" {
		g := yz - 1 // the gradient in b of the dual, minimised
		const tol = 1e-6
		return (g < -tol && b < 1) || (g > tol && b > 0)
	}
	if b <= 0 || b >= 1 {
		return true
	}
	return math.Abs(math.Log((1-b)/b)-yz) > 1e-4
}

// onGram picks the samples of each updating group and seals the block's
// partial Gram of them in the group's chunks.
func (p *Participant) onGram(m Message) ([]Message, error) {
	p.pending, p.picks, p.gramAt, p.gammaMax = nil, map[int][]int{}, map[int]int{}, math.Inf(1)
	p.own = map[int][]float64{}
	p.limits = map[int][2]float64{}
	if len(m.GramAt) != len(m.Groups) {
		return nil, fmt.Errorf("participant: gram: %d groups but %d Gram positions", len(m.Groups), len(m.GramAt))
	}
	h := blockPicks(p.setup.Config)
	cl := p.key.Scheme().ChunkLen()
	buf := make([]float64, len(p.block.Features))
	bias := p.biasColumn()
	var slots, span []int
	var vals []float64
	for j, g := range m.Groups {
		if g < 0 || g >= len(p.groupTrain) || m.GramAt[j] < 0 || m.GramAt[j] > DefaultLimits.MaxChunks {
			return nil, fmt.Errorf("participant: gram: bad group %d at chunk %d", g, m.GramAt[j])
		}
		if _, dup := p.picks[g]; dup {
			return nil, fmt.Errorf("participant: gram: group %d twice", g)
		}
		var cand []int
		for _, i := range p.groupTrain[g] {
			if p.violates(i) {
				cand = append(cand, i)
			}
		}
		picks := append([]int(nil), pick(cand, h, p.secret.PickSeed(p.setup.GroupKeys[g], m.Round))...)
		p.picks[g], p.gramAt[g] = picks, m.GramAt[j]
		if p.sole[g] { // the group's Gram is this participant's own: kept, not sealed
			p.own[g] = nil
			if !p.onRows(g, picks) {
				p.own[g] = p.ownGram(picks, buf, bias)
			}
			continue
		}
		// The packed upper triangle, row by row, from the group's first chunk.
		slot := m.GramAt[j] * cl
		hs := gramPicks(p.setup.Config, len(p.groupTrain[g]))
		span = slices.Grow(span, hs*(hs+1)/2)
		for t := range hs * (hs + 1) / 2 {
			span = append(span, slot+t)
		}
		part := p.partialGram(picks, buf, bias)
		for t, v := range part {
			slots = append(slots, slot+t)
			vals = append(vals, v)
		}
	}
	v, err := seal.SealSlots(p.key, slots, vals, span)
	if err != nil {
		return nil, fmt.Errorf("participant: gram: %w", err)
	}
	return []Message{{Kind: KindGramPart, Round: m.Round, Sealed: v}}, nil
}

// partialGram returns the packed upper triangle, row by row, of the picks'
// Gram on the participant's features, without the bias's part (public:
// every holder adds it alike); buf is scratch of the block's width.
func (p *Participant) partialGram(picks []int, buf []float64, bias int) []float64 {
	x := p.block.X
	out := make([]float64, 0, len(picks)*(len(picks)+1)/2)
	for a, i := range picks {
		clear(buf)
		x.AddRowTo(i, 1, buf)
		if bias >= 0 {
			buf[bias] = 0
		}
		for _, k := range picks[a:] {
			out = append(out, x.Dot(k, buf))
		}
	}
	return out
}

// ownGram is the partial Gram of a group the participant holds alone,
// quantized: what a sealed sum of it would open to.
func (p *Participant) ownGram(picks []int, buf []float64, bias int) []float64 {
	out := p.partialGram(picks, buf, bias)
	quantize(out)
	return out
}

// onGramSum opens each updating group's summed Gram and solves the group's
// subproblem. Under SolveOnce (the client is the group's solver) it seals
// the directions it found, quantized, for the server to hand to all of the
// group's holders (onDirection); otherwise it answers as onDirection does,
// with them.
func (p *Participant) onGramSum(m Message) ([]Message, error) {
	if len(m.Kappa) != len(m.Groups) {
		return nil, fmt.Errorf("participant: gram-sum: %d groups but %d kappas", len(m.Groups), len(m.Kappa))
	}
	if !(m.Sigma >= 1) {
		return nil, fmt.Errorf("participant: gram-sum: sigma %v below 1", m.Sigma)
	}
	shared := p.setup.Config.SharedDirections
	if shared > 0 && !(m.SigmaShared >= m.Sigma) {
		return nil, fmt.Errorf("participant: gram-sum: shared directions' scale %v below sigma %v", m.SigmaShared, m.Sigma)
	}
	once := p.setup.Config.SolveOnce
	cl := p.key.Scheme().ChunkLen()
	d := make([]float64, p.block.N())
	var dCent []float64
	if m.Centered {
		dCent = make([]float64, p.block.N())
	}
	var solved []int // the samples whose directions this client sends (SolveOnce)
	for j, g := range m.Groups {
		picks, ok := p.picks[g]
		if !ok {
			return nil, fmt.Errorf("participant: gram-sum for group %d, which was not asked for its Gram this round", g)
		}
		kappa := m.Kappa[j]
		if !(kappa >= 1) {
			return nil, fmt.Errorf("participant: gram-sum: kappa %v below 1", kappa)
		}
		h := len(picks)
		if h == 0 {
			continue
		}
		packed, own := p.own[g]
		if own && packed == nil { // held alone, solved on its rows
			if kappa != 1 {
				return nil, fmt.Errorf("participant: gram-sum: kappa %v for group %d, which this participant holds alone", kappa, g)
			}
			delta, cent := p.solveRows(picks, m.Sigma, m.SigmaShared, m.Centered, once)
			for r, i := range picks {
				d[i] = delta[r]
				if m.Centered {
					dCent[i] = cent[r]
				}
			}
			solved = append(solved, picks...)
			continue
		}
		if !own {
			base := p.gramAt[g] * cl
			slots := make([]int, h*(h+1)/2)
			for t := range slots {
				slots[t] = base + t
			}
			var err error
			if packed, err = seal.OpenSlots(p.key, m.Sealed, slots); err != nil {
				return nil, fmt.Errorf("participant: gram-sum: group %d: %w", g, err)
			}
		}
		a := make([]float64, h*h)
		b2 := p.setup.Config.BiasValue * p.setup.Config.BiasValue
		t := 0
		for r := 0; r < h; r++ {
			for s := r; s < h; s++ {
				v := kappa*packed[t] + b2
				a[r*h+s], a[s*h+r] = v, v
				t++
			}
		}
		sub := p.sub(picks)
		var delta []float64
		if shared > 0 {
			delta = solve.Group(sub, solve.NewGram(gram.Split(a, h, shared, m.Sigma, m.SigmaShared), h), 1, nil, nil)
		} else {
			delta = solve.Group(sub, solve.NewGram(a, h), m.Sigma, nil, nil)
		}
		if once {
			quantize(delta) // what the other holders get
		}
		for r, i := range picks {
			d[i] = delta[r]
		}
		if m.Centered {
			// The second direction, from where the first leads (its
			// dual values, and the margins its own change of w gives
			// them: the other groups' moves are the server's to price,
			// not sigma''s), against the Gram of the picks less their
			// mean row (group steps).
			zoff := make([]float64, h)
			for r := range h {
				zoff[r] = vec.Dot(a[r*h:(r+1)*h], delta) / p.lambdaN
			}
			solve.CenterGram(a, h)
			cent := solve.Group(sub, solve.NewGram(a, h), m.Sigma, delta, zoff)
			if once {
				quantize(cent)
			}
			for r, i := range picks {
				dCent[i] = cent[r]
			}
		}
		solved = append(solved, picks...)
	}
	if !once {
		return p.blockDirection(m.Round, m.Groups, d, dCent, p.reportSet(m.Report))
	}
	p.kept = &keptSolve{round: m.Round, groups: map[int]bool{}, d: d, cent: dCent}
	for _, g := range m.Groups {
		p.kept.groups[g] = true
	}
	out := Message{Kind: KindSolved, Round: m.Round}
	slots := make([]int, len(solved))
	vals := make([]float64, len(solved))
	for x, i := range solved {
		slots[x], vals[x] = p.setup.Slots[i], d[i]
	}
	var err error
	if out.Sealed, err = seal.SealSlots(p.key, slots, vals, p.setup.Slots); err != nil {
		return nil, fmt.Errorf("participant: solved: %w", err)
	}
	if m.Centered {
		for x, i := range solved {
			vals[x] = dCent[i]
		}
		if out.Alpha, err = seal.SealSlots(p.key, slots, vals, p.setup.Slots); err != nil {
			return nil, fmt.Errorf("participant: solved: %w", err)
		}
	}
	return []Message{out}, nil
}

// quantize rounds v in place to the fixed-point grid of sealed values.
func quantize(v []float64) {
	for i, x := range v {
		v[i] = seal.Quantize(x)
	}
}

// onBlockDirection (SolveOnce): the directions the groups' solvers found,
// sealed, on the client's samples. It answers as the solver would have.
func (p *Participant) onBlockDirection(m Message) ([]Message, error) {
	kept := p.kept
	p.kept = nil
	if kept != nil && (kept.round != m.Round || (m.Centered && kept.cent == nil)) {
		kept = nil
	}
	skip := kept.chunks(p)
	sealed, alpha := withoutChunks(m.Sealed, skip), withoutChunks(m.Alpha, skip)
	d, err := seal.OpenSlots(p.key, sealed, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: direction: %w", err)
	}
	var dCent []float64
	if m.Centered {
		if dCent, err = seal.OpenSlots(p.key, alpha, p.setup.Slots); err != nil {
			return nil, fmt.Errorf("participant: direction: %w", err)
		}
	} else if len(m.Alpha) > 0 {
		return nil, fmt.Errorf("participant: direction: a centered direction in a round without group steps")
	}
	kept.fill(p, d, dCent)
	for _, g := range m.Groups {
		if _, ok := p.picks[g]; !ok {
			return nil, fmt.Errorf("participant: direction for group %d, which was not asked for its Gram this round", g)
		}
	}
	// Only the picks move: the rest of a group's slots must open to zero.
	picked := make([]bool, p.block.N())
	for _, g := range m.Groups {
		for _, i := range p.picks[g] {
			picked[i] = true
		}
	}
	for i := range d {
		if !picked[i] && (d[i] != 0 || (dCent != nil && dCent[i] != 0)) {
			return nil, fmt.Errorf("participant: direction: sample %s moves but was not picked", p.block.IDs[i])
		}
	}
	return p.blockDirection(m.Round, m.Groups, d, dCent, p.reportSet(m.Report))
}

// keptSolve is what a group's solver sealed (SolveOnce): the direction
// message brings the same chunks back, and they open to these values bit
// for bit (the solver quantized them as sealing does), so the solver keeps
// them instead of opening its own chunks: two openings a round per solver.
type keptSolve struct {
	round   int
	groups  map[int]bool // local groups solved
	d, cent []float64    // per local sample, quantized (cent: nil without group steps)
}

// chunks returns the layout chunks of the kept groups (nil when nothing
// is kept). A chunk holds one group's samples (seal.PadLayout).
func (k *keptSolve) chunks(p *Participant) map[int]bool {
	if k == nil {
		return nil
	}
	cl := p.key.Scheme().ChunkLen()
	out := map[int]bool{}
	for i, s := range p.setup.Slots {
		if k.groups[p.setup.Group[i]] {
			out[s/cl] = true
		}
	}
	return out
}

// withoutChunks returns v less the given chunks (v itself when there are
// none to leave out).
func withoutChunks(v seal.Vec, skip map[int]bool) seal.Vec {
	if len(skip) == 0 || len(v) == 0 {
		return v
	}
	out := maps.Clone(v)
	for ci := range skip {
		delete(out, ci)
	}
	return out
}

// fill sets the kept groups' samples of d and dCent (opened without their
// chunks) to the kept values.
func (k *keptSolve) fill(p *Participant, d, dCent []float64) {
	if k == nil {
		return
	}
	for i := range d {
		if k.groups[p.setup.Group[i]] {
			d[i] = k.d[i] + 0 // + 0: BGV opens a -0 as 0
			if dCent != nil {
				dCent[i] = k.cent[i] + 0
			}
		}
	}
}

// blockDirection answers a block step's direction: the groups' directions
// d (and dCent under group steps) per local sample, nonzero on the picks
// only. It keeps each group's step limits (the largest step that keeps
// its picks' dual values feasible, along d, and along dCent from d) and
// returns the block's share of dw with the reported groups' limits.
func (p *Participant) blockDirection(round int, groups []int, d, dCent []float64, report []bool) ([]Message, error) {
	p.gammaMax = math.Inf(1)
	gmax, gCent := math.Inf(1), math.Inf(1)
	p.centered = nil
	for _, g := range groups {
		picks := p.picks[g]
		p.limits[g] = [2]float64{math.Inf(1), math.Inf(1)}
		if len(picks) == 0 {
			continue
		}
		delta := make([]float64, len(picks))
		for r, i := range picks {
			delta[r] = d[i]
		}
		limit := p.stepLimit(picks, delta)
		p.gammaMax = math.Min(p.gammaMax, limit)
		p.limits[g] = [2]float64{limit, math.Inf(1)}
		if report[g] {
			gmax = math.Min(gmax, limit)
		}
		if dCent != nil {
			cent := make([]float64, len(picks))
			for r, i := range picks {
				cent[r] = dCent[i]
			}
			climit := p.stepLimitFrom(picks, cent, delta)
			p.limits[g] = [2]float64{limit, climit}
			if report[g] {
				gCent = math.Min(gCent, climit)
			}
		}
	}
	out, err := p.directionPart(round, d, report)
	if err != nil {
		return nil, err
	}
	if !math.IsInf(gmax, 1) {
		out.GammaMax = math.Min(gmax, maxBlockStep)
	}
	if dCent != nil {
		out.DWCentered, out.DConjCentered = p.dirShare(dCent, d, report)
		out.GammaMaxCentered = math.Min(gCent, maxBlockStep)
		for i := range dCent {
			if p.block.Heldout[i] {
				dCent[i] = 0
			}
		}
		p.centered = dCent
	}
	return []Message{out}, nil
}

// stepLimit is the largest step along the picks' changes delta that keeps
// their dual values feasible (a y in [0, 1]).
func (p *Participant) stepLimit(picks []int, delta []float64) float64 {
	return p.stepLimitFrom(picks, delta, nil)
}

// stepLimitFrom is stepLimit from the dual values moved by base (per
// pick; nil: none).
func (p *Participant) stepLimitFrom(picks []int, delta, base []float64) float64 {
	limit := math.Inf(1)
	for r, i := range picks {
		y := p.block.Y[i]
		a := p.alpha[i]
		if base != nil {
			a += base[r]
		}
		db, b := delta[r]*y, a*y
		switch {
		case db > 0:
			limit = math.Min(limit, (1-b)/db)
		case db < 0:
			limit = math.Min(limit, b/(-db))
		}
	}
	return limit
}

// dirShare is the block's share of dw = X^T d and the conjugate change of
// the reported groups along d from the dual values moved by base (per
// sample; nil: the dual values as held), nothing kept.
func (p *Participant) dirShare(d, base []float64, report []bool) ([]float64, float64) {
	dw := make([]float64, len(p.block.Features))
	dconj := 0.0
	for _, i := range p.train {
		if d[i] == 0 {
			continue
		}
		p.block.X.AddRowTo(i, d[i], dw)
		if report[p.setup.Group[i]] {
			y, a := p.block.Y[i], p.alpha[i]
			if base != nil {
				a += base[i]
			}
			dconj += p.loss.Conj(a+d[i], y) - p.loss.Conj(a, y)
		}
	}
	return dw, dconj
}

// sub is group's subproblem at the picks, for solve.Group.
func (p *Participant) sub(picks []int) solve.Sub {
	s := solve.Sub{Loss: p.loss, LambdaN: p.lambdaN, Y: make([]float64, len(picks)), Alpha: make([]float64, len(picks)), Z: make([]float64, len(picks))}
	for x, i := range picks {
		s.Y[x], s.Alpha[x], s.Z[x] = p.block.Y[i], p.alpha[i], p.ip[i]
	}
	return s
}
