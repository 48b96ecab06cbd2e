package protocol

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hyfed/hyfed/shared/seal"
)

func sortedKeys(m map[int]Message) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// Phases, named for what travels in them (metrics, transcripts and the
// pages report time by phase).
const (
	PhaseOPRFKeys  = "oprf-keys"  // OPRF pseudonyms: the members' channel keys
	PhaseOPRFDeal  = "oprf-deal"  // the members deal the OPRF key
	PhaseOPRFBlind = "oprf-blind" // every participant's blinded ids
	PhaseOPRFEval  = "oprf-eval"  // the members evaluate them
	PhaseOPRFFinal = "oprf-final" // every participant's pseudonyms
	PhaseKeys      = "keys"       // threshold keys: the parties' setup shares
	PhaseKeyDeal   = "key-deal"   // the committee deals its Shamir shares
	PhaseKeyReady  = "key-ready"  // the committee holds its shares
	PhasePrepare   = "prepare"    // a schema's preparation: label codes and column statistics
	PhaseSetup     = "setup"      // the squared norms
	PhaseRefresh   = "refresh"    // a returning participant's primal contribution
	PhaseMargins   = "margins"    // every inner product x.w, afresh
	PhaseScore     = "score"      // the model's loss and accuracy sums
	PhaseGram      = "gram"       // the picks' partial Grams
	PhaseSolve     = "solve"      // a group's summed Gram to its solver, its direction back
	PhaseDirection = "direction"  // the groups' directions out, each holder's share of dw back
	PhaseOpen      = "open"       // a participant opens a sealed aggregate
	PhaseTrial     = "trial"      // the round's primal direction out, x.u back
	PhasePrice     = "price"      // the sums x.u out, the candidate steps priced back
	PhaseApply     = "apply"      // the chosen step out, the sealed dual update back
	PhaseStep      = "step"       // the paper's rule: each participant's local steps
	PhaseLocal     = "local"      // the baselines: local steps and sealed weights
)

// phaseSpec is one phase: the request the coordinator sends its targets,
// the reply it waits for from each (or its leaving, or the deadline),
// whether it adds the replies' sealed vectors as they come, and when the
// phase runs.
type phaseSpec struct {
	name           string
	request, reply Kind
	summed         bool
	when           string
}

// roundPhases is the block step's round, in order: the one list
// docs/design.md section 2 mirrors. A round runs the phases whose "when"
// holds, each started by the previous one's handler (the names after the
// arrow in the comments); TestPhasesRunInTableOrder checks the order.
var roundPhases = []phaseSpec{
	{PhaseRefresh, KindRefresh, KindPrimal, false, "a participant came back (refreshIn)"},
	{PhaseMargins, KindWeights, KindIPPart, true, "every 50th round and after a refresh (ipSumsIn)"},
	{PhaseScore, KindIP, KindMetrics, false, "after margins (ipMetricsIn)"},
	{PhaseGram, KindGram, KindGramPart, true, "every round (gramsIn)"},
	{PhaseSolve, KindGramSum, KindSolved, true, "one solver a group, the default (solvedIn)"},
	{PhaseDirection, KindDirection, KindDirPart, true, "every round; every holder solving, the request is gram-sum (directionIn)"},
	{PhaseOpen, KindOpen, KindOpened, false, "the primal sealed: a participant opens the sum of the shares of u"},
	{PhaseTrial, KindTrial, KindIPPart, true, "every round (trialSumsIn)"},
	{PhasePrice, KindIP, KindMetrics, false, "every round (trialMetricsIn)"},
	{PhaseApply, KindApply, KindApplied, true, "a step was chosen (appliedIn, then finishRound)"},
}

// otherPhases are the phases outside the block step's round: before the
// first round, and the other rules' rounds.
var otherPhases = []phaseSpec{
	{PhaseOPRFKeys, KindOPRFSetup, KindOPRFKey, false, "OPRF pseudonyms, before the alignment (oprfKeysIn)"},
	{PhaseOPRFDeal, KindOPRFKeys, KindOPRFDealt, false, "OPRF pseudonyms (oprfDealtIn)"},
	{PhaseOPRFBlind, KindOPRFShares, KindOPRFBlinded, false, "OPRF pseudonyms (oprfBlindedIn)"},
	{PhaseOPRFEval, KindOPRFEval, KindOPRFEvaluated, false, "OPRF pseudonyms (oprfEvaluatedIn)"},
	{PhaseOPRFFinal, KindOPRFEvals, KindPseudonyms, false, "OPRF pseudonyms, then the alignment"},
	{PhaseKeys, KindKeySetup, KindKeyShare, false, "threshold keys, before the setup (keySharesIn)"},
	{PhaseKeyDeal, KindKeySetups, KindKeyDealt, false, "threshold keys (keyDealtIn)"},
	{PhaseKeyReady, KindKeyShares, KindKeyReady, false, "threshold keys"},
	{PhasePrepare, KindSetup, KindPrepPart, false, "a schema, before the norms (prepIn)"},
	{PhaseSetup, KindSetup, KindNormsPart, true, "once, before round 0"},
	{PhaseStep, KindStep, KindDelta, true, "the paper's rule (paper.go)"},
	{PhaseLocal, KindLocal, KindLocalPart, true, "the baselines (averaging.go, fedhybrid.go)"},
}

