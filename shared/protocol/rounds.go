package protocol

import (
	"fmt"
	"github.com/hyfed/hyfed/shared/solve"
	"math"
	"sort"

	"github.com/hyfed/hyfed/shared/seal"
)

// eligible lists the clients that can take part in a phase now: connected,
// set up, and with a primal contribution that matches the dual values.
func (c *Coordinator) eligible() []int {
	var out []int
	for k, cs := range c.clients {
		if cs.connected && cs.ready && !cs.returned && cs.hello != nil {
			out = append(out, k)
		}
	}
	return out
}

func (c *Coordinator) nextRound() {
	// A round boundary: nothing is in flight, every completed round is
	// applied in full. This is the state a checkpoint holds.
	if c.checkpoints {
		c.snap = c.checkpoint()
	}
	if (c.paused || !c.quorate()) && c.round < c.cfg.Rounds {
		c.waiting = true
		return
	}
	if c.round >= c.cfg.Rounds {
		for _, k := range c.connected() {
			c.send(k, Message{Kind: KindDone, Round: c.round})
		}
		c.finished = true
		return
	}
	c.round++
	c.flow = roundFlow{}
	c.cur.Round = c.round
	if c.cur.Seconds == nil {
		c.cur.Seconds = map[string]float64{}
	}
	// One draw per client in index order, whoever is connected, so that a
	// seed gives the same participation whatever happens.
	for _, cs := range c.clients {
		cs.activeRound = c.rng.Float64() < c.cfg.Fraction
	}
	c.rule.round(c)
}

// roundFlow is what the phases of a HyFDCA round hand to the next one. A
// round runs as a sequence of phases, each started by a send and an await
// and ended by a named handler (gramsIn, directionIn,
// trialSumsIn, trialMetricsIn, then applyPhase and finishRound); the
// handlers take what earlier phases found from here.
type roundFlow struct {
	targets []int     // the updating groups' holders that answered the step
	u       []float64 // the round's primal direction (nil: nothing moves)
	grid    []float64 // the candidate steps the label holders price
	partial bool      // a participant is missing from the round's metrics
	metrics map[int]Message
	// GroupSteps (groupstep.go): the round's groups also solved against
	// their centered Grams; scale holds each updating holder's group's
	// weights on its two directions; what sigma' learns from (adaptStep):
	// stepMean the model's step along the groups' first directions when
	// no limit cut it (0: cut or no gain), cut whether the limit cut it,
	// coupling the groups' measured coupling.
	groupSteps bool
	scale      map[int][2]float64
	stepMean   float64
	cut        bool
	coupling   float64
	// solves (SolveOnce): the groups each solver was sent the Gram of.
	solves map[int]map[int]bool
	// trialTo: the clients sent the round's trial direction, at w's
	// version wAtTrial.
	trialTo  map[int]bool
	wAtTrial int
}

// hyfdcaRule is HyFDCA: dual values sealed at the server, primal
// contributions, and the step rules of Config.Step (block, hyfed, paper).
type hyfdcaRule struct{}

func (hyfdcaRule) round(c *Coordinator) {
	var refresh []int
	for k, cs := range c.clients {
		if !cs.connected || !cs.ready || !cs.stale {
			continue
		}
		if c.cfg.synced() || cs.activeRound || cs.returned {
			refresh = append(refresh, k)
		}
	}
	step := c.blockStep
	if c.cfg.Step == StepPaper {
		step = c.paperStep
	}
	full := c.needFullIP || c.round%fullIPEvery == 0
	c.needFullIP = false
	switch {
	case len(refresh) > 0:
		// Returning clients send a fresh hat_w first; w changes, so every
		// inner product is computed again before the local steps.
		c.refreshPhase(refresh, func() { c.ipPhase(false, step) })
	case full && c.cfg.synced():
		// Inner products are updated by increments between full
		// computations; start afresh now and then against drift.
		c.ipPhase(false, step)
	default:
		step()
	}
}

