// Package threshold gives a hyfed federation t-of-n threshold BGV keys
// (--keys threshold): no single participant, and no coalition of the server
// with fewer than t participants, holds a key that opens another
// participant's chunks, as every participant does under the shared key.
//
// Chunks are seal.ThresholdBGV's: the BGV plaintext modulus and fixed-point
// encoding of the shared-key scheme over a two-prime modulus (Q < 2^109, the
// 128-bit bound at ring degree 2^12), which leaves room for a collective
// public key's noise, for flooding noise in key switching and for sums of
// any realistic length (Federation.MaxSums).
//
// The key committee (Config.Parties, n parties) generates a collective public
// key with Lattigo's multiparty layer (mhe): each member keeps a secret share
// s_i, publishes crp*s_i + e_i for a common random polynomial crp drawn from
// the federation id, and the shares add up to a public key of s = sum s_i.
// Each member then deals t-of-n Shamir shares of its s_i to the others
// (mhe.Thresholdizer), encrypted for each recipient with X25519, HKDF and
// AES-GCM because they travel through the server; every setup share carries
// HMAC-SHA256 tags under a key derived from the federation link secret, which
// the server never sees, so the server cannot substitute a member's X25519
// key, key share or own public key. Anyone with the collective public key
// seals chunks under it (Sealer: public-key encryption written out on
// Lattigo's ring arithmetic); the server adds them with seal.ThresholdBGV.Add.
// To open a sum for a participant P, t live members each send a public-key
// switching share towards P's own public key (Lattigo's
// PublicKeySwitchProtocol share, with their Shamir share turned into an
// additive share of s for that active set by mhe.Combiner, and uniform
// flooding noise of 2^FloodBits); the server adds the shares into a chunk
// under P's own key, which P opens bit for bit.
//
// Participant side: Party. Server side: the methods of Federation, which
// hold public data only. docs/encryption.md, "Threshold keys: the key
// layer", gives the message flow, the security argument and the costs.
package threshold

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/mhe"
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
	// FloodBits sets the flooding noise each switching share adds: uniform
	// on [-2^FloodBits, 2^FloodBits). 0 means DefaultFloodBits(t), the
	// largest the noise budget allows with room to spare; New refuses a value
	// that leaves no budget for even one sum.
	FloodBits int
}

// MaxParties bounds the committee: a member receives n-1 shares of 64 kB
// each and every switching share names the t active ids.
const MaxParties = 1024

// MaxFloodBits bounds Config.FloodBits (the sampler draws FloodBits+1 bits
// of a 64-bit word).
const MaxFloodBits = 62

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
	if c.FloodBits < 0 || c.FloodBits > MaxFloodBits {
		return fmt.Errorf("threshold: flooding noise of 2^%d, want 2^1 to 2^%d (0 for the default)", c.FloodBits, MaxFloodBits)
	}
	return nil
}

// Federation is the public context of a threshold key: the scheme, the
// configuration and the common random polynomials derived from the
// federation id. It holds no secret; the server's operations are its
// methods, and every message decoder is one too (to check ids against the
// committee). It is safe for concurrent use.
type Federation struct {
	s      *seal.ThresholdBGV
	params bgv.Parameters
	cfg    Config
	flood  int // log2 of the flooding bound
	tag    [tagLen]byte
	member map[PartyID]bool
	ids    []PartyID // sorted committee
	ckg    mhe.PublicKeyGenProtocol
	ckgCRP mhe.PublicKeyGenCRP // p1 of the collective public key
	ownCRP mhe.PublicKeyGenCRP // p1 of every participant's own public key
	polyB  int                 // bytes of one polynomial on the wire
}

const tagLen = 8

// New returns the public context of cfg over the threshold BGV scheme
// (seal.ThresholdScheme: threshold chunks are its chunks).
func New(s *seal.ThresholdBGV, cfg Config) (*Federation, error) {
	if s == nil {
		return nil, errors.New("threshold: no threshold BGV scheme")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Parties = slices.Clone(cfg.Parties)
	f := &Federation{s: s, params: s.Params(), cfg: cfg, flood: cfg.FloodBits, member: map[PartyID]bool{}}
	if f.flood == 0 {
		f.flood = f.defaultFloodBits()
	}
	if f.maxSums() < 1 {
		return nil, fmt.Errorf("threshold: flooding noise of 2^%d with t = %d leaves no noise budget for a sum (the default is 2^%d)",
			f.flood, cfg.Threshold, f.defaultFloodBits())
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
	h.Write([]byte("hyfed threshold federation v2\x00"))
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

// MinLinkSecret is the shortest link secret NewParty, Save and Restore
// accept (hyfed's is 32 random bytes).
const MinLinkSecret = 16

// linkKey derives a 32-byte key for one purpose from the federation link
// secret (which the server never sees), salted with the federation tag.
func (f *Federation) linkKey(link []byte, purpose string) ([]byte, error) {
	if len(link) < MinLinkSecret {
		return nil, fmt.Errorf("threshold: link secret of %d bytes, want at least %d", len(link), MinLinkSecret)
	}
	k, err := hkdf.Key(sha256.New, link, f.tag[:], purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("threshold: link key: %w", err)
	}
	return k, nil
}

// setupMACPurpose labels the key of the setup messages' HMAC tags.
const setupMACPurpose = "hyfed threshold setup authentication v1"

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

// Scheme returns the scheme whose chunks the threshold keys seal.
func (f *Federation) Scheme() *seal.ThresholdBGV { return f.s }

// FloodBits returns log2 of the bound of each switching share's flooding
// noise.
func (f *Federation) FloodBits() int { return f.flood }

// Threshold returns t.
func (f *Federation) Threshold() int { return f.cfg.Threshold }

// IsMember reports whether id is on the key committee.
func (f *Federation) IsMember(id PartyID) bool { return f.member[id] }

// Members returns the committee ids in ascending order.
func (f *Federation) Members() []PartyID { return slices.Clone(f.ids) }

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
