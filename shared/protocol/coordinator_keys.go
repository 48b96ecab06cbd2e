package protocol

import (
	"errors"
	"fmt"
	"slices"

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
func (c *Coordinator) keyFederationID() string { return federationID(c.fingerprint) }

// federationID names a federation by its key fingerprint, to the key
// layers (threshold keys' reference polynomials, the OPRF's contexts).
func federationID(fingerprint string) string { return "hyfed " + fingerprint }

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
	c.await(PhaseKeys, all, c.keySharesIn)
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
	c.await(PhaseKeyDeal, all, c.keyDealtIn)
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
	c.await(PhaseKeyReady, ks.members, func(p *phaseState) {
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

// switchRequestJobs bounds the jobs of one switch request: its reply is
// one 131 kB switching share a job, so 64 jobs make replies of about 8 MB
// and requests of at most 64 chunks (a group's sum to several holders is
// one chunk), and spread a Step's switching over the committee. A variable
// only so that tests can make requests small.
var switchRequestJobs = 64

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