// phaseOf returns a phase's spec.
func phaseOf(name string) phaseSpec {
	for _, ps := range [][]phaseSpec{roundPhases, otherPhases} {
		for _, s := range ps {
			if s.name == name {
				return s
			}
		}
	}
	panic("protocol: no phase " + name)
}

// Phases lists the phases in the order a round may run them, for tables
// of time by phase.
var Phases = []string{PhaseRefresh, PhaseMargins, PhaseScore, PhaseStep, PhaseLocal, PhaseGram, PhaseSolve, PhaseDirection, PhaseOpen, PhaseTrial, PhasePrice, PhaseApply}

// await starts a phase (roundPhases, otherPhases): it waits for its reply
// from every target (or its leaving), then calls next.
func (c *Coordinator) await(name string, targets []int, next func(p *phaseState)) {
	s := phaseOf(name)
	p := &phaseState{name: name, reply: s.reply, next: next, summed: s.summed}
	if s.summed {
		p.sum = seal.Vec{}
	}
	c.awaitPhase(p, targets)
}

// awaitEach is await keeping each reply's sealed vectors, not their sum
// (FedHybrid keeps every participant's last summand).
func (c *Coordinator) awaitEach(name string, targets []int, next func(p *phaseState)) {
	c.awaitPhase(&phaseState{name: name, reply: phaseOf(name).reply, next: next}, targets)
}

func (c *Coordinator) awaitPhase(p *phaseState, targets []int) {
	p.waiting, p.replies, p.started = map[int]bool{}, map[int]Message{}, c.now()
	c.phaseSeq++
	for _, k := range targets {
		p.waiting[k] = true
	}
	c.phase = p
	if c.tracePhase != nil {
		c.tracePhase(p.name)
	}
	c.maybeFinishPhase()
}

func (c *Coordinator) maybeFinishPhase() {
	p := c.phase
	if p == nil || len(p.waiting) > 0 {
		return
	}
	if c.cur.Seconds == nil {
		c.cur.Seconds = map[string]float64{}
	}
	c.cur.Seconds[p.name] += c.now().Sub(p.started).Seconds()
	c.phase = nil
	p.next(p)
}

func (c *Coordinator) receive(k int, m Message) error {
	if m.Kind == KindHello {
		return c.connect(k, m)
	}
	if k < 0 || k >= len(c.clients) || !c.clients[k].connected {
		return Errorf(CodeOutOfPhase, "client %d is not connected", k)
	}
	if c.finished {
		return &CodedError{Code: CodeFinished, Msg: ErrFinished.Error()}
	}
	if m.Kind == KindError {
		return c.quit(k, m.Err)
	}
	if m.Kind == KindResumed {
		return c.resumedIn(k, m)
	}
	if m.Kind == KindSwitchShares {
		return c.switchIn(k, m)
	}
	if c.clients[k].keyRejoin != "" {
		return c.keyRejoinIn(k, m)
	}
	p := c.phase
	if p == nil || m.Kind != p.reply || !p.waiting[k] || (m.Round != c.round && p.name != PhaseSetup && p.name != PhasePrepare) {
		want := "nothing"
		if p != nil {
			want = string(p.reply)
		}
		return Errorf(CodeOutOfPhase, "unexpected %q for round %d: the federation is in round %d and waits for %s", m.Kind, m.Round, c.round, want)
	}
	if err := c.check(k, m); err != nil {
		return &badReply{err}
	}
	if p.summed && len(m.Sealed) > 0 {
		// check has taken the chunks apart already: an error here is the
		// server's own, and the federation fails as for a sum at the end.
		if err := seal.Accumulate(c.scheme, p.sum, m.Sealed); err != nil {
			c.fail(fmt.Errorf("phase %s: %w", p.name, err))
			return nil
		}
		m.Sealed = nil
	}
	delete(p.waiting, k)
	p.replies[k] = m
	c.maybeFinishPhase()
	return nil
}

// disconnect records that client k went away; a phase waiting for it
// carries on without it.
func (c *Coordinator) disconnect(k int) {
	if k >= 0 && k < len(c.clients) && c.clients[k].connected {
		cs := c.clients[k]
		cs.connected, cs.ready = false, false
		c.keysGone(k)
		if c.oprf != nil {
			c.oprf.broken = true
		}
		if p := c.phase; p != nil && p.waiting[k] {
			delete(p.waiting, k)
			p.dropped = append(p.dropped, k)
			c.maybeFinishPhase()
		}
	}
}

