// Package threshold gives a hyfed federation t-of-n threshold BGV keys
// (issue 19): no single participant, and no coalition of the server with
// fewer than t participants, holds a key that opens another participant's
// chunks.
//
// The key committee (Config.Parties, n parties) generates a collective public
// key with Lattigo's multiparty layer (mhe): each member keeps a secret share
// s_i, publishes crp*s_i + e_i for a common random polynomial crp drawn from
// the federation id, and the shares add up to a public key of s = sum s_i.
// Each member then deals t-of-n Shamir shares of its s_i to the others
// (mhe.Thresholdizer), encrypted for each recipient with X25519, HKDF and
// AES-GCM because they travel through the server. Anyone with the collective
// public key seals chunks under it (Sealer); they are ordinary chunks of
// shared/seal's BGV scheme, so the server adds them with seal.BGV.Add. To
// open a sum for a participant P, t live members each send a public-key
// switching share towards P's own public key (mhe.PublicKeySwitchProtocol
// with their Shamir share turned into an additive share of s for that active
// set by mhe.Combiner); the server adds the shares into a chunk under P's
// own key, which P opens like any BGV chunk, bit for bit.
//
// Participant side: Party. Server side: the methods of Federation, which
// hold public data only. docs/encryption.md, "Threshold keys (issue 19): the
// key layer", gives the message flow, the security argument and the costs.
package threshold

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/mhe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/ring/ringqp"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
	"github.com/tuneinsight/lattigo/v5/utils/sampling"
)

// PartyID names a participant of the federation; for key committee members it
// is also the Shamir evaluation point, so it is never 0 (the point whose
// share is the secret itself).
type PartyID uint32

// Config is the public description of a federation's threshold key: every
// participant and the server build the same one.
type Config struct {
	// Federation is the public federation id; it seeds the common random
	// polynomials, so two federations never share them.
	Federation string
	// Parties is the key committee (the n of t-of-n): distinct ids >= 1.
	// Other participants can still seal and be opened for (they hold an
	// own key only).
	Parties []PartyID
	// Threshold is t: any t live committee members open a chunk for an
	// entitled participant; t-1 of them together with the server cannot.
	Threshold int
	// Flood is the standard deviation of the flooding noise each switching
	// share adds; 0 means DefaultFlood. See NoiseStd for the budget it uses.
	Flood float64
}

// DefaultFlood is the flooding noise of a switching share when Config.Flood
// is 0: as large as the fixed parameters' 13-bit noise budget allows while a
// sum of a few sealed chunks still opens (docs/encryption.md). It hides the
// share's own noise from the server, not the collective secret's imprint on
// the noise from the opener: statistical flooding needs a larger modulus.
const DefaultFlood = 64

// MaxParties bounds the committee: a member receives n-1 shares of 32 kB
// each and every switching share names the t active ids.
const MaxParties = 1024

// Validate reports the first problem of the configuration.
func (c Config) Validate() error {
	if c.Federation == "" || len(c.Federation) > 255 {
		return fmt.Errorf("threshold: federation id of %d bytes, want 1 to 255", len(c.Federation))
	}
	n := len(c.Parties)
	if n == 0 || n > MaxParties {
		return fmt.Errorf("threshold: %d committee parties, want 1 to %d", n, MaxParties)
	}
	if c.Threshold < 1 || c.Threshold > n {
		return fmt.Errorf("threshold: threshold %d with %d parties, want 1 <= t <= n", c.Threshold, n)
	}
	seen := make(map[PartyID]bool, n)
	for _, id := range c.Parties {
		if id == 0 {
			return errors.New("threshold: party id 0 (the Shamir point of the secret itself)")
		}
		if seen[id] {
			return fmt.Errorf("threshold: party id %d listed twice", id)
		}
		seen[id] = true
	}
	if c.Flood < 0 || c.Flood > 1<<20 {
		return fmt.Errorf("threshold: flooding noise %g, want 0 to 2^20", c.Flood)
	}
	return nil
}

// Federation is the public context of a threshold key: the scheme, the
// configuration and the common random polynomials derived from the
// federation id. It holds no secret; the server's operations are its
// methods, and every message decoder is one too (to check ids against the
// committee). It is safe for concurrent use.
type Federation struct {
	s      *seal.BGV
	params bgv.Parameters
	cfg    Config
	flood  float64
	tag    [tagLen]byte
	member map[PartyID]bool
	ids    []PartyID // sorted committee
	ckg    mhe.PublicKeyGenProtocol
	ckgCRP mhe.PublicKeyGenCRP // p1 of the collective public key
	ownCRP mhe.PublicKeyGenCRP // p1 of every participant's own public key
	polyB  int                 // bytes of one polynomial on the wire
}

