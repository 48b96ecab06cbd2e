package protocol

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/seal/threshold"
)

// Threshold keys, the participant's side: its party of the threshold key
// (package shared/seal/threshold), made from crypto/rand and the link
// secret when the coordinator asks (key-setup); its seal.Key (p.key) then
// seals under the collective key and opens what the coordinator switched to
// its own key.

// participantKeys is a participant's threshold key.
type participantKeys struct {
	fed    *threshold.Federation
	party  *threshold.Party
	setups []*threshold.SetupShare // the committee's, kept from key-setups for Receive
	rejoin bool                    // a new party after the key was made: it only seals and opens
	// own: the own public keys switch requests brought on this
	// connection, by participant index (a coordinator sends each once,
	// and again when it changed: Message.OwnKeys).
	own map[int]*threshold.OwnPublicKey
}

// minThreshold is the smallest t a participant accepts from a coordinator
// for a committee of n: with t = 1 one member alone (and the server with
// it) would open everything.
func minThreshold(n int) int { return min(2, n) }

// onKeySetup makes the participant's party of the federation's threshold
// key and answers with its setup share (a committee member) or its own
// public key.
func (p *Participant) onKeySetup(m Message) ([]Message, error) {
	ks := m.KeySetup
	if ks == nil {
		return nil, errors.New("participant: key-setup without its key description")
	}
	if ks.Threshold < minThreshold(len(ks.Committee)) {
		return nil, fmt.Errorf("participant: key-setup: threshold %d over a committee of %d: want at least %d, so that no one member opens alone",
			ks.Threshold, len(ks.Committee), minThreshold(len(ks.Committee)))
	}
	s, err := seal.ThresholdScheme()
	if err != nil {
		return nil, fmt.Errorf("participant: key-setup: %w", err)
	}
	cfg := threshold.Config{Federation: ks.Federation, Threshold: ks.Threshold}
	for _, id := range ks.Committee {
		if id < 1 {
			return nil, fmt.Errorf("participant: key-setup: committee party id %d", id)
		}
		cfg.Parties = append(cfg.Parties, threshold.PartyID(id))
	}
	if ks.Party < 1 {
		return nil, fmt.Errorf("participant: key-setup: party id %d", ks.Party)
	}
	fed, err := threshold.New(s, cfg)
	if err != nil {
		return nil, fmt.Errorf("participant: key-setup: %w", err)
	}
	party := p.restoredParty(fed, ks)
	if party == nil {
		if party, err = threshold.NewParty(fed, threshold.PartyID(ks.Party), p.secret[:]); err != nil {
			return nil, fmt.Errorf("participant: key-setup: %w", err)
		}
	}
	p.keys, p.key, p.setup = &participantKeys{fed: fed, party: party, rejoin: ks.Rejoin}, nil, nil
	var b []byte
	if fed.IsMember(party.ID()) && (!ks.Rejoin || party.Ready()) {
		// A member back with its stored party sends its setup share
		// again (the same bytes: it derives from the party's seed), which
		// tells the coordinator it still holds its share.
		su, err := party.Setup()
		if err != nil {
			return nil, fmt.Errorf("participant: key-setup: %w", err)
		}
		b, err = su.Marshal()
		if err != nil {
			return nil, fmt.Errorf("participant: key-setup: %w", err)
		}
	} else if b, err = party.PublicKey().Marshal(); err != nil {
		return nil, fmt.Errorf("participant: key-setup: %w", err)
	}
	return []Message{{Kind: KindKeyShare, Round: m.Round, Keys: [][]byte{b}}}, nil
}

// onKeySetups takes the committee's setup shares: a member deals its Shamir
// shares, any other participant (or a member back without its share) takes
// the collective key, checking every share's tags under the link secret.
func (p *Participant) onKeySetups(m Message) ([]Message, error) {
	pk := p.keys
	if pk == nil {
		return nil, errors.New("participant: key-setups before key-setup")
	}
	setups, err := decodeKeys(m.Keys, pk.fed.UnmarshalSetupShare)
	if err != nil {
		return nil, fmt.Errorf("participant: key-setups: %w", err)
	}
	reply := Message{Kind: KindKeyDealt, Round: m.Round}
	if pk.rejoin && pk.party.Ready() {
		// Restored: it has its keys. The setup shares must still be those
		// its collective key came from, its own among them unchanged.
		if err := pk.party.AcceptSetups(setups); err != nil {
			return nil, fmt.Errorf("participant: key-setups: the stored threshold key does not fit this federation's: %w", err)
		}
		return []Message{reply}, p.keyReady()
	}
	if !pk.fed.IsMember(pk.party.ID()) || pk.rejoin {
		if err := pk.accept(setups, p.secret[:]); err != nil {
			return nil, fmt.Errorf("participant: key-setups: %w", err)
		}
		return []Message{reply}, p.keyReady()
	}
	dealt, err := pk.party.Deal(setups)
	if err != nil {
		return nil, fmt.Errorf("participant: key-setups: %w", err)
	}
	for _, e := range dealt {
		b, err := e.Marshal()
		if err != nil {
			return nil, fmt.Errorf("participant: key-setups: %w", err)
		}
		reply.Keys = append(reply.Keys, b)
	}
	pk.setups = setups
	return []Message{reply}, nil
}