func (hyfdcaRule) admit(*Coordinator) error { return nil }
func (hyfdcaRule) rejoin(*clientState)      {}
func (hyfdcaRule) dual() bool               { return true }

func (hyfdcaRule) checkLocal(*Coordinator, int, Message) error {
	return fmt.Errorf("local-part: a hyfdca federation asks for no local steps")
}

func (hyfdcaRule) local(*Participant, Message) ([]Message, error) {
	return nil, fmt.Errorf("participant: local steps asked of a hyfdca federation")
}

func (hyfdcaRule) open(p *Participant, m Message) ([]Message, error) { return openFeatures(p, m) }

// sumReplies returns the sum of the sealed vectors of the given clients'
// replies to phase p, which awaitSum has built as they arrived: the given
// clients must be all that replied. Otherwise (a bug of ours) the
// federation fails and ok is false.
func (c *Coordinator) sumReplies(p *phaseState, clients []int) (seal.Vec, bool) {
	if !p.summed || len(clients) != len(p.replies) {
		c.fail(fmt.Errorf("phase %s: a sum of %d of its %d replies asked for; it holds the sum of all (awaited for sums: %v)", p.name, len(clients), len(p.replies), p.summed))
		return nil, false
	}
	return p.sum, true
}

// noRefresh makes the set-up participants that returned eligible again:
// the baselines keep no dual values for them to catch up on.
func (c *Coordinator) noRefresh() {
	for _, cs := range c.clients {
		if cs.connected && cs.ready {
			cs.stale, cs.returned = false, false
		}
	}
}

// sumStored adds every client's stored sealed vector (sealedW: a share of
// w under SealPrimal's paper rule, FedHybrid's last summand); one never
// stored counts 0. AddInto leaves the stored vectors intact for the rounds
// their owners sit out. On an error the federation fails and ok is false.
func (c *Coordinator) sumStored() (seal.Vec, bool) {
	sum := seal.Vec{}
	for k, cs := range c.clients {
		if cs.sealedW == nil {
			continue
		}
		if err := seal.AddInto(c.scheme, sum, cs.sealedW); err != nil {
			c.fail(fmt.Errorf("client %d's stored sealed vector: %w", k, err))
			return nil, false
		}
	}
	return sum, true
}

// featureHolders counts, per feature, the given clients that hold it.
func (c *Coordinator) featureHolders(clients []int) []int {
	n := make([]int, c.numFeatures)
	for _, k := range clients {
		for _, f := range c.clients[k].features {
			n[f]++
		}
	}
	return n
}

// quorate reports whether enough participants are connected for a round.
// A participant whose threshold key is being set up again does not count
// yet: it cannot open what a round would send it.
func (c *Coordinator) quorate() bool {
	n := 0
	for _, x := range c.clients {
		if x.hello != nil && x.connected && x.keyRejoin == "" {
			n++
		}
	}
	return float64(n) >= c.cfg.Quorum*float64(c.numRegistered())
}

// fullIPEvery is how often (in rounds) the default step recomputes every
// inner product instead of updating it.
const fullIPEvery = 50

func (c *Coordinator) refreshPhase(targets []int, then func()) {
	for _, k := range targets {
		v := seal.Restrict(c.scheme, c.alpha, c.clients[k].slots)
		c.send(k, Message{Kind: KindRefresh, Round: c.round, Sealed: v})
	}
	c.await(PhaseRefresh, KindPrimal, targets, func(p *phaseState) {
		for k, m := range p.replies {
			if c.cfg.SealPrimal {
				c.clients[k].sealedW = m.Sealed
			} else {
				c.clients[k].hatW = m.HatW
			}
			c.clients[k].stale, c.clients[k].returned = false, false
		}
		switch {
		case !c.cfg.SealPrimal:
			c.recomputeW()
		case c.cfg.synced():
			// The synced rules keep w = sum_k hat_w_k/(lambda N) by
			// applying each round's opened direction; a returning
			// client's fresh hat_w_k differs from its share of w only by
			// the rounding of its dual values (a resync, sent sealed
			// nowhere: the reply is an acknowledgement).
		default:
			c.openW(then)
			return
		}
		then()
	})
}

