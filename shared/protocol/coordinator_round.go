package protocol

import (
	"fmt"
	"math"

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
	if len(c.history) > 0 && !c.finished {
		c.maybeReform()
		if c.finished {
			return
		}
	}
	if c.checkpoints {
		c.snap = c.checkpoint()
	}
	if (c.paused || !c.quorate()) && !c.done() {
		c.waiting = true
		return
	}
	if c.done() {
		for _, k := range c.connected() {
			c.send(k, Message{Kind: KindDone, Round: c.round})
		}
		c.finished = true
		return
	}
	c.round++
	c.resumeAt = nil // resuming is for the restored boundary only
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
	targets []int         // the updating groups' holders that answered the step
	report  map[int][]int // the local groups each reports in the direction
	u       []float64     // the round's primal direction (nil: nothing moves)
	grid    []float64     // the candidate steps the label holders price
	partial bool          // a participant is missing from the round's metrics
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
	c.await(PhaseRefresh, targets, func(p *phaseState) {
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
	c.await(PhaseOpen, []int{opener}, func(p *phaseState) {
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
