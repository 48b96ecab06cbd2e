package protocol

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/hyfed/hyfed/shared/oprf"
	"github.com/hyfed/hyfed/shared/secret"
)

// OPRF pseudonyms, the participant's side (coordinator_pseudonyms.go): a
// member makes a channel key, deals its part of the OPRF key and evaluates
// every participant's blinded ids with its share; every participant blinds
// its own ids and unblinds the members' evaluations into its pseudonyms.

// participantOPRF is a participant's state in the pseudonym phase.
type participantOPRF struct {
	round     *OPRFRound
	committee oprf.Committee
	chanKey   *oprf.ChannelKey // a member's
	chanKeys  [][]byte         // every member's, checked
	evaluator *oprf.Evaluator  // a member's, once its key share is made
	pub       *oprf.PublicKeys
	blinds    []*oprf.BlindState // the block's ids in batches of at most oprfBatch
	own       *oprf.SecretShare  // a member's share of its own dealing
}

// AlignByOPRF makes the participant take part in a federation whose samples
// are aligned by OPRF pseudonyms (its link says so): its hello carries no
// pseudonyms, only a digest of its ids, and it refuses a federation set
// up otherwise.
func (p *Participant) AlignByOPRF() { p.byOPRF, p.pseud = true, nil }

// InBrowser says in the hello that the participant runs in a browser tab.
func (p *Participant) InBrowser() { p.browser = true }

// blockDigest is a keyed hash of a block's ids in order: one value for the
// whole block, so that no id can be tested against it alone.
func blockDigest(s secret.Secret, ids []string) string {
	key := s.Derive("hyfed block digest")
	m := hmac.New(sha256.New, key[:])
	var n [8]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(n[:], uint64(len(id)))
		m.Write(n[:])
		m.Write([]byte(id))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// oprfTag tags what a member sends for the others under the link secret,
// so that a relay without it cannot put its own channel key or
// commitment in the member's place.
func oprfTag(s secret.Secret, label string, member int, body []byte) []byte {
	key := s.Derive("hyfed oprf tags")
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(label))
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(member))
	m.Write(n[:])
	m.Write(body)
	return m.Sum(nil)
}

// untag checks a tagged body and returns it.
func untag(s secret.Secret, label string, member int, tagged []byte) ([]byte, error) {
	if len(tagged) < pseudonymTag {
		return nil, fmt.Errorf("member %d's %s: too short", member, label)
	}
	body := tagged[:len(tagged)-pseudonymTag]
	if !hmac.Equal(tagged[len(body):], oprfTag(s, label, member, body)) {
		return nil, fmt.Errorf("member %d's %s: its tag does not match the federation secret", member, label)
	}
	return body, nil
}

func (p *Participant) oprfContext() oprf.Context {
	return oprf.Context{FederationID: federationID(p.secret.Fingerprint()), ParticipantID: strconv.Itoa(p.oprf.round.Participant)}
}