// openW sets w from the clients' sealed shares (SealPrimal, paper rule):
// their sum is opened by a participant. If nobody is left to open it, w
// stays as it was and is opened before the next step.
func (c *Coordinator) openW(then func()) {
	sum, ok := c.sumStored()
	if !ok {
		return
	}
	c.openPhase(sum, map[int]bool{}, func(w []float64) {
		copy(c.w, w)
		c.wVersion++
		c.wStale = false
		then()
	}, func() {
		c.wStale = true
		then()
	})
}

// openPhase has one participant open an aggregate of sealed primal vectors
// (feature layout) and return it. The opener rotates with the round so that
// the work spreads; if it leaves, the next one is asked; with nobody left,
// fail runs.
func (c *Coordinator) openPhase(sum seal.Vec, tried map[int]bool, done func(vals []float64), fail func()) {
	el := c.eligible()
	opener := -1
	for i := range el {
		if k := el[(c.round+i)%len(el)]; !tried[k] {
			opener = k
			break
		}
	}
	if opener < 0 {
		fail()
		return
	}
	tried[opener] = true
	c.send(opener, Message{Kind: KindOpen, Round: c.round, Sealed: sum})
	c.await(PhaseOpen, KindOpened, []int{opener}, func(p *phaseState) {
		m, ok := p.replies[opener]
		if !ok {
			c.openPhase(sum, tried, done, fail)
			return
		}
		done(m.W)
	})
}

func (c *Coordinator) recomputeW() {
	c.wVersion++
	for i := range c.w {
		c.w[i] = 0
	}
	s := 1 / (c.cfg.Lambda * float64(c.numTrain))
	for _, cs := range c.clients {
		for j, f := range cs.features {
			c.w[f] += s * cs.hatW[j]
		}
	}
}

// directionIn (block): every holder's share dw_k of the primal
// direction and the conjugate change are in. Without sealed primal the
// server adds the shares itself (block: and measures kappa); with it, a
// participant opens their sealed sum. Then the line search.
func (c *Coordinator) directionIn(p *phaseState) {
	if len(p.dropped) > 0 {
		c.trialPhase(nil, 0)
		return
	}
	targets := c.flow.targets
	dconj, gmax := 0.0, maxBlockStep
	for _, k := range targets {
		m := p.replies[k]
		dconj += m.DConj
		if m.GammaMax > 0 {
			gmax = math.Min(gmax, m.GammaMax)
		}
	}
	if !c.cfg.SealPrimal {
		c.dirDW = map[int][]float64{}
		for _, k := range targets {
			c.dirDW[k] = p.replies[k].DW
			c.clients[k].lastDW, c.clients[k].lastDWRound = p.replies[k].DW, c.round
		}
		c.measureKappa()
		if c.flow.groupSteps && c.groupLineSearch(targets, p.replies) {
			return
		}
		c.lineSearch(c.directionOf(targets, p.replies), dconj, gmax)
		return
	}
	// Sealed shares of u: add them, have a participant open the sum; no
	// client's own share is ever seen.
	sum, ok := c.sumReplies(p, targets)
	if !ok {
		return
	}
	c.dirDW = nil
	c.openPhase(sum, map[int]bool{}, func(u []float64) {
		c.lineSearch(u, dconj, gmax)
	}, func() { c.trialPhase(nil, 0) })
}

// selectUpdating sets the round's updating groups (c.updating): those
// whose holders are all eligible, at least one of them active. It returns
// their holders.
func (c *Coordinator) selectUpdating() []int {
	el := map[int]bool{}
	for _, k := range c.eligible() {
		el[k] = true
	}
	c.updating = c.updating[:0]
	for gi, g := range c.groups {
		all, any := true, false
		for _, h := range g.holders {
			all = all && el[h]
			any = any || c.clients[h].activeRound
		}
		if all && any && g.train > 0 {
			c.updating = append(c.updating, gi)
		}
	}
	for k := range el {
		if c.clients[k].activeRound {
			c.cur.Active++
		}
	}
	c.cur.Updated = len(c.updating)
	targetSet := map[int]bool{}
	for _, gi := range c.updating {
		for _, h := range c.groups[gi].holders {
			targetSet[h] = true
		}
	}
	return sortedSet(targetSet)
}

