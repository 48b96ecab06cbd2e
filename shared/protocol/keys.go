package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/seal/threshold"
)

// Threshold keys, the coordinator's side (Config.Keys == KeysThreshold).
//
// Before the first round the coordinator relays the key setup of the key
// committee (the first KeyCommittee participants by index): setup shares to
// everyone (members deal Shamir shares from them, the others take the
// collective key after checking their tags), encrypted Shamir shares to
// their recipients. It keeps every participant's own public key. It holds
// no secret at any point: what it relays it cannot open.
//
// During the rounds every message that carries sealed chunks to a
// participant (send) is held back: the chunks, sums under the collective
// key, are first switched to the receiver's own key. At the end of every
// Step the coordinator asks for switching shares of all the chunks held
// since the last one, in requests of a bounded size each asked of t live
// committee members in turn, and once a request's t replies are in it adds
// them (AggregateSwitch) into chunks the receivers open with their own
// keys, and sends the held messages in their order. This sits below every
// phase and every rule: whatever a rule hands a holder goes through it.

// PhaseKeys is the key setup's phase (threshold keys).
const PhaseKeys = "keys"

// keyState is the coordinator's part of a threshold key: public values
// only.
type keyState struct {
	fed     *threshold.Federation
	members []int // participant indexes of the committee, ascending
	setups  [][]byte
	own     map[int][]byte // own public key by participant index
	ready   bool
	lost    map[int]bool // members that came back without their share

	// during setup: what the members sent
	got   map[int]*threshold.SetupShare
	inbox map[int][][]byte // encrypted Shamir shares by recipient

	held      map[int][]*heldEnvelope // per receiver, in send order
	fresh     []*heldEnvelope         // held since the last switch request
	batches   map[int]*switchBatch
	retired   map[int]bool   // batches asked again of another active set
	parked    []*switchBatch // waiting for t members with their shares
	nextBatch int
	// sentOwn: the own public keys each member was sent on its current
	// connection (by target), so that a request carries only new ones.
	sentOwn map[int]map[int][]byte
}

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

// keyLayout is the sample groups as the key committee's members get them
// (Setup.Layout): holders and sample chunks, in layout order.
func (c *Coordinator) keyLayout() []GroupLayout {
	out := make([]GroupLayout, len(c.groups))
	for gi, g := range c.groups {
		out[gi] = GroupLayout{Holders: g.holders, Chunks: g.chunks}
	}
	return out
}

func partyID(k int) threshold.PartyID { return threshold.PartyID(k + 1) }

// keyFederationID is the public id a federation's common reference
// polynomials are drawn from: the key fingerprint, which differs with every
// link secret.
func (c *Coordinator) keyFederationID() string { return "hyfed " + c.fingerprint }

// thresholdScheme returns the coordinator's scheme as threshold BGV.
func (c *Coordinator) thresholdScheme() (*seal.ThresholdBGV, error) {
	s, ok := c.scheme.(*seal.ThresholdBGV)
	if !ok {
		return nil, fmt.Errorf("threshold keys need the threshold BGV scheme, not %s", c.scheme.Name())
	}
	return s, nil
}

// checkKeyScheme refuses a scheme that does not fit the key mode.
func checkKeyScheme(cfg Config, s seal.Scheme) error {
	_, thr := s.(*seal.ThresholdBGV)
	switch {
	case cfg.Keys == KeysThreshold && !thr:
		return fmt.Errorf("config: keys %s: sealing needs the threshold BGV scheme (seal.ThresholdScheme), not %s", KeysThreshold, s.Name())
	case cfg.Keys != KeysThreshold && thr:
		return fmt.Errorf("config: keys %s: the threshold BGV scheme seals under a collective key only threshold keys have", cfg.Keys)
	}
	return nil
}

// startOrKeys starts the federation, after the key setup if it needs one.
func (c *Coordinator) startOrKeys() {
	if c.cfg.Keys == KeysThreshold && (c.keys == nil || !c.keys.ready) {
		c.keySetup()
		return
	}
	c.start()
}