// onPseudonyms handles the pseudonym phase's requests.
func (p *Participant) onPseudonyms(m Message) ([]Message, error) {
	if !p.byOPRF {
		return nil, errors.New("participant: the federation aligns samples by OPRF pseudonyms, but this participant's link does not say so (pseudonyms=oprf): ask the organizer for the link hyfed create printed")
	}
	if m.Kind != KindOPRFSetup && p.oprf == nil {
		// A request of a phase an earlier connection began: the
		// coordinator, which saw that one leave, starts the phase again.
		return nil, nil
	}
	reply := func(kind Kind, keys ...[]byte) ([]Message, error) {
		return []Message{{Kind: kind, Round: m.Round, Keys: keys}}, nil
	}
	switch m.Kind {
	case KindOPRFSetup:
		r := m.OPRF
		if r == nil {
			return nil, errors.New("participant: oprf-setup without the committee")
		}
		c := oprf.Committee{N: len(r.Members), T: r.Threshold}
		p.oprf = &participantOPRF{round: r, committee: c}
		if r.Member == 0 {
			return reply(KindOPRFKey)
		}
		k, err := oprf.NewChannelKey(nil)
		if err != nil {
			return nil, err
		}
		p.oprf.chanKey = k
		pub := k.Public()
		return reply(KindOPRFKey, append(pub, oprfTag(p.secret, "channel key", r.Member, pub)...))
	case KindOPRFKeys:
		st := p.oprf
		if st.chanKey == nil || len(m.Keys) != st.committee.N {
			return nil, fmt.Errorf("participant: oprf-keys: %d channel keys to a committee of %d (member %d)", len(m.Keys), st.committee.N, st.round.Member)
		}
		st.chanKeys = make([][]byte, len(m.Keys))
		for i, b := range m.Keys {
			key, err := untag(p.secret, "channel key", i+1, b)
			if err != nil {
				return nil, fmt.Errorf("participant: oprf-keys: %w", err)
			}
			st.chanKeys[i] = key
		}
		d, err := oprf.Deal(st.committee, st.round.Member, rand.Reader)
		if err != nil {
			return nil, err
		}
		cm, err := d.Commitment.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out := [][]byte{append(cm, oprfTag(p.secret, "commitment", st.round.Member, cm)...)}
		ctx := p.oprfContext().FederationID
		for j, s := range d.Shares {
			if j+1 == st.round.Member {
				st.own = s
				continue
			}
			b, err := st.chanKey.SealShare(st.chanKeys[j], ctx, s)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		return reply(KindOPRFDealt, out...)
	case KindOPRFShares:
		return p.onOPRFShares(m)
	case KindOPRFEval:
		return p.onOPRFEval(m)
	case KindOPRFEvals:
		// Batch-major: every member's evaluation of the first batch, then
		// of the next.
		st := p.oprf
		if len(st.blinds) == 0 || len(m.Keys)%len(st.blinds) != 0 {
			return nil, fmt.Errorf("participant: oprf-evals: %d evaluations for %d batches", len(m.Keys), len(st.blinds))
		}
		per := len(m.Keys) / len(st.blinds)
		var ps []string
		bad := map[int]bool{}
		for bi, b := range st.blinds {
			var rs []*oprf.EvaluationResponse
			for _, e := range m.Keys[bi*per : (bi+1)*per] {
				r, err := oprf.DecodeEvaluationResponse(e, b.Len())
				if err != nil {
					return nil, fmt.Errorf("participant: oprf-evals: %w", err)
				}
				rs = append(rs, r)
			}
			outs, liars, err := b.FinalizeValid(st.pub, p.oprfContext(), rs)
			if err != nil {
				return nil, fmt.Errorf("participant: oprf-evals: %w", err)
			}
			for _, l := range liars {
				bad[l.Member] = true
			}
			for _, o := range outs {
				ps = append(ps, hex.EncodeToString(o[:pseudonymHex/2]))
			}
		}
		p.oprf = nil
		reply := Message{Kind: KindPseudonyms, Round: m.Round, Pseudonyms: ps}
		if len(bad) > 0 {
			reply.OPRF = &OPRFRound{Bad: slices.Sorted(maps.Keys(bad))}
		}
		return []Message{reply}, nil
	}
	return nil, fmt.Errorf("participant: %s: not a request of the pseudonym phase", m.Kind)
}

// onOPRFShares takes every member's commitment (and, as a member, the
// shares dealt to it, making its key share) and blinds the block's ids.
func (p *Participant) onOPRFShares(m Message) ([]Message, error) {
	st := p.oprf
	n := st.committee.N
	if len(m.Keys) < n {
		return nil, fmt.Errorf("participant: oprf-shares: %d parts for a committee of %d", len(m.Keys), n)
	}
	cms := make([]*oprf.Commitment, n)
	for i, b := range m.Keys[:n] {
		body, err := untag(p.secret, "commitment", i+1, b)
		if err != nil {
			return nil, fmt.Errorf("participant: oprf-shares: %w", err)
		}
		if cms[i], err = oprf.DecodeCommitment(body, st.committee); err != nil {
			return nil, fmt.Errorf("participant: oprf-shares: %w", err)
		}
	}
	pub, err := oprf.NewPublicKeys(st.committee, cms)
	if err != nil {
		return nil, fmt.Errorf("participant: oprf-shares: %w", err)
	}
	st.pub = pub
	if st.round.Member > 0 {
		sealed := m.Keys[n:]
		if len(sealed) != n-1 || st.own == nil {
			return nil, fmt.Errorf("participant: oprf-shares: %d shares for member %d, want %d", len(sealed), st.round.Member, n-1)
		}
		shares := []*oprf.SecretShare{st.own}
		for _, b := range sealed {
			from, _, _ := oprf.ShareRoute(b)
			if from < 1 || from > n {
				return nil, fmt.Errorf("participant: oprf-shares: a share from dealer %d", from)
			}
			s, err := st.chanKey.OpenShare(st.chanKeys[from-1], p.oprfContext().FederationID, st.committee, st.round.Member, b)
			if err != nil {
				return nil, fmt.Errorf("participant: oprf-shares: %w", err)
			}
			shares = append(shares, s)
		}
		ks, err := oprf.CombineShares(st.committee, st.round.Member, cms, shares)
		if err != nil {
			return nil, fmt.Errorf("participant: oprf-shares: %w", err)
		}
		if st.evaluator, err = oprf.NewEvaluator(ks); err != nil {
			return nil, err
		}
	} else if len(m.Keys) != n {
		return nil, fmt.Errorf("participant: oprf-shares: shares to a participant outside the committee")
	}
	// A proof covers at most oprf.MaxBatch points: larger blocks go in
	// several batches.
	var reqs [][]byte
	for start := 0; start < len(p.block.IDs); start += oprfBatch {
		ids := make([][]byte, 0, min(oprfBatch, len(p.block.IDs)-start))
		for _, id := range p.block.IDs[start:min(start+oprfBatch, len(p.block.IDs))] {
			ids = append(ids, []byte(id))
		}
		b, err := oprf.Blind(ids, rand.Reader)
		if err != nil {
			return nil, err
		}
		req, err := b.Request(p.oprfContext()).MarshalBinary()
		if err != nil {
			return nil, err
		}
		st.blinds, reqs = append(st.blinds, b), append(reqs, req)
	}
	return []Message{{Kind: KindOPRFBlinded, Round: m.Round, Keys: reqs}}, nil
}

// onOPRFEval evaluates every participant's blinded ids with the member's
// key share, each against the rows it declared.
func (p *Participant) onOPRFEval(m Message) ([]Message, error) {
	st := p.oprf
	r := m.OPRF
	if st.evaluator == nil || r == nil || len(r.From) != len(m.Keys) || len(r.Rows) != len(m.Keys) {
		return nil, errors.New("participant: oprf-eval: not a member with a key share, or batches without their participants")
	}
	// Every participant's batch is its own work: a member with more cores
	// evaluates them side by side (the evaluator is safe for that).
	out := make([][]byte, len(m.Keys))
	errs := make([]error, len(m.Keys))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(m.Keys)) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = p.evaluateBatch(r.From[i], r.Rows[i], m.Keys[i])
			}
		})
	}
	for i := range m.Keys {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return []Message{{Kind: KindOPRFEvaluated, Round: m.Round, Keys: out}}, nil
}

// evaluateBatch evaluates participant from's blinded ids, which declared
// rows, with the member's key share.
func (p *Participant) evaluateBatch(from, rows int, b []byte) ([]byte, error) {
	ctx := oprf.Context{FederationID: p.oprfContext().FederationID, ParticipantID: strconv.Itoa(from)}
	// Decoded whole, so that a batch beyond the budget is refused as such
	// (the evaluator's error names the counts).
	req, err := oprf.DecodeEvaluationRequest(b, oprf.MaxBatch)
	if err != nil {
		return nil, fmt.Errorf("participant: oprf-eval: participant %d: %w", from, err)
	}
	if req.Context != ctx {
		return nil, fmt.Errorf("participant: oprf-eval: a batch bound to %+v sent as participant %d's", req.Context, from)
	}
	if err := p.oprf.evaluator.Declare(ctx, rows); err != nil {
		return nil, fmt.Errorf("participant: oprf-eval: %w", err)
	}
	resp, err := p.oprf.evaluator.Evaluate(req)
	if err != nil {
		return nil, fmt.Errorf("participant: oprf-eval: %w", err)
	}
	return resp.MarshalBinary()
}