// sumUpdating returns the sum, built as they arrived, of the sealed replies
// of a phase sent to the holders of the round's updating groups (groupOf:
// the group a chunk belongs to). If a holder left, the groups it holds do not update this round and their
// chunks are left out; the others' sums are complete. It returns the
// remaining holders; ok is false when the round went on without a step (no
// group left) or the federation failed.
func (c *Coordinator) sumUpdating(p *phaseState, groupOf func(ci int) int) (targets []int, sum seal.Vec, ok bool) {
	targets = sortedKeys(p.replies)
	if len(p.dropped) > 0 {
		if targets = c.withoutGroupsOf(p.dropped); len(targets) == 0 {
			c.trialPhase(nil, 0)
			return nil, nil, false
		}
	}
	keep := map[int]bool{}
	for _, gi := range c.updating {
		keep[gi] = true
	}
	if !p.summed {
		c.fail(fmt.Errorf("phase %s: not awaited for sums", p.name))
		return nil, nil, false
	}
	// A chunk holds one group's values, added up from its holders only
	// (check): the chunks of the groups kept are their sums.
	for ci := range p.sum {
		if !keep[groupOf(ci)] {
			delete(p.sum, ci)
		}
	}
	return targets, p.sum, true
}

// withoutGroupsOf drops from the round's updating groups those held by any
// of the gone clients, and returns the holders of the remaining ones.
func (c *Coordinator) withoutGroupsOf(gone []int) []int {
	out := map[int]bool{}
	for _, k := range gone {
		out[k] = true
	}
	kept := c.updating[:0]
	targets := map[int]bool{}
	for _, gi := range c.updating {
		ok := true
		for _, h := range c.groups[gi].holders {
			ok = ok && !out[h]
		}
		if ok {
			kept = append(kept, gi)
			for _, h := range c.groups[gi].holders {
				targets[h] = true
			}
		}
	}
	c.updating = kept
	c.cur.Updated = len(kept)
	return sortedSet(targets)
}

// directionOf returns the round's primal direction u = dw/(lambda N) from
// the holders' plaintext shares.
func (c *Coordinator) directionOf(targets []int, replies map[int]Message) []float64 {
	lambdaN := c.cfg.Lambda * float64(c.numTrain)
	u := make([]float64, c.numFeatures)
	for _, k := range targets {
		for j, f := range c.clients[k].features {
			u[f] += replies[k].DW[j] / lambdaN
		}
	}
	return u
}

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
	c.flow.partial = len(targets) < len(c.clients)
	c.awaitSum(PhaseIP, KindIPPart, targets, c.trialSumsIn)
}

// trialSumsIn: the sealed x_n.u are in; their sums go back with the
// candidate steps, and the label holders price them.
func (c *Coordinator) trialSumsIn(p *phaseState) {
	got, ok := c.returnSums(p, c.flow.grid, false)
	if !ok {
		return
	}
	c.flow.partial = c.flow.partial || len(p.dropped) > 0
	c.await(PhaseMetrics, KindMetrics, got, c.trialMetricsIn)
}