// keySetup starts the key setup with the participants connected now; the
// first KeyCommittee of them form the committee.
func (c *Coordinator) keySetup() {
	s, err := c.thresholdScheme()
	if err != nil {
		c.fail(err)
		return
	}
	all := c.connected()
	n := min(c.cfg.KeyCommittee, len(all))
	tc := threshold.Config{Federation: c.keyFederationID(), Threshold: min(c.cfg.KeyThreshold, n)}
	members := all[:n]
	for _, k := range members {
		tc.Parties = append(tc.Parties, partyID(k))
	}
	fed, err := threshold.New(s, tc)
	if err != nil {
		c.fail(fmt.Errorf("threshold keys: %w", err))
		return
	}
	c.keys = &keyState{fed: fed, members: members, own: map[int][]byte{}, lost: map[int]bool{}, sentOwn: map[int]map[int][]byte{},
		got: map[int]*threshold.SetupShare{}, held: map[int][]*heldEnvelope{}, batches: map[int]*switchBatch{}, retired: map[int]bool{}}
	for _, k := range all {
		c.send(k, Message{Kind: KindKeySetup, Round: c.round, KeySetup: c.keySetupFor(k, false)})
	}
	c.await(PhaseKeys, KindKeyShare, all, c.keySharesIn)
}

func (c *Coordinator) keySetupFor(k int, rejoin bool) *KeySetup {
	ks := &KeySetup{Federation: c.keyFederationID(), Threshold: c.keys.fed.Threshold(), Party: int(partyID(k)), Rejoin: rejoin}
	for _, id := range c.keys.fed.Members() {
		ks.Committee = append(ks.Committee, int(id))
	}
	return ks
}

// keySetupAgain gives up a key setup a participant left: like the norms,
// it starts afresh once every participant is back (connect).
func (c *Coordinator) keySetupAgain(p *phaseState) bool {
	if len(p.dropped) == 0 {
		return false
	}
	c.keys = nil
	return true
}

// keySharesIn: every member's setup share and every other participant's
// own public key are in (checked by checkKeys); the setup shares go to
// everyone.
func (c *Coordinator) keySharesIn(p *phaseState) {
	if c.keySetupAgain(p) {
		return
	}
	ks := c.keys
	for _, k := range ks.members {
		b, err := ks.got[k].Marshal()
		if err != nil {
			c.fail(fmt.Errorf("threshold keys: setup share of participant %d: %w", k, err))
			return
		}
		ks.setups = append(ks.setups, b)
	}
	all := sortedKeys(p.replies)
	for _, k := range all {
		c.send(k, Message{Kind: KindKeySetups, Round: c.round, Keys: ks.setups})
	}
	ks.inbox = map[int][][]byte{}
	c.await(PhaseKeys, KindKeyDealt, all, c.keyDealtIn)
}

// keyDealtIn: the members' encrypted Shamir shares are in (routed into
// inbox by checkKeys); each member gets those dealt to it.
func (c *Coordinator) keyDealtIn(p *phaseState) {
	if c.keySetupAgain(p) {
		return
	}
	ks := c.keys
	for _, k := range ks.members {
		c.send(k, Message{Kind: KindKeyShares, Round: c.round, Keys: ks.inbox[k]})
	}
	ks.inbox = nil
	c.await(PhaseKeys, KindKeyReady, ks.members, func(p *phaseState) {
		if c.keySetupAgain(p) {
			return
		}
		if c.numConnected() < c.numRegistered() {
			// A participant outside the committee left meanwhile: it
			// comes back without its party, so the setup runs again.
			c.keys = nil
			return
		}
		ks.ready, ks.got = true, nil
		c.start()
	})
}