// accept takes the collective key from the committee's setup shares after
// checking their tags (Party.AcceptSetups). A member back without its share
// has a new party whose own setup share is not among them, which
// AcceptSetups refuses in a member: a party outside the committee, made
// with the same link secret for the purpose, checks them instead.
func (pk *participantKeys) accept(setups []*threshold.SetupShare, link []byte) error {
	checker := pk.party
	if pk.fed.IsMember(pk.party.ID()) {
		var err error
		if checker, err = threshold.NewParty(pk.fed, outsiderID, link); err != nil {
			return err
		}
	}
	if err := checker.AcceptSetups(setups); err != nil {
		return err
	}
	if checker != pk.party {
		return pk.party.SetCollectiveKey(checker.CollectiveKey())
	}
	return nil
}

// outsiderID is a party id no committee has (members are participant
// indexes plus 1).
const outsiderID = threshold.PartyID(1<<32 - 1)

// KeyState returns the participant's threshold key state for its storage
// (nil with shared keys or before the key setup): the party's secrets,
// sealed under a key derived from the link secret (threshold.Party.Save),
// so that a reloaded tab takes part again with its share.
func (p *Participant) KeyState() ([]byte, error) {
	if p.keys == nil {
		return nil, nil
	}
	b, err := p.keys.party.Save(p.secret[:])
	if err != nil {
		return nil, fmt.Errorf("participant: key state: %w", err)
	}
	return b, nil
}

// RestoreKeyState gives a participant, before it joins again, the key state
// KeyState returned: when the coordinator asks it back into the federation's
// threshold key (key-setup, rejoin), it uses the stored party.
func (p *Participant) RestoreKeyState(state []byte) { p.stored = state }

// restoredParty returns the stored party if it belongs to this federation's
// key and party id, and the coordinator asks the participant back in; nil
// otherwise (a fresh key setup makes a new party: the old one's share is
// of an abandoned setup).
func (p *Participant) restoredParty(fed *threshold.Federation, ks *KeySetup) *threshold.Party {
	if p.stored == nil || !ks.Rejoin {
		return nil
	}
	party, err := threshold.Restore(fed, p.stored, p.secret[:])
	if err != nil || int(party.ID()) != ks.Party || !party.Ready() {
		return nil
	}
	return party
}

