package protocol

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/seal/threshold"
)

// heldEnvelope is a message waiting for its chunks to be switched (pending)
// or for an earlier message to the same receiver.
type heldEnvelope struct {
	env     Envelope
	pending int
	dropped bool // its receiver left
}

// switchBatch is one switch request: the jobs (chunk -> target) of the
// envelopes held during one Step, asked of one active set.
type switchBatch struct {
	id      int
	active  []int // participant indexes of the active members
	jobs    []switchJob
	chunks  []seal.Chunk
	targets []int                            // participant indexes
	shares  map[int][]*threshold.SwitchShare // by member

	chunkBytes [][]byte // the chunks marshalled, once for every member asked
}

type switchJob struct {
	env    *heldEnvelope
	alpha  bool // the chunk is in Alpha, not Sealed
	ci     int  // its index in the vector
	chunk  int  // index into the batch's chunks
	target int  // index into the batch's targets
	layout int  // LayoutSamples, LayoutGram or LayoutFeatures
}

// layoutOf is the layout of the sealed chunks a message of kind k carries.
func layoutOf(k Kind) int {
	switch k {
	case KindGramSum:
		return LayoutGram
	case KindOpen:
		return LayoutFeatures
	}
	return LayoutSamples // norms, refresh, direction, ip (Sealed and Alpha)
}

// hold keeps a message to a participant back until its chunks are switched
// to the participant's own key (and the messages sent to it before have
// gone). Its vectors are copied: the switched chunks replace the summed
// ones in the copy only.
func (c *Coordinator) hold(to int, m Message) {
	ks := c.keys
	h := &heldEnvelope{}
	if m.Sealed != nil {
		m.Sealed = maps.Clone(m.Sealed)
	}
	if m.Alpha != nil {
		m.Alpha = maps.Clone(m.Alpha)
	}
	h.env = Envelope{To: to, Msg: m}
	h.pending = len(m.Sealed) + len(m.Alpha)
	ks.held[to] = append(ks.held[to], h)
	if h.pending > 0 {
		ks.fresh = append(ks.fresh, h)
	}
}

// holds reports whether a message to participant to must wait: it carries
// chunks, or an earlier one waits. Errors go at once; one that closes the
// connection drops what waits.
func (c *Coordinator) holds(to int, m Message) bool {
	ks := c.keys
	if ks == nil || !ks.ready {
		return false
	}
	if m.Kind == KindError {
		if m.Close {
			c.dropHeld(to)
		}
		return false
	}
	return len(m.Sealed)+len(m.Alpha) > 0 || len(ks.held[to]) > 0
}

// dropHeld forgets the messages waiting for participant k (it left).
func (c *Coordinator) dropHeld(k int) {
	if c.keys == nil {
		return
	}
	for _, h := range c.keys.held[k] {
		h.dropped = true
	}
	delete(c.keys.held, k)
}

// keysGone: participant k left. Its waiting messages go; a switch request
// it owed shares of is asked again of another active set.
func (c *Coordinator) keysGone(k int) {
	ks := c.keys
	if ks == nil {
		return
	}
	c.dropHeld(k)
	delete(ks.sentOwn, k) // a member's next connection starts with no own keys
	if !ks.ready {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(ks.batches)) {
		b := ks.batches[id]
		if _, done := b.shares[k]; done || !slices.Contains(b.active, k) {
			continue
		}
		delete(ks.batches, id)
		ks.retired[id] = true
		c.issue(b)
	}
}

