package protocol

import (
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
	if c.round >= c.cfg.Rounds {
		for _, k := range c.connected() {
			c.send(k, Message{Kind: KindDone, Round: c.round})
		}
		c.finished = true
		return
	}
	c.round++
	c.cur.Round = c.round
	if c.cur.Seconds == nil {
		c.cur.Seconds = map[string]float64{}
	}
	// One draw per client in index order, whoever is connected, so that a
	// seed gives the same participation whatever happens.
	for _, cs := range c.clients {
		cs.activeRound = c.rng.Float64() < c.cfg.Fraction
	}
	var refresh []int
	for k, cs := range c.clients {
		if !cs.connected || !cs.ready || !cs.stale {
			continue
		}
		if c.cfg.Step == StepHyFed || cs.activeRound || cs.returned {
			refresh = append(refresh, k)
		}
	}
	step := c.hyfedStep
	if c.cfg.Step == StepPaper {
		step = c.paperStep
	}
	if len(refresh) == 0 {
		step()
		return
	}
	// Returning clients send a fresh hat_w first; w changes, so every
	// inner product is computed again before the local steps.
	c.refreshPhase(refresh, func() { c.ipPhase(false, 0, false, step) })
}

func (c *Coordinator) refreshPhase(targets []int, then func()) {
	for _, k := range targets {
		v, err := seal.Restrict(c.scheme, c.alpha, c.clients[k].slots)
		if err != nil {
			c.fail(err)
			return
		}
		c.send(k, Message{Kind: KindRefresh, Round: c.round, Sealed: v})
	}
	c.await(PhaseRefresh, KindPrimal, targets, func(p *phaseState) {
		for k, m := range p.replies {
			c.clients[k].hatW = m.HatW
			c.clients[k].stale, c.clients[k].returned = false, false
		}
		c.recomputeW()
		then()
	})
}

