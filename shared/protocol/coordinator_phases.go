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

// await starts a phase: it waits for one reply of the given kind from every
// target (or its disconnect), then calls next.
func (c *Coordinator) await(name string, reply Kind, targets []int, next func(p *phaseState)) {
	c.awaitPhase(&phaseState{name: name, reply: reply, next: next}, targets)
}

// awaitSum is await for a phase whose handler needs the replies' sealed
// vectors only as their sum (sumReplies, sumUpdating): it adds each into
// p.sum as it arrives and keeps the reply without them.
func (c *Coordinator) awaitSum(name string, reply Kind, targets []int, next func(p *phaseState)) {
	c.awaitPhase(&phaseState{name: name, reply: reply, next: next, summed: true, sum: seal.Vec{}}, targets)
}

func (c *Coordinator) awaitPhase(p *phaseState, targets []int) {
	p.waiting, p.replies, p.started = map[int]bool{}, map[int]Message{}, c.now()
	c.phaseSeq++
	for _, k := range targets {
		p.waiting[k] = true
	}
	c.phase = p
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
		return err
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
		c.deadlineDrop(p, k, fmt.Sprintf("no %s reply before the deadline of round %d", p.reply, c.round))
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