// requestSwitches asks for switching shares of every chunk held since the
// last request; it runs at the end of every Step. The jobs go in requests
// of at most switchRequestJobs (a chunk's jobs stay together), each asked
// of t live members, members taking turns: at 5,000 participants one
// request for everything would be hundreds of megabytes for one member to
// receive, and would keep the rest of the committee idle.
func (c *Coordinator) requestSwitches() {
	ks := c.keys
	if ks == nil || len(ks.fresh) == 0 || c.finished {
		return
	}
	type chunkJobs struct {
		ch   seal.Chunk
		jobs []switchJob // chunk and target filled in per request
	}
	var order []*chunkJobs
	byChunk := map[seal.Chunk]*chunkJobs{} // Restrict shares a sum's chunks between receivers
	for _, h := range ks.fresh {
		if h.dropped {
			continue
		}
		for _, alpha := range []bool{false, true} {
			v := h.env.Msg.Sealed
			if alpha {
				v = h.env.Msg.Alpha
			}
			for _, ci := range v.Indexes() {
				cj := byChunk[v[ci]]
				if cj == nil {
					cj = &chunkJobs{ch: v[ci]}
					byChunk[v[ci]] = cj
					order = append(order, cj)
				}
				cj.jobs = append(cj.jobs, switchJob{env: h, alpha: alpha, ci: ci, layout: layoutOf(h.env.Msg.Kind)})
			}
		}
	}
	ks.fresh = nil
	if len(order) == 0 {
		c.release()
		return
	}
	var b *switchBatch
	var targetAt map[int]int
	flush := func() {
		if b != nil {
			c.issue(b)
		}
		b, targetAt = nil, nil
	}
	for _, cj := range order {
		if b != nil && len(b.jobs)+len(cj.jobs) > switchRequestJobs {
			flush()
		}
		if b == nil {
			b, targetAt = &switchBatch{}, map[int]int{}
		}
		for _, j := range cj.jobs {
			to := j.env.env.To
			ti, ok := targetAt[to]
			if !ok {
				if _, ok := ks.own[to]; !ok {
					c.fail(fmt.Errorf("threshold keys: no own public key of participant %d to switch its sums to", to))
					return
				}
				ti = len(b.targets)
				targetAt[to] = ti
				b.targets = append(b.targets, to)
			}
			j.chunk, j.target = len(b.chunks), ti
			b.jobs = append(b.jobs, j)
		}
		b.chunks = append(b.chunks, cj.ch)
	}
	flush()
}

// issue asks t live committee members for switching shares of batch b,
// under a new number. Members take turns (the batch number rotates the
// choice) so that the work spreads. Each member gets the own public keys
// of b's targets that it was not sent on its connection yet.
func (c *Coordinator) issue(b *switchBatch) {
	ks := c.keys
	if !slices.ContainsFunc(b.jobs, func(j switchJob) bool { return !j.env.dropped }) {
		return // every receiver left meanwhile
	}
	var live []int
	for _, k := range ks.members {
		if cs := c.clients[k]; cs.connected && cs.hello != nil && !ks.lost[k] && cs.keyRejoin == "" {
			live = append(live, k)
		}
	}
	t := ks.fed.Threshold()
	if len(live) < t {
		holding := 0
		for _, k := range ks.members {
			if !ks.lost[k] {
				holding++
			}
		}
		if holding < t {
			c.fail(fmt.Errorf("threshold keys: %d of the key committee's members still hold their shares, t = %d are needed to open a sum", holding, t))
			return
		}
		// Members with their shares are away: wait for them (a phase
		// deadline ends the wait for the participants it holds up).
		ks.parked = append(ks.parked, b)
		return
	}
	if b.chunkBytes == nil {
		for _, ch := range b.chunks {
			bs, err := c.scheme.Marshal(ch)
			if err != nil {
				c.fail(fmt.Errorf("threshold keys: switch request: %w", err))
				return
			}
			b.chunkBytes = append(b.chunkBytes, bs)
		}
	}
	b.id = ks.nextBatch
	ks.nextBatch++
	b.active = nil
	for i := range t {
		b.active = append(b.active, live[(b.id+i)%len(live)])
	}
	sort.Ints(b.active)
	b.shares = map[int][]*threshold.SwitchShare{}
	msg := Message{Kind: KindSwitch, Round: c.round, Batch: b.id, Targets: b.targets}
	for _, k := range b.active {
		msg.ActiveSet = append(msg.ActiveSet, int(partyID(k)))
	}
	for _, j := range b.jobs {
		msg.Jobs = append(msg.Jobs, [2]int{j.target, j.chunk})
		msg.JobAt = append(msg.JobAt, [2]int{j.layout, j.ci})
	}
	ks.batches[b.id] = b
	for _, k := range b.active {
		m := msg
		m.OwnKeys, m.Keys = nil, nil
		sent := ks.sentOwn[k]
		if sent == nil {
			sent = map[int][]byte{}
			ks.sentOwn[k] = sent
		}
		for ti, to := range b.targets {
			if own := ks.own[to]; !bytes.Equal(sent[to], own) {
				m.OwnKeys = append(m.OwnKeys, ti)
				m.Keys = append(m.Keys, own)
				sent[to] = own
			}
		}
		m.Keys = append(m.Keys, b.chunkBytes...)
		c.out = append(c.out, Envelope{To: k, Msg: m})
	}
}