// decodeKeys decodes every key-layer message of a Keys field with dec.
func decodeKeys[T any](bs [][]byte, dec func([]byte) (T, error)) ([]T, error) {
	out := make([]T, len(bs))
	for i, b := range bs {
		v, err := dec(b)
		if err != nil {
			return nil, fmt.Errorf("key message %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// onKeyShares completes a member's setup with the Shamir shares dealt to it.
func (p *Participant) onKeyShares(m Message) ([]Message, error) {
	pk := p.keys
	if pk == nil || pk.setups == nil {
		return nil, errors.New("participant: key-shares before key-setups")
	}
	shares, err := decodeKeys(m.Keys, pk.fed.UnmarshalEncryptedShare)
	if err != nil {
		return nil, fmt.Errorf("participant: key-shares: %w", err)
	}
	if err := pk.party.Receive(pk.setups, shares); err != nil {
		return nil, fmt.Errorf("participant: key-shares: %w", err)
	}
	pk.setups = nil
	return []Message{{Kind: KindKeyReady, Round: m.Round}}, p.keyReady()
}

// keyReady makes the party's key the participant's sealing key.
func (p *Participant) keyReady() error {
	k, err := p.keys.party.Key()
	if err != nil {
		return fmt.Errorf("participant: %w", err)
	}
	p.key = k
	return nil
}

// onSwitch makes this member's switching shares for a switch request: per
// job, its share of switching the chunk to the target's own key, whose tag
// the party checks under the link secret.
func (p *Participant) onSwitch(m Message) ([]Message, error) {
	pk := p.keys
	if pk == nil || p.key == nil {
		return nil, errors.New("participant: switch request without a threshold key")
	}
	nk := len(m.OwnKeys)
	if nk > len(m.Keys) {
		return nil, fmt.Errorf("participant: switch: %d own keys but %d key messages", nk, len(m.Keys))
	}
	if err := p.checkEntitled(m, len(m.Keys)-nk); err != nil {
		return nil, fmt.Errorf("participant: switch request %d: %w", m.Batch, err)
	}
	if pk.own == nil {
		pk.own = map[int]*threshold.OwnPublicKey{}
	}
	for i, b := range m.Keys[:nk] {
		ti := m.OwnKeys[i]
		if ti < 0 || ti >= len(m.Targets) {
			return nil, fmt.Errorf("participant: switch: own key %d for target %d of %d", i, ti, len(m.Targets))
		}
		o, err := pk.fed.UnmarshalOwnPublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("participant: switch: own key of target %d: %w", ti, err)
		}
		if int(o.ID) != m.Targets[ti]+1 {
			return nil, fmt.Errorf("participant: switch: target %d is participant %d, but its own key is party %d's", ti, m.Targets[ti], o.ID)
		}
		pk.own[m.Targets[ti]] = o
	}
	targets := make([]*threshold.OwnPublicKey, len(m.Targets))
	for i, to := range m.Targets {
		if targets[i] = pk.own[to]; targets[i] == nil {
			return nil, fmt.Errorf("participant: switch: no own public key of participant %d (target %d) came on this connection", to, i)
		}
	}
	s := pk.fed.Scheme()
	chunks := make([]seal.Chunk, len(m.Keys)-nk)
	for i, b := range m.Keys[nk:] {
		c, err := s.Unmarshal(b)
		if err != nil {
			return nil, fmt.Errorf("participant: switch: chunk %d: %w", i, err)
		}
		chunks[i] = c
	}
	active := make([]threshold.PartyID, len(m.ActiveSet))
	for i, id := range m.ActiveSet {
		if id < 1 {
			return nil, fmt.Errorf("participant: switch: active party id %d", id)
		}
		active[i] = threshold.PartyID(id)
	}
	shares, err := pk.party.SwitchShares(chunks, active, targets, m.Jobs)
	if err != nil {
		return nil, fmt.Errorf("participant: switch: %w", err)
	}
	reply := Message{Kind: KindSwitchShares, Round: m.Round, Batch: m.Batch}
	for j, sh := range shares {
		b, err := sh.Marshal()
		if err != nil {
			return nil, fmt.Errorf("participant: switch: job %d: %w", j, err)
		}
		reply.Keys = append(reply.Keys, b)
	}
	return []Message{reply}, nil
}

// Entitlement. A member switches a chunk only to a participant that may
// open it: a sample-layout or Gram chunk to a holder of the group it
// belongs to, a feature-layout chunk (an aggregate over every participant)
// only in a federation that opens such aggregates. It knows the groups and
// their holders from its setup (Setup.Layout, checked against its own
// samples there) and each job's position from the request (JobAt). What it
// cannot see is what a chunk holds: a server that puts something else at a
// position (one participant's ciphertext where a sum belongs, another
// group's chunk) passes these checks (docs/privacy.md, "Threshold keys").

// checkLayout checks the sample groups a member gets against what it knows
// of its own samples: each lies in a group that lists it among as many
// holders as its setup says, and its local groups are distinct groups.
func (p *Participant) checkLayout(s *Setup) error {
	pk := p.keys
	if pk == nil || !pk.fed.IsMember(pk.party.ID()) {
		return nil // only members switch
	}
	if s.Layout == nil {
		return errors.New("the key committee's member got no sample layout: it could not check whom it switches sums to")
	}
	for gi, g := range s.Layout {
		if g.Chunks < 1 || len(g.Holders) == 0 {
			return fmt.Errorf("layout: group %d has %d chunks, %d holders", gi, g.Chunks, len(g.Holders))
		}
		for i, h := range g.Holders {
			if h < 0 || i > 0 && h <= g.Holders[i-1] {
				return fmt.Errorf("layout: group %d's holders %v are not distinct participant indexes in ascending order", gi, g.Holders)
			}
		}
	}
	me := int(pk.party.ID()) - 1
	cl := pk.fed.Scheme().ChunkLen()
	local := map[int]int{} // local group -> layout group
	for i, sl := range s.Slots {
		gi := groupAtChunk(s.Layout, sl/cl)
		if gi < 0 {
			return fmt.Errorf("layout: sample %d's slot %d lies outside the layout's groups", i, sl)
		}
		g := s.Layout[gi]
		if !slices.Contains(g.Holders, me) || len(g.Holders) != s.Holders[i] {
			return fmt.Errorf("layout: sample %d (slot %d, %d holders) lies in group %d, whose holders are %v", i, sl, s.Holders[i], gi, g.Holders)
		}
		if prev, ok := local[s.Group[i]]; ok && prev != gi {
			return fmt.Errorf("layout: samples of local group %d lie in groups %d and %d", s.Group[i], prev, gi)
		}
		local[s.Group[i]] = gi
	}
	if len(local) != len(s.GroupKeys) {
		return fmt.Errorf("layout: the participant's %d groups lie in %d of the layout's", len(s.GroupKeys), len(local))
	}
	return nil
}

// groupAtChunk returns the group whose sample chunks include chunk ci
// (-1: none).
func groupAtChunk(layout []GroupLayout, ci int) int {
	if ci < 0 {
		return -1
	}
	end := 0
	for gi, g := range layout {
		end += g.Chunks
		if ci < end {
			return gi
		}
	}
	return -1
}

// checkEntitled refuses a switch request (with n chunks) unless every job
// switches its chunk to a participant entitled to the chunk's position.
func (p *Participant) checkEntitled(m Message, n int) error {
	if p.setup == nil || p.setup.Layout == nil {
		return errors.New("no sample layout yet (setup): cannot check whom the chunks go to")
	}
	layout, cfg := p.setup.Layout, p.setup.Config
	if len(m.JobAt) != len(m.Jobs) {
		return fmt.Errorf("%d positions for %d jobs", len(m.JobAt), len(m.Jobs))
	}
	cl := p.keys.fed.Scheme().ChunkLen()
	at := make(map[int][2]int, n) // chunk -> its position, one per chunk
	for j, job := range m.Jobs {
		ti, ci := job[0], job[1]
		if ti < 0 || ti >= len(m.Targets) || ci < 0 || ci >= n {
			return fmt.Errorf("job %d: target %d of %d, chunk %d of %d", j, ti, len(m.Targets), ci, n)
		}
		pos, to := m.JobAt[j], m.Targets[ti]
		if prev, ok := at[ci]; ok && prev != pos {
			return fmt.Errorf("job %d: chunk %d claimed at layout %d chunk %d and at layout %d chunk %d", j, ci, prev[0], prev[1], pos[0], pos[1])
		}
		at[ci] = pos
		var gi int
		switch pos[0] {
		case LayoutSamples:
			if gi = groupAtChunk(layout, pos[1]); gi < 0 {
				return fmt.Errorf("job %d: sample chunk %d is outside the layout's groups", j, pos[1])
			}
		case LayoutGram:
			if cfg.Step != StepBlock || cfg.Baseline() {
				return fmt.Errorf("job %d: a Gram chunk, but the federation (%s, step %s) sums no Grams", j, cfg.Algo, cfg.Step)
			}
			per := gramChunks(blockPicks(cfg), cl)
			if gi = pos[1] / per; pos[1] < 0 || gi >= len(layout) {
				return fmt.Errorf("job %d: Gram chunk %d is outside the %d groups' Gram chunks", j, pos[1], len(layout))
			}
		case LayoutFeatures:
			if !cfg.SealPrimal && !cfg.Baseline() {
				return fmt.Errorf("job %d: a feature chunk, but the federation opens no aggregate over features", j)
			}
			if nf := (p.block.NumFeatures + cl - 1) / cl; pos[1] < 0 || pos[1] >= nf {
				return fmt.Errorf("job %d: feature chunk %d is outside the %d feature chunks", j, pos[1], nf)
			}
			continue // every participant's sum, opened by the round's opener: anyone may be the target
		default:
			return fmt.Errorf("job %d: layout %d", j, pos[0])
		}
		if h := layout[gi].Holders; !slices.Contains(h, to) {
			return fmt.Errorf("job %d: participant %d does not hold sample group %d (holders %v) and may not open its chunk %d (layout %d)",
				j, to, gi, h, pos[1], pos[0])
		}
	}
	return nil
}
