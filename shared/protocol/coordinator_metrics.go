package protocol

import (
	"math"
	"sort"

	"github.com/hyfed/hyfed/shared/seal"
)

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
	c.ip = ipFlow{final: final, then: then, partial: len(targets) < c.numRegistered()}
	c.await(PhaseMargins, targets, c.ipSumsIn)
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
	c.await(PhaseScore, got, c.ipMetricsIn)
}

func (c *Coordinator) ipMetricsIn(p *phaseState) {
	f := c.ip
	f.partial = f.partial || len(p.dropped) > 0 || c.crossCheck(p.replies)
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
	if trainN != c.numTrain || len(c.pendingLost()) > 0 {
		// Some group had no holder to report, or lost one for good (its
		// margins miss that holder's features): the sums miss terms.
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
	c.noteDual(*r)
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
	check, pairs := c.checkers(got)
	c.phaseGrid, c.phaseReport, c.phaseCheck, c.phasePairs = grid, report, check, pairs
	for _, k := range got {
		slots := c.clients[k].slots
		m := Message{Kind: KindIP, Round: c.round, Sealed: seal.Restrict(c.scheme, sum, slots), Report: report[k], Check: check[k], Grid: grid}
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
		if c.isLost(gi) {
			continue // out of the federation: nobody reports it
		}
		for _, h := range g.holders {
			if in[h] {
				out[h] = append(out[h], c.clients[h].localGroup[gi])
				break
			}
		}
	}
	return out
}