// checkKeys checks a reply of the key setup (key-share, key-dealt,
// key-ready) from participant k, decoding what it carries with the key
// layer's decoders, and keeps what the next step relays.
func (c *Coordinator) checkKeys(k int, m Message) error {
	ks := c.keys
	member := slices.Contains(ks.members, k)
	switch m.Kind {
	case KindKeyShare:
		if len(m.Keys) != 1 {
			return fmt.Errorf("key-share: %d key messages, want 1", len(m.Keys))
		}
		if member && ks.ready {
			if i := slices.Index(ks.members, k); string(m.Keys[0]) == string(ks.setups[i]) {
				// Back with its stored party: it still holds its share.
				s, err := ks.fed.UnmarshalSetupShare(m.Keys[0])
				if err != nil {
					return fmt.Errorf("key-share: %w", err)
				}
				if ks.own[k], err = s.OwnPublicKey().Marshal(); err != nil {
					return fmt.Errorf("key-share: %w", err)
				}
				delete(ks.lost, k)
				return nil
			}
			if _, err := ks.fed.UnmarshalSetupShare(m.Keys[0]); err == nil {
				return fmt.Errorf("key-share: participant %d's stored party is of another key setup (its setup share is not the committee's): it must come back without it", k)
			}
		}
		if member && !ks.ready {
			s, err := ks.fed.UnmarshalSetupShare(m.Keys[0])
			if err != nil {
				return fmt.Errorf("key-share: %w", err)
			}
			if s.From != partyID(k) {
				return fmt.Errorf("key-share: setup share of party %d from participant %d (party %d)", s.From, k, partyID(k))
			}
			own, err := s.OwnPublicKey().Marshal()
			if err != nil {
				return fmt.Errorf("key-share: %w", err)
			}
			ks.got[k], ks.own[k] = s, own
			return nil
		}
		o, err := ks.fed.UnmarshalOwnPublicKey(m.Keys[0])
		if err != nil {
			return fmt.Errorf("key-share: %w", err)
		}
		if o.ID != partyID(k) {
			return fmt.Errorf("key-share: own public key of party %d from participant %d (party %d)", o.ID, k, partyID(k))
		}
		ks.own[k] = m.Keys[0]
		if member { // back without its share (rejoin): it opens, but no longer switches
			ks.lost[k] = true
		}
		return nil
	case KindKeyDealt:
		if !member || ks.ready {
			if len(m.Keys) != 0 {
				return fmt.Errorf("key-dealt: %d Shamir shares from a participant that deals none", len(m.Keys))
			}
			return nil
		}
		if len(m.Keys) != len(ks.members)-1 {
			return fmt.Errorf("key-dealt: %d Shamir shares, want one for each of the %d other members", len(m.Keys), len(ks.members)-1)
		}
		routed := map[threshold.PartyID][]byte{}
		for _, b := range m.Keys {
			e, err := ks.fed.UnmarshalEncryptedShare(b)
			if err != nil {
				return fmt.Errorf("key-dealt: %w", err)
			}
			if e.From != partyID(k) || e.To == partyID(k) || routed[e.To] != nil {
				return fmt.Errorf("key-dealt: Shamir share %d -> %d from participant %d (party %d)", e.From, e.To, k, partyID(k))
			}
			routed[e.To] = b
		}
		for to, b := range routed {
			ks.inbox[int(to)-1] = append(ks.inbox[int(to)-1], b)
		}
		return nil
	case KindKeyReady:
		if !member {
			return errors.New("key-ready from a participant outside the key committee")
		}
		return nil
	}
	return fmt.Errorf("%s: not a key setup reply", m.Kind)
}

// keyRejoin gives a returning participant the key again: its own public key
// (new, unless it kept its party), the collective key from the setup
// shares, then its setup and norms (keyRejoinIn).
func (c *Coordinator) keyRejoin(k int) {
	c.clients[k].keyRejoin = KindKeyShare
	c.send(k, Message{Kind: KindKeySetup, Round: c.round, KeySetup: c.keySetupFor(k, true)})
}

