package protocol

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/oprf"
)

// OPRF pseudonyms, the coordinator's side (Config.Pseudonyms "oprf").
//
// The hellos carry no pseudonyms. Before the alignment the key committee
// (KeyCommittee participants, native ones before browser tabs and each kind
// by index; t = KeyThreshold) makes
// an OPRF key no one holds, every participant has its blinded ids
// evaluated by the members and sends the pseudonyms it unblinds; then the
// federation aligns as with keyed pseudonyms (align counts pseudonyms only
// as equal or not, so the layout and the model are the same). The
// coordinator relays what it cannot use: channel keys and commitments
// tagged under the link secret, shares sealed to their members, blinded
// points and evaluations. A participant that leaves meanwhile makes the
// phase start afresh, with a new key, once enough are registered.

// oprfState is the coordinator's part of the pseudonym phase: public
// values only.
type oprfState struct {
	members   []int // participant indexes, ascending
	threshold int
	chanKeys  [][]byte         // per member, tagged (oprf-key)
	commits   [][]byte         // per member, tagged (oprf-dealt)
	inbox     map[int][][]byte // sealed shares by recipient participant
	batches   map[int][][]byte // blinded ids by participant, in batches of at most oprfBatch
	from      []int            // the participant of each batch the members evaluate, in oprf-eval's order
	first     map[int]int      // where each participant's batches start in from
	evals     map[int][][]byte // each member's evaluations, one a batch of from, to check complaints
	// broken: a participant left, or joined, since the phase began; one
	// that comes back has lost its part (a member its key share).
	broken bool
}

// oprfBatch is the most ids in one batch: a batch's proof covers at most
// oprf.MaxBatch points. A variable only so that tests can make batches small.
var oprfBatch = oprf.MaxBatch

// pseudonymTag is the length of a tag under the link secret (HMAC-SHA256).
const pseudonymTag = 32

// pseudonymHex is a pseudonym's length: the first 16 bytes of the OPRF's
// output in hex, as long as a keyed one.
const pseudonymHex = 32

// needPseudonyms reports whether the federation must run the pseudonym
// phase before it can align: OPRF pseudonyms, and a participant without.
func (c *Coordinator) needPseudonyms() bool {
	if !c.cfg.OPRF() {
		return false
	}
	for _, cs := range c.clients {
		if cs.hello != nil && cs.connected && len(cs.hello.Pseudonyms) == 0 {
			return true
		}
	}
	return false
}

// pseudonymSetup starts the phase with the participants connected now; the
// pseudonyms of an earlier run, under another key, are dropped.
func (c *Coordinator) pseudonymSetup() {
	all := c.connected()
	for _, cs := range c.clients {
		if cs.hello != nil {
			cs.hello.Pseudonyms = nil
		}
	}
	n := min(c.cfg.KeyCommittee, len(all))
	// Native participants first: a member evaluates every participant's
	// ids, 6 times slower in a browser tab.
	order := slices.Clone(all)
	slices.SortStableFunc(order, func(a, b int) int { return cmpBool(c.clients[a].hello.Browser, c.clients[b].hello.Browser) })
	members := slices.Sorted(slices.Values(order[:n]))
	st := &oprfState{members: members, threshold: min(c.cfg.KeyThreshold, n), inbox: map[int][][]byte{},
		batches: map[int][][]byte{}}
	c.oprf = st
	for _, k := range all {
		c.send(k, Message{Kind: KindOPRFSetup, Round: c.round, OPRF: st.roundFor(k)})
	}
	c.await(PhaseOPRFKeys, all, c.oprfKeysIn)
}

// roundFor is the committee as participant k gets it.
func (st *oprfState) roundFor(k int) *OPRFRound {
	return &OPRFRound{Members: st.members, Threshold: st.threshold, Member: slices.Index(st.members, k) + 1, Participant: k}
}

// oprfAgain gives up a phase a participant left: it starts afresh with
// those connected, if enough are (else at the next registration).
func (c *Coordinator) oprfAgain(p *phaseState) bool {
	if len(p.dropped) == 0 && !c.oprf.broken {
		return false
	}
	c.oprf = nil
	if n := c.numConnected(); n >= c.cfg.Clients || (c.holdStart && n > 0) {
		c.begin()
	}
	return true
}

// oprfKeysIn: the members' channel keys are in; they deal.
func (c *Coordinator) oprfKeysIn(p *phaseState) {
	if c.oprfAgain(p) {
		return
	}
	st := c.oprf
	for _, k := range st.members {
		st.chanKeys = append(st.chanKeys, p.replies[k].Keys[0])
	}
	for _, k := range st.members {
		c.send(k, Message{Kind: KindOPRFKeys, Round: c.round, Keys: st.chanKeys})
	}
	c.await(PhaseOPRFDeal, st.members, c.oprfDealtIn)
}

