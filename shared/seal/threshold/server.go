package threshold

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/mhe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/ring/ringqp"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
)

// The server's side: it adds public shares and forwards encrypted ones. No
// function here takes a secret.

// indexSetups returns the setup shares by sender, exactly one for every
// committee member.
func (f *Federation) indexSetups(setups []*SetupShare) (map[PartyID]*SetupShare, error) {
	byID := make(map[PartyID]*SetupShare, len(setups))
	for _, s := range setups {
		switch {
		case s == nil || s.f != f:
			return nil, errors.New("threshold: setup share of another federation")
		case !f.member[s.From]:
			return nil, fmt.Errorf("threshold: setup share from party %d, not on the committee", s.From)
		case byID[s.From] != nil:
			return nil, fmt.Errorf("threshold: two setup shares from party %d", s.From)
		}
		byID[s.From] = s
	}
	if len(byID) != len(f.ids) {
		return nil, fmt.Errorf("threshold: %d setup shares, want one from each of the %d committee members", len(byID), len(f.ids))
	}
	return byID, nil
}

// AggregatePublicKey adds the setup shares of all committee members into the
// collective public key (p0 = sum of crp*s_i + e_i, p1 = crp). Members
// compute it themselves in Receive; the server does for participants outside
// the committee.
func (f *Federation) AggregatePublicKey(setups []*SetupShare) (*CollectivePublicKey, error) {
	byID, err := f.indexSetups(setups)
	if err != nil {
		return nil, err
	}
	agg := f.ckg.AllocateShare()
	for _, id := range f.ids {
		f.ckg.AggregateShares(agg, mhe.PublicKeyGenShare{Value: ringqp.Poly{Q: byID[id].CKG}}, &agg)
	}
	return &CollectivePublicKey{f: f, P0: agg.Value.Q}, nil
}

// OwnPublicKey returns the own public key a setup share carries, with its
// tag.
func (s *SetupShare) OwnPublicKey() *OwnPublicKey {
	return &OwnPublicKey{f: s.f, ID: s.From, P0: s.Own, Auth: s.Auth[2]}
}

// AggregateSwitch adds the switching shares of exactly t committee members,
// all made for chunk c, the same active set and the same target, and applies
// them to c: the result is c under the target's own key. Fewer than t
// shares cannot open c (the shares of an incomplete set add up to no key at
// all), so it refuses them rather than return noise.
func (f *Federation) AggregateSwitch(c seal.Chunk, shares []*SwitchShare) (*Switched, error) {
	ct, err := f.s.Ciphertext(c)
	if err != nil {
		return nil, fmt.Errorf("threshold: aggregate: %w", err)
	}
	if len(shares) != f.cfg.Threshold {
		return nil, fmt.Errorf("threshold: %d switching shares, want exactly t = %d", len(shares), f.cfg.Threshold)
	}
	first := shares[0]
	if first == nil || first.f != f {
		return nil, errors.New("threshold: switching share of another federation")
	}
	digest := f.digest(ct)
	seen := map[PartyID]bool{}
	for _, sh := range shares {
		switch {
		case sh == nil || sh.f != f:
			return nil, errors.New("threshold: switching share of another federation")
		case sh.Target != first.Target:
			return nil, fmt.Errorf("threshold: switching shares for targets %d and %d", first.Target, sh.Target)
		case !slices.Equal(sh.Active, first.Active):
			return nil, fmt.Errorf("threshold: switching shares for active sets %v and %v", first.Active, sh.Active)
		case sh.Digest != digest:
			return nil, fmt.Errorf("threshold: switching share of party %d was made for another chunk", sh.From)
		case seen[sh.From]:
			return nil, fmt.Errorf("threshold: two switching shares from party %d", sh.From)
		case !slices.Contains(first.Active, sh.From):
			return nil, fmt.Errorf("threshold: switching share from party %d, not in the active set %v", sh.From, first.Active)
		}
		seen[sh.From] = true
	}
	rq := f.params.RingQ().AtLevel(ct.Level())
	agg := [2]ring.Poly{rq.NewPoly(), rq.NewPoly()}
	for _, sh := range shares {
		rq.Add(agg[0], sh.Value[0], agg[0])
		rq.Add(agg[1], sh.Value[1], agg[1])
	}
	// mhe's KeySwitch: (c0 + sum h0, sum h1).
	out := bgv.NewCiphertext(f.params, 1, ct.Level())
	*out.MetaData = *ct.MetaData
	rq.Add(ct.Value[0], agg[0], out.Value[0])
	out.Value[1].Copy(agg[1])
	chunk, err := f.s.WrapCiphertext(out)
	if err != nil {
		return nil, err
	}
	return &Switched{f: f, To: first.Target, Chunk: chunk}, nil
}