// keyRejoinIn takes the replies of a returning participant's key exchange,
// outside the phases (the federation goes on meanwhile).
func (c *Coordinator) keyRejoinIn(k int, m Message) error {
	cs := c.clients[k]
	if m.Kind != cs.keyRejoin {
		return Errorf(CodeOutOfPhase, "unexpected %q while the participant's key is being set up again (want %s)", m.Kind, cs.keyRejoin)
	}
	if err := c.checkKeys(k, m); err != nil {
		return &CodedError{Code: CodeBadField, Msg: err.Error()}
	}
	defer c.retryParked() // a member may be back with its share, or back without it
	switch m.Kind {
	case KindKeyShare:
		cs.keyRejoin = KindKeyDealt
		c.send(k, Message{Kind: KindKeySetups, Round: c.round, Keys: c.keys.setups})
	case KindKeyDealt:
		cs.keyRejoin = ""
		c.sendSetup(k, false)
		c.sendNorms(k)
		c.resumeIfQuorate()
	}
	return nil
}

// keyCheckpoint is what a checkpoint keeps of a threshold key: the
// committee, t and the setup shares. Own public keys are not kept: every
// participant of a restored federation returns and sends its own again
// (a member with its stored party, its setup share).
type keyCheckpoint struct {
	Members   []int
	Threshold int
	Setups    [][]byte
}

func (c *Coordinator) keyCheckpoint() *keyCheckpoint {
	if c.keys == nil {
		return nil
	}
	return &keyCheckpoint{Members: c.keys.members, Threshold: c.keys.fed.Threshold(), Setups: c.keys.setups}
}

// restoreKeys rebuilds the threshold key's public side from a checkpoint,
// every participant away until it returns (keyRejoin).
func (c *Coordinator) restoreKeys(kc *keyCheckpoint) error {
	if kc == nil {
		return errors.New("restore: a federation with threshold keys whose checkpoint holds no key setup")
	}
	s, err := c.thresholdScheme()
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tc := threshold.Config{Federation: c.keyFederationID(), Threshold: kc.Threshold}
	for _, k := range kc.Members {
		if k < 0 || k >= len(c.clients) || c.clients[k].hello == nil {
			return fmt.Errorf("restore: key committee member %d is not a registered participant", k)
		}
		tc.Parties = append(tc.Parties, partyID(k))
	}
	fed, err := threshold.New(s, tc)
	if err != nil {
		return fmt.Errorf("restore: threshold keys: %w", err)
	}
	if len(kc.Setups) != len(kc.Members) {
		return fmt.Errorf("restore: %d setup shares for a committee of %d", len(kc.Setups), len(kc.Members))
	}
	for i, b := range kc.Setups {
		su, err := fed.UnmarshalSetupShare(b)
		if err != nil || su.From != partyID(kc.Members[i]) {
			return fmt.Errorf("restore: setup share %d of the key committee: %v", i, err)
		}
	}
	c.keys = &keyState{fed: fed, members: kc.Members, setups: kc.Setups, ready: true, own: map[int][]byte{}, lost: map[int]bool{}, sentOwn: map[int]map[int][]byte{},
		held: map[int][]*heldEnvelope{}, batches: map[int]*switchBatch{}, retired: map[int]bool{}}
	return nil
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

// switchRequestJobs bounds the jobs of one switch request: its reply is
// one 131 kB switching share a job, so 64 jobs make replies of about 8 MB
// and requests of at most 64 chunks (a group's sum to several holders is
// one chunk), and spread a Step's switching over the committee. A variable
// only so that tests can make requests small.
var switchRequestJobs = 64

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

// KeyCommittee returns the threshold key's committee (participant indexes,
// ascending), whether each still holds its share (a member back without it
// no longer switches) and t; nil and 0 with the shared key or before the
// key setup chose them.
func (c *Coordinator) KeyCommittee() (members []int, holds []bool, t int) {
	ks := c.keys
	if ks == nil {
		return nil, nil, 0
	}
	for _, k := range ks.members {
		members = append(members, k)
		holds = append(holds, !ks.lost[k])
	}
	return members, holds, ks.fed.Threshold()
}