// oprfDealtIn: the commitments and sealed shares are in (routed by
// checkOPRF); everyone gets the commitments, each member its shares, and
// every participant blinds its ids.
func (c *Coordinator) oprfDealtIn(p *phaseState) {
	if c.oprfAgain(p) {
		return
	}
	st := c.oprf
	for _, k := range st.members {
		st.commits = append(st.commits, p.replies[k].Keys[0])
	}
	all := c.connected()
	for _, k := range all {
		keys := slices.Clone(st.commits)
		keys = append(keys, st.inbox[k]...)
		c.send(k, Message{Kind: KindOPRFShares, Round: c.round, Keys: keys})
	}
	st.inbox = nil
	c.await(PhaseOPRFBlind, all, c.oprfBlindedIn)
}

// oprfBlindedIn: every participant's blinded ids are in; each member
// evaluates them all, told the rows each participant declared.
func (c *Coordinator) oprfBlindedIn(p *phaseState) {
	if c.oprfAgain(p) {
		return
	}
	st := c.oprf
	r := &OPRFRound{Members: st.members, Threshold: st.threshold}
	var keys [][]byte
	st.from, st.first = nil, map[int]int{}
	for _, k := range sortedKeys(p.replies) {
		st.first[k] = len(st.from)
		for _, b := range st.batches[k] {
			st.from = append(st.from, k)
			r.From = append(r.From, k)
			r.Rows = append(r.Rows, len(c.clients[k].hello.Heldout))
			keys = append(keys, b)
		}
	}
	for _, k := range st.members {
		out := *r
		out.Member = slices.Index(st.members, k) + 1
		c.send(k, Message{Kind: KindOPRFEval, Round: c.round, OPRF: &out, Keys: keys})
	}
	c.await(PhaseOPRFEval, st.members, c.oprfEvaluatedIn)
}

// oprfEvaluatedIn: the evaluations are in (routed by checkOPRF); each
// participant gets those of its ids and sends its pseudonyms.
func (c *Coordinator) oprfEvaluatedIn(p *phaseState) {
	if c.oprfAgain(p) {
		return
	}
	st := c.oprf
	st.evals = map[int][][]byte{}
	for _, m := range st.members {
		st.evals[m] = p.replies[m].Keys
	}
	all := c.connected()
	for _, k := range all {
		// Batch-major, as the participant reads them.
		var keys [][]byte
		for bi := range st.batches[k] {
			for _, m := range st.members {
				keys = append(keys, st.evals[m][st.batchAt(k, bi)])
			}
		}
		c.send(k, Message{Kind: KindOPRFEvals, Round: c.round, Keys: keys})
	}
	c.await(PhaseOPRFFinal, all, func(p *phaseState) {
		if c.oprfAgain(p) {
			return
		}
		for k, m := range p.replies {
			c.clients[k].hello.Pseudonyms = m.Pseudonyms
		}
		r := c.oprfComplaints(p.replies)
		c.oprf = nil
		if r != nil {
			c.refuse(r) // the others' pseudonyms stand: the honest members made them
			return
		}
		c.begin()
	})
}

// oprfComplaints checks the participants' complaints against members whose
// evaluations did not verify, with the public commitments and what the
// coordinator relayed: a member whose evaluations fail is refused, and so
// is a participant whose complaint was false.
func (c *Coordinator) oprfComplaints(replies map[int]Message) *refusal {
	st := c.oprf
	committee := oprf.Committee{N: len(st.members), T: st.threshold}
	var pub *oprf.PublicKeys
	liars, falsely := map[int]bool{}, map[int]bool{}
	var why []string
	for _, k := range sortedKeys(replies) {
		m := replies[k]
		if m.OPRF == nil {
			continue
		}
		if pub == nil {
			var cms []*oprf.Commitment
			for _, b := range st.commits {
				cm, err := oprf.DecodeCommitment(b[:len(b)-pseudonymTag], committee) // checked when it came
				if err != nil {
					c.fail(fmt.Errorf("oprf: a commitment: %w", err))
					return nil
				}
				cms = append(cms, cm)
			}
			var err error
			if pub, err = oprf.NewPublicKeys(committee, cms); err != nil {
				c.fail(fmt.Errorf("oprf: the public keys: %w", err))
				return nil
			}
		}
		for _, j := range m.OPRF.Bad {
			if j < 1 || j > len(st.members) {
				falsely[k] = true
				continue
			}
			member := st.members[j-1]
			lied := false
			for bi, b := range st.batches[k] {
				req, err1 := oprf.DecodeEvaluationRequest(b, oprfBatch)
				resp, err2 := oprf.DecodeEvaluationResponse(st.evals[member][st.batchAt(k, bi)], oprfBatch)
				if err1 != nil || err2 != nil || oprf.VerifyEvaluation(pub, req, resp) != nil {
					lied = true
				}
			}
			if lied {
				liars[member] = true
				why = append(why, fmt.Sprintf("%s's evaluations of %s's ids do not verify against its public key share", c.name(member), c.name(k)))
			} else {
				falsely[k] = true
				why = append(why, fmt.Sprintf("%s said %s's evaluations of its ids do not verify, and they do", c.name(k), c.name(member)))
			}
		}
	}
	who := slices.Sorted(maps.Keys(liars))
	for k := range falsely {
		if !liars[k] {
			who = append(who, k)
		}
	}
	if len(who) == 0 {
		return nil
	}
	slices.Sort(who)
	return &refusal{who, Errorf(CodeSchema, "OPRF pseudonyms: %s", strings.Join(why, "; "))}
}