func (c *Coordinator) recomputeW() {
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

// hyfedStep updates the sample groups whose holders are all here and at
// least one of them active: every holder of such a group contributes its
// block to the direction's dw, so the server's line search is exact.
func (c *Coordinator) hyfedStep() {
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
	if len(c.updating) == 0 {
		c.ipPhase(false, 0, true, nil)
		return
	}
	targetSet := map[int]bool{}
	for _, gi := range c.updating {
		for _, h := range c.groups[gi].holders {
			targetSet[h] = true
		}
	}
	targets := sortedSet(targetSet)
	for _, k := range targets {
		cs := c.clients[k]
		m := Message{Kind: KindStep, Round: c.round, Active: cs.activeRound}
		for _, gi := range c.updating {
			lg, ok := cs.localGroup[gi]
			if !ok {
				continue
			}
			n := 0
			for _, h := range c.groups[gi].holders {
				if c.clients[h].activeRound {
					n++
				}
			}
			m.Groups = append(m.Groups, lg)
			m.ActiveHolders = append(m.ActiveHolders, n)
		}
		c.send(k, m)
	}
	c.await(PhaseStep, KindDelta, targets, func(p *phaseState) {
		if len(p.dropped) > 0 {
			c.ipPhase(false, 0, true, nil) // a holder left: the round applies nothing
			return
		}
		parts := make([]seal.Vec, 0, len(targets))
		for _, k := range targets {
			parts = append(parts, p.replies[k].Sealed)
		}
		d, err := seal.Sum(c.scheme, parts...)
		if err != nil {
			c.fail(err)
			return
		}
		c.direction = d
		report := c.reporters(targets)
		for _, k := range targets {
			v, err := seal.Restrict(c.scheme, d, c.clients[k].slots)
			if err != nil {
				c.fail(err)
				return
			}
			c.send(k, Message{Kind: KindDirection, Round: c.round, Sealed: v, Report: report[k]})
		}
		c.await(PhaseDirection, KindDirPart, targets, func(p *phaseState) {
			if len(p.dropped) > 0 {
				c.ipPhase(false, 0, true, nil)
				return
			}
			c.lineSearch(targets, p.replies)
		})
	})
}

// lineSearch finds the step gamma* in [0,1] that maximises the dual along
// the round's direction and applies it to the dual values, the primal
// contributions and w, all at once.
func (c *Coordinator) lineSearch(targets []int, replies map[int]Message) {
	lambdaN := c.cfg.Lambda * float64(c.numTrain)
	u := make([]float64, c.numFeatures) // dw = 1/(lambda N) sum_n d_n x_n
	dconj := 0.0
	for _, k := range targets {
		m := replies[k]
		for j, f := range c.clients[k].features {
			u[f] += m.DW[j] / lambdaN
		}
		dconj += m.DConj
	}
	wu, uu := 0.0, 0.0
	for i, v := range u {
		wu += c.w[i] * v
		uu += v * v
	}
	num := dconj/float64(c.numTrain) - c.cfg.Lambda*wu
	gamma := 0.0
	switch {
	case uu > 0:
		gamma = math.Max(0, math.Min(1, num/(c.cfg.Lambda*uu)))
	case num > 0:
		gamma = 1
	}
	if gamma > 0 {
		scaled, err := seal.Scale(c.scheme, c.direction, gamma)
		if err != nil {
			c.fail(err)
			return
		}
		if err := seal.AddInto(c.scheme, c.alpha, scaled); err != nil {
			c.fail(err)
			return
		}
		for i, v := range u {
			c.w[i] += gamma * v
		}
		for _, k := range targets {
			hw := c.clients[k].hatW
			for j, v := range replies[k].DW {
				hw[j] += gamma * v
			}
		}
	}
	c.cur.Gamma = gamma
	c.ipPhase(true, gamma, true, nil)
}

// paperStep is Algorithm 1 with Algorithm 5: active clients send
// gamma*delta/|B_n|, the server adds them to the dual values and the active
// clients send fresh primal contributions; absent ones keep stale ones.
func (c *Coordinator) paperStep() {
	var targets []int
	for _, k := range c.eligible() {
		if c.clients[k].activeRound {
			targets = append(targets, k)
		}
	}
	c.cur.Active = len(targets)
	if len(targets) == 0 {
		c.ipPhase(false, 0, true, nil)
		return
	}
	for _, k := range targets {
		c.send(k, Message{Kind: KindStep, Round: c.round, Active: true})
	}
	c.await(PhaseStep, KindDelta, targets, func(p *phaseState) {
		var got []int
		for _, k := range sortedKeys(p.replies) {
			if err := seal.AddInto(c.scheme, c.alpha, p.replies[k].Sealed); err != nil {
				c.fail(err)
				return
			}
			got = append(got, k)
		}
		c.cur.Gamma = c.cfg.Gamma
		for _, k := range c.eligible() {
			c.clients[k].stale = true
		}
		c.refreshPhase(got, func() { c.ipPhase(false, c.cfg.Gamma, true, nil) })
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

// ipPhase sends w (and whether the round's direction was applied), sums the
// sealed inner products, returns them, and collects the metrics. With final
// set it closes the round.
func (c *Coordinator) ipPhase(applied bool, gamma float64, final bool, then func()) {
	targets := c.eligible()
	for _, k := range targets {
		cs := c.clients[k]
		w := make([]float64, len(cs.features))
		for j, f := range cs.features {
			w[j] = c.w[f]
		}
		c.send(k, Message{Kind: KindWeights, Round: c.round, Gamma: gamma, Applied: applied, W: w})
	}
	partial := len(targets) < len(c.clients)
	c.await(PhaseIP, KindIPPart, targets, func(p *phaseState) {
		got := sortedKeys(p.replies)
		partial = partial || len(p.dropped) > 0
		parts := make([]seal.Vec, 0, len(got))
		for _, k := range got {
			parts = append(parts, p.replies[k].Sealed)
		}
		sum, err := seal.Sum(c.scheme, parts...)
		if err != nil {
			c.fail(err)
			return
		}
		report := c.reporters(got)
		for _, k := range got {
			slots := c.clients[k].slots
			v, err := seal.Restrict(c.scheme, sum, slots)
			if err != nil {
				c.fail(err)
				return
			}
			m := Message{Kind: KindIP, Round: c.round, Sealed: v, Report: report[k]}
			if c.cfg.Step == StepPaper {
				if m.Alpha, err = seal.Restrict(c.scheme, c.alpha, slots); err != nil {
					c.fail(err)
					return
				}
			}
			c.send(k, m)
		}
		c.await(PhaseMetrics, KindMetrics, got, func(p *phaseState) {
			partial = partial || len(p.dropped) > 0
			if final {
				c.record(p.replies, partial)
			}
			if then != nil {
				then()
				return
			}
			c.nextRound()
		})
	})
}

func (c *Coordinator) record(replies map[int]Message, partial bool) {
	var lossSum, conjSum float64
	var trainOK, trainN, heldOK, heldN int
	for _, k := range sortedKeys(replies) {
		m := replies[k]
		lossSum += m.LossSum
		conjSum += m.ConjSum
		trainOK += m.TrainOK
		trainN += m.TrainN
		heldOK += m.HeldOK
		heldN += m.HeldN
	}
	ww := 0.0
	for _, v := range c.w {
		ww += v * v
	}
	n := float64(c.numTrain)
	r := &c.cur
	r.Round = c.round
	r.Dual = conjSum/n - c.cfg.Lambda/2*ww
	r.Primal = c.cfg.Lambda/2*ww + lossSum/n
	r.Gap = r.Primal - r.Dual
	r.TrainAcc = float64(trainOK) / math.Max(1, float64(trainN))
	r.HeldAcc = float64(heldOK) / math.Max(1, float64(heldN))
	if trainN != c.numTrain {
		// Some group had no holder to report: the dual misses its terms.
		partial = true
		r.Dual = math.NaN()
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
	c.cur = RoundMetrics{Seconds: map[string]float64{}}
}

func sortedSet(s map[int]bool) []int {
	out := make([]int, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