// trialMetricsIn: every candidate step is priced. The best is applied
// (applyPhase); the round is recorded at the step that moved.
func (c *Coordinator) trialMetricsIn(p *phaseState) {
	f := &c.flow
	f.partial = f.partial || len(p.dropped) > 0
	f.metrics = p.replies
	gi := 0
	if f.u != nil {
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
	c.awaitSum(PhaseApply, KindApplied, targets, func(p *phaseState) {
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

// paperStep is Algorithm 1 with Algorithm 5: active clients send
// gamma*delta/|B_n|, the server adds them to the dual values and the active
// clients send fresh primal contributions; absent ones keep stale ones.
func (c *Coordinator) paperStep() {
	if c.wStale {
		c.openW(func() {
			if c.wStale {
				c.ipPhase(true, nil) // still nobody to open w: report and wait
				return
			}
			c.paperStep()
		})
		return
	}
	var targets []int
	for _, k := range c.eligible() {
		if c.clients[k].activeRound {
			targets = append(targets, k)
		}
	}
	c.cur.Active = len(targets)
	if len(targets) == 0 {
		c.ipPhase(true, nil)
		return
	}
	for _, k := range targets {
		c.send(k, Message{Kind: KindStep, Round: c.round, Active: true})
	}
	c.awaitSum(PhaseStep, KindDelta, targets, func(p *phaseState) {
		got := sortedKeys(p.replies)
		if err := seal.AddInto(c.scheme, c.alpha, p.sum); err != nil {
			c.fail(err)
			return
		}
		c.cur.Gamma = c.cfg.Gamma
		for _, k := range c.eligible() {
			c.clients[k].stale = true
		}
		c.refreshPhase(got, func() { c.ipPhase(true, nil) })
	})
}

// reporters picks, for every sample group, the first of the given clients
// that holds it: it reports the group's label-dependent sums. It returns
// each client's local group indexes.
func (c *Coordinator) reporters(clients []int) map[int][]int {
	in := map[int]bool{}
	for _, k := range clients {
		in[k] = true
	}
	out := map[int][]int{}
	for gi, g := range c.groups {
		for _, h := range g.holders {
			if in[h] {
				out[h] = append(out[h], c.clients[h].localGroup[gi])
				break
			}
		}
	}
	return out
}

// ipPhase sends w, sums the sealed inner products, returns them, and
// collects the metrics (ipSumsIn, ipMetricsIn). With final set it closes
// the round; then, if set, runs after the metrics instead of the next
// round.
func (c *Coordinator) ipPhase(final bool, then func()) {
	targets := c.eligible()
	for _, k := range targets {
		c.send(k, Message{Kind: KindWeights, Round: c.round, Full: true, W: c.onFeatures(k, c.w)})
		c.clients[k].wHeld = c.wVersion + 1
	}
	c.ip = ipFlow{final: final, then: then, partial: len(targets) < len(c.clients)}
	c.awaitSum(PhaseIP, KindIPPart, targets, c.ipSumsIn)
}

// ipFlow is what ipPhase hands from its first phase to its second.
type ipFlow struct {
	final   bool
	then    func()
	partial bool
}

// ipSumsIn: the sealed inner products are in; their sums go back and the
// holders report the metrics.
func (c *Coordinator) ipSumsIn(p *phaseState) {
	got, ok := c.returnSums(p, nil, c.cfg.Step == StepPaper)
	if !ok {
		return
	}
	c.ip.partial = c.ip.partial || len(p.dropped) > 0
	c.await(PhaseMetrics, KindMetrics, got, c.ipMetricsIn)
}

func (c *Coordinator) ipMetricsIn(p *phaseState) {
	f := c.ip
	f.partial = f.partial || len(p.dropped) > 0
	if f.partial {
		c.needFullIP = true
	}
	if f.final {
		c.record(p.replies, 0, f.partial)
	}
	if f.then != nil {
		f.then()
		return
	}
	c.nextRound()
}

// record closes the round with the metrics priced at grid entry gi (the
// step taken this round; w already includes it).
func (c *Coordinator) record(replies map[int]Message, gi int, partial bool) {
	var lossSum, conjSum float64
	var trainOK, trainN, heldOK, heldN int
	for _, k := range sortedKeys(replies) {
		m := replies[k]
		lossSum += m.GridLoss[gi]
		conjSum += m.GridConj[gi]
		trainOK += m.GridTrainOK[gi]
		trainN += m.TrainN
		heldOK += m.GridHeldOK[gi]
		heldN += m.HeldN
	}
	ww := 0.0
	for _, v := range c.w {
		ww += v * v
	}
	n := float64(c.numTrain)
	r := &c.cur
	r.Round = c.round
	r.Dual = c.dualAt(replies, gi, conjSum, ww)
	r.Primal = c.cfg.Lambda/2*ww + lossSum/n
	r.Gap = r.Primal - r.Dual
	r.TrainAcc = float64(trainOK) / math.Max(1, float64(trainN))
	r.HeldAcc = float64(heldOK) / math.Max(1, float64(heldN))
	if trainN != c.numTrain {
		// Some group had no holder to report: the dual misses its terms.
		partial = true
		r.Dual = math.NaN()
	}
	if !c.rule.dual() {
		// The baselines have no dual: only P and the accuracies mean
		// anything.
		r.Dual, r.Gap = math.NaN(), math.NaN()
	}
	r.Partial = partial
	if partial {
		// Some inner products or labels are missing: P and the accuracies
		// would describe a subset only.
		r.Primal, r.Gap, r.TrainAcc, r.HeldAcc = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	if heldN == 0 && !partial {
		r.HeldAcc = r.TrainAcc
	}
	c.history = append(c.history, *r)
	c.keepIfBest(*r)
	c.cur = RoundMetrics{Seconds: map[string]float64{}}
}

// dualAt returns the dual of the dual values every party holds after the
// candidate step gi, D(a) = conj/N - lambda/2 ||w(a)||^2, from the summed
// conjugate terms conj and ||w_g||^2 = ww of the candidate model w_g. The
// server's w moves by gamma u while the dual values move by their
// quantised steps, so w(a) is not w_g; but ||w(a)||^2 = 2 w_g.w(a) -
// ||w_g||^2 + ||w(a) - w_g||^2, and the clients' GridWDot sum to w_g.w(a).
// The last term is the square of the rounding drift (below 1e-12 of
// ||w||^2 in the tests): dropping it leaves D exact to the float
// arithmetic, where pricing with ||w_g||^2 alone was off by lambda
// w_g.(w(a) - w_g), enough to put D above P* near the optimum. NaN if a
// client holding training samples did not answer: its part is missing.
func (c *Coordinator) dualAt(replies map[int]Message, gi int, conj, ww float64) float64 {
	dot := 0.0
	for k, cs := range c.clients {
		if cs.hello == nil || cs.trainN == 0 {
			continue
		}
		m, ok := replies[k]
		if !ok || gi >= len(m.GridWDot) {
			return math.NaN()
		}
		dot += m.GridWDot[gi]
	}
	return conj/float64(c.numTrain) - c.cfg.Lambda/2*(2*dot-ww)
}

// returnSums adds the sealed vectors of an inner-product phase and sends
// every client that answered the sums for its own samples, with the
// candidate steps to price (grid) and, under the paper rule, its sealed dual
// values. It returns the clients that answered.
func (c *Coordinator) returnSums(p *phaseState, grid []float64, withAlpha bool) ([]int, bool) {
	got := sortedKeys(p.replies)
	sum, ok := c.sumReplies(p, got)
	if !ok {
		return nil, false
	}
	report := c.reporters(got)
	c.phaseGrid = grid
	for _, k := range got {
		slots := c.clients[k].slots
		m := Message{Kind: KindIP, Round: c.round, Sealed: seal.Restrict(c.scheme, sum, slots), Report: report[k], Grid: grid}
		if withAlpha {
			m.Alpha = seal.Restrict(c.scheme, c.alpha, slots)
		}
		c.send(k, m)
	}
	return got, true
}

// onFeatures returns v restricted to client k's features (zeros for nil v).
func (c *Coordinator) onFeatures(k int, v []float64) []float64 {
	fs := c.clients[k].features
	out := make([]float64, len(fs))
	if v != nil {
		for j, f := range fs {
			out[j] = v[f]
		}
	}
	return out
}

func sortedSet(s map[int]bool) []int {
	out := make([]int, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