// checkOPRF checks a reply of the pseudonym phase from participant k and
// keeps what the next step relays: sizes and encodings, each batch of
// exactly the rows the participant declared, and pseudonyms of their form.
func (c *Coordinator) checkOPRF(k int, m Message) error {
	st := c.oprf
	member := slices.Index(st.members, k) + 1
	committee := oprf.Committee{N: len(st.members), T: st.threshold}
	rows := len(c.clients[k].hello.Heldout)
	switch m.Kind {
	case KindOPRFKey:
		if member == 0 {
			if len(m.Keys) != 0 {
				return fmt.Errorf("oprf-key: a channel key from a participant outside the committee")
			}
			return nil
		}
		if len(m.Keys) != 1 || len(m.Keys[0]) != 32+pseudonymTag {
			return fmt.Errorf("oprf-key: want one tagged channel key of %d bytes", 32+pseudonymTag)
		}
		return nil
	case KindOPRFDealt:
		if len(m.Keys) != len(st.members) {
			return fmt.Errorf("oprf-dealt: %d parts, want a commitment and a share for each of the %d other members", len(m.Keys), len(st.members)-1)
		}
		body := m.Keys[0]
		if len(body) < pseudonymTag {
			return fmt.Errorf("oprf-dealt: the commitment is too short")
		}
		cm, err := oprf.DecodeCommitment(body[:len(body)-pseudonymTag], committee)
		if err != nil {
			return fmt.Errorf("oprf-dealt: %w", err)
		}
		if cm.Dealer != member {
			return fmt.Errorf("oprf-dealt: the commitment of dealer %d from member %d", cm.Dealer, member)
		}
		routed := map[int][]byte{}
		for _, b := range m.Keys[1:] {
			from, to, ok := oprf.ShareRoute(b)
			if !ok || from != member || to == member || to < 1 || to > len(st.members) || routed[to] != nil {
				return fmt.Errorf("oprf-dealt: a sealed share %d -> %d from member %d", from, to, member)
			}
			routed[to] = b
		}
		for to, b := range routed {
			st.inbox[st.members[to-1]] = append(st.inbox[st.members[to-1]], b)
		}
		return nil
	case KindOPRFBlinded:
		if want := (rows + oprfBatch - 1) / oprfBatch; len(m.Keys) != want {
			return fmt.Errorf("oprf-blinded: %d batches, want the %d of %d rows", len(m.Keys), want, rows)
		}
		for i, b := range m.Keys {
			n := min(oprfBatch, rows-i*oprfBatch)
			req, err := oprf.DecodeEvaluationRequest(b, n)
			if err != nil {
				return fmt.Errorf("oprf-blinded: not a batch of at most the %d ids the participant declared: %w", rows, err)
			}
			if len(req.Elements) != n || req.Context != c.oprfContext(k) {
				return fmt.Errorf("oprf-blinded: %d ids for participant %q of %q, want the %d it declared, its own", len(req.Elements), req.Context.ParticipantID, req.Context.FederationID, rows)
			}
		}
		st.batches[k] = m.Keys
		return nil
	case KindOPRFEvaluated:
		if len(m.Keys) != len(st.from) {
			return fmt.Errorf("oprf-evaluated: %d evaluations, want one for each of %d batches", len(m.Keys), len(st.from))
		}
		for i, from := range st.from {
			n := min(oprfBatch, len(c.clients[from].hello.Heldout)-(i-st.first[from])*oprfBatch)
			r, err := oprf.DecodeEvaluationResponse(m.Keys[i], n)
			if err != nil {
				return fmt.Errorf("oprf-evaluated: participant %d's ids: %w", from, err)
			}
			if r.Member != member || len(r.Elements) != n {
				return fmt.Errorf("oprf-evaluated: %d evaluations of member %d for participant %d, want %d of member %d", len(r.Elements), r.Member, from, n, member)
			}
		}
		return nil
	case KindPseudonyms:
		if len(m.Pseudonyms) != rows {
			return fmt.Errorf("pseudonyms: %d for the %d rows the participant declared", len(m.Pseudonyms), rows)
		}
		seen := make(map[string]bool, rows)
		for _, p := range m.Pseudonyms {
			if len(p) != pseudonymHex || !isHex(p) {
				return fmt.Errorf("pseudonyms: %q is not %d hex digits", p, pseudonymHex)
			}
			if seen[p] {
				return fmt.Errorf("pseudonyms: sample %s listed twice", p)
			}
			seen[p] = true
		}
		return nil
	}
	return fmt.Errorf("%s: not a reply of the pseudonym phase", m.Kind)
}

// batchAt is the index in from of participant k's batch bi.
func (st *oprfState) batchAt(k, bi int) int { return st.first[k] + bi }

// oprfContext is what participant k's evaluations are bound to.
func (c *Coordinator) oprfContext(k int) oprf.Context {
	return oprf.Context{FederationID: c.keyFederationID(), ParticipantID: strconv.Itoa(k)}
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}