// retryParked asks again for the switch requests that waited for members.
func (c *Coordinator) retryParked() {
	ks := c.keys
	parked := ks.parked
	ks.parked = nil
	for _, b := range parked {
		if !c.finished {
			c.issue(b)
		}
	}
}

// switchIn takes a member's switching shares of a batch; with all t in,
// the chunks are switched and the held messages that are complete go out.
func (c *Coordinator) switchIn(k int, m Message) error {
	ks := c.keys
	if ks == nil || !ks.ready {
		return Errorf(CodeOutOfPhase, "switch-shares: the federation has no threshold key")
	}
	b := ks.batches[m.Batch]
	if b == nil {
		if ks.retired[m.Batch] {
			return nil // asked again of another active set meanwhile
		}
		return Errorf(CodeOutOfPhase, "switch-shares: no switch request %d is open", m.Batch)
	}
	if !slices.Contains(b.active, k) {
		return Errorf(CodeOutOfPhase, "switch-shares: participant %d is not in request %d's active set", k, m.Batch)
	}
	if _, dup := b.shares[k]; dup {
		return Errorf(CodeOutOfPhase, "switch-shares: participant %d answered request %d twice", k, m.Batch)
	}
	if len(m.Keys) != len(b.jobs) {
		return fmt.Errorf("switch-shares: %d shares for %d jobs", len(m.Keys), len(b.jobs))
	}
	shares := make([]*threshold.SwitchShare, len(b.jobs))
	for j, raw := range m.Keys {
		sh, err := ks.fed.UnmarshalSwitchShare(raw)
		if err != nil {
			return fmt.Errorf("switch-shares: job %d: %w", j, err)
		}
		if sh.From != partyID(k) || sh.Target != partyID(b.targets[b.jobs[j].target]) {
			return fmt.Errorf("switch-shares: job %d: share of party %d towards party %d, want party %d towards party %d",
				j, sh.From, sh.Target, partyID(k), partyID(b.targets[b.jobs[j].target]))
		}
		shares[j] = sh
	}
	b.shares[k] = shares
	if len(b.shares) < len(b.active) {
		return nil
	}
	delete(ks.batches, b.id)
	for j, job := range b.jobs {
		set := make([]*threshold.SwitchShare, 0, len(b.active))
		for _, a := range b.active {
			set = append(set, b.shares[a][j])
		}
		sw, err := ks.fed.AggregateSwitch(b.chunks[job.chunk], set)
		if err != nil {
			c.fail(fmt.Errorf("threshold keys: request %d, job %d: %w", b.id, j, err))
			return nil
		}
		v := job.env.env.Msg.Sealed
		if job.alpha {
			v = job.env.env.Msg.Alpha
		}
		v[job.ci] = sw.Chunk
		job.env.pending--
	}
	c.release()
	return nil
}

// release sends, per receiver in index order, the held messages from the
// oldest on while their chunks are all switched.
func (c *Coordinator) release() {
	ks := c.keys
	for _, k := range slices.Sorted(maps.Keys(ks.held)) {
		q := ks.held[k]
		for len(q) > 0 && q[0].pending == 0 {
			c.out = append(c.out, q[0].env)
			q = q[1:]
		}
		if len(q) == 0 {
			delete(ks.held, k)
		} else {
			ks.held[k] = q
		}
	}
}