const tagLen = 8

// New returns the public context of cfg over scheme s (seal's BGV scheme:
// threshold chunks are its chunks).
func New(s *seal.BGV, cfg Config) (*Federation, error) {
	if s == nil {
		return nil, errors.New("threshold: no BGV scheme")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Parties = slices.Clone(cfg.Parties)
	f := &Federation{s: s, params: s.Params(), cfg: cfg, flood: cfg.Flood, member: map[PartyID]bool{}}
	if f.flood == 0 {
		f.flood = DefaultFlood
	}
	for _, id := range cfg.Parties {
		f.member[id] = true
	}
	f.ids = slices.Clone(cfg.Parties)
	slices.Sort(f.ids)
	f.tag = federationTag(f.params, cfg, f.ids)
	f.ckg = mhe.NewPublicKeyGenProtocol(f.params)
	var err error
	if f.ckgCRP, err = f.crp("collective public key"); err != nil {
		return nil, err
	}
	if f.ownCRP, err = f.crp("own public keys"); err != nil {
		return nil, err
	}
	f.polyB = (f.params.MaxLevel() + 1) * f.params.N() * 8
	return f, nil
}

// federationTag binds every message to this federation, committee,
// threshold and parameter set, so a message of another one is refused.
func federationTag(p bgv.Parameters, cfg Config, ids []PartyID) (tag [tagLen]byte) {
	h := sha256.New()
	h.Write([]byte("hyfed threshold federation v1\x00"))
	h.Write([]byte{byte(len(cfg.Federation))})
	h.Write([]byte(cfg.Federation))
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(cfg.Threshold))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(p.LogN()))
	for _, q := range p.Q() {
		b = binary.LittleEndian.AppendUint64(b, q)
	}
	b = binary.LittleEndian.AppendUint64(b, p.PlaintextModulus())
	h.Write(b)
	copy(tag[:], h.Sum(nil))
	return tag
}

// crp draws a common random polynomial from the common reference string of
// the federation: a keyed BLAKE2 stream every party reproduces from public
// data alone.
func (f *Federation) crp(purpose string) (mhe.PublicKeyGenCRP, error) {
	key := sha256.Sum256([]byte("hyfed threshold crs v1\x00" + purpose + "\x00" + f.cfg.Federation))
	crs, err := sampling.NewKeyedPRNG(key[:])
	if err != nil {
		return mhe.PublicKeyGenCRP{}, fmt.Errorf("threshold: common reference string: %w", err)
	}
	return f.ckg.SampleCRP(crs), nil
}

// Config returns the configuration.
func (f *Federation) Config() Config {
	c := f.cfg
	c.Parties = slices.Clone(c.Parties)
	return c
}

// Scheme returns the BGV scheme whose chunks the threshold keys seal.
func (f *Federation) Scheme() *seal.BGV { return f.s }

// Threshold returns t.
func (f *Federation) Threshold() int { return f.cfg.Threshold }

// IsMember reports whether id is on the key committee.
func (f *Federation) IsMember(id PartyID) bool { return f.member[id] }

// Members returns the committee ids in ascending order.
func (f *Federation) Members() []PartyID { return slices.Clone(f.ids) }

// publicKey returns the Lattigo public key (p0, p1) of a wire polynomial p0.
func (f *Federation) publicKey(p0 ring.Poly, crp mhe.PublicKeyGenCRP) *rlwe.PublicKey {
	pk := rlwe.NewPublicKey(f.params)
	f.ckg.GenPublicKey(mhe.PublicKeyGenShare{Value: ringqp.Poly{Q: p0}}, crp, pk)
	return pk
}

// checkActive checks an active set: exactly t committee ids, ascending. The
// combiner uses the first t points of the list it is given, so a longer list
// would silently give a share for another set.
func (f *Federation) checkActive(active []PartyID) error {
	if len(active) != f.cfg.Threshold {
		return fmt.Errorf("threshold: active set of %d parties, want exactly t = %d", len(active), f.cfg.Threshold)
	}
	for i, id := range active {
		if !f.member[id] {
			return fmt.Errorf("threshold: active party %d is not on the committee", id)
		}
		if i > 0 && active[i-1] >= id {
			return fmt.Errorf("threshold: active set %v is not strictly ascending", active)
		}
	}
	return nil
}

func shamirPoints(ids []PartyID) []mhe.ShamirPublicPoint {
	out := make([]mhe.ShamirPublicPoint, len(ids))
	for i, id := range ids {
		out[i] = mhe.ShamirPublicPoint(id)
	}
	return out
}