// expire ends the current phase at its deadline. Clients that did not
// answer are disconnected (told so with a closing error): what they missed
// would leave their state behind the federation's, so they come back
// through a rejoin and a refresh. With threshold keys the committee members
// that owe switching shares are the late ones instead of the receivers
// whose messages wait for those shares (expireSwitches).
func (c *Coordinator) expire() {
	p := c.phase
	if p == nil || c.expireSwitches(p) {
		return
	}
	late := sortedSet(p.waiting)
	for _, k := range late {
		if !c.missed(p, k) {
			c.deadlineDrop(p, k, fmt.Sprintf("no %s reply before the deadline of round %d", p.reply, c.round))
		}
	}
	for _, k := range late {
		if c.finished {
			return // keysGone failed the federation: too few members hold their shares
		}
		c.keysGone(k)
	}
	c.maybeFinishPhase()
}

// deadlineDrop tells participant k that it missed the deadline (why) with a
// closing error and counts it gone, from the phase too. The caller runs
// keysGone once every late participant is marked, so that a switch request
// is never asked again of one about to go.
func (c *Coordinator) deadlineDrop(p *phaseState, k int, why string) {
	c.send(k, Message{Kind: KindError, Round: c.round, Close: true, Code: CodeDeadline,
		Err: why + "; reconnect to take part again"})
	c.clients[k].connected, c.clients[k].ready = false, false
	if p.waiting[k] {
		delete(p.waiting, k)
		p.dropped = append(p.dropped, k)
	}
}

// expireSwitches handles a deadline while switch requests are open: a
// committee member that stays connected but never answers would otherwise
// have the receivers its request holds up dropped, and stay. The members
// that owe shares are dropped instead and their requests asked again of
// other live members (keysGone); the participants the phase waits for whose
// messages those requests hold stay, under a fresh deadline, and the others
// are dropped as before. A receiver whose request cannot be asked again
// (fewer than t live members: parked) is dropped as before. It reports
// whether it handled the deadline (false: no request is owed).
func (c *Coordinator) expireSwitches(p *phaseState) bool {
	ks := c.keys
	if ks == nil || !ks.ready || len(ks.batches) == 0 {
		return false
	}
	owed := map[int][]int{} // member -> the requests it owes, ascending
	open := map[*heldEnvelope]bool{}
	for _, id := range slices.Sorted(maps.Keys(ks.batches)) {
		b := ks.batches[id]
		for _, k := range b.active {
			if _, done := b.shares[k]; !done {
				owed[k] = append(owed[k], id)
			}
		}
		for _, j := range b.jobs {
			open[j.env] = true
		}
	}
	if len(owed) == 0 {
		return false
	}
	// heldUp: k's messages wait for an open request only (not a parked one).
	heldUp := func(k int) bool {
		waits := false
		for _, h := range ks.held[k] {
			if h.pending == 0 {
				continue
			}
			if !open[h] {
				return false
			}
			waits = true
		}
		return waits
	}
	gone := slices.Sorted(maps.Keys(owed))
	for _, k := range gone {
		what := fmt.Sprintf("switch request %d", owed[k][0])
		if len(owed[k]) > 1 {
			what = "switch requests " + strings.Trim(fmt.Sprint(owed[k]), "[]")
		}
		c.deadlineDrop(p, k, fmt.Sprintf("no %s reply to %s before the deadline of round %d", KindSwitchShares, what, c.round))
	}
	for _, k := range sortedSet(p.waiting) {
		if !heldUp(k) {
			c.deadlineDrop(p, k, fmt.Sprintf("no %s reply before the deadline of round %d", p.reply, c.round))
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		if c.finished {
			return true // keysGone failed the federation: too few members hold their shares
		}
		c.keysGone(k) // asks the owed requests again of the members left
	}
	if c.finished {
		return true
	}
	// A request that found fewer than t live members is parked: the
	// receivers it holds are dropped after all, as without owed requests.
	parked := map[*heldEnvelope]bool{}
	for _, b := range ks.parked {
		for _, j := range b.jobs {
			parked[j.env] = true
		}
	}
	var stuck []int
	for _, k := range sortedSet(p.waiting) {
		if slices.ContainsFunc(ks.held[k], func(h *heldEnvelope) bool { return parked[h] }) {
			c.deadlineDrop(p, k, fmt.Sprintf("no %s reply before the deadline of round %d", p.reply, c.round))
			stuck = append(stuck, k)
		}
	}
	for _, k := range stuck {
		c.keysGone(k)
	}
	if len(p.waiting) > 0 {
		c.phaseSeq++ // the receivers kept get a new deadline for the requests asked again
	}
	c.maybeFinishPhase()
	return true
}
