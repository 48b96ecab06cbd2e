package threshold

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/mhe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/ring/ringqp"
	"github.com/tuneinsight/lattigo/v5/utils/sampling"
	"github.com/tuneinsight/lattigo/v5/utils/structs"
)

// Party is one participant's secret side: its own key pair (every
// participant has one; a sum is switched to it) and, for a member of the key
// committee, its share of the collective secret, its X25519 key and, after
// setup, its Shamir share. It is not safe for concurrent use.
//
// Every secret of a party derives from one 32-byte seed drawn from
// crypto/rand (HKDF-SHA256 under distinct labels, then Lattigo's keyed
// samplers): a tab that reloads in the middle of setup produces the same
// setup share and deals the same Shamir shares again, and its stored state
// is the seed plus the Shamir share. The party also keeps the key of the
// setup messages' HMAC tags, derived from the federation link secret.
type Party struct {
	f    *Federation
	id   PartyID
	seed [32]byte
	mac  []byte // HMAC-SHA256 key of setup shares and own public keys

	own   *rlwe.SecretKey // own key: opens what is switched to this party
	ownPK *OwnPublicKey

	// Key committee members only.
	sk    *rlwe.SecretKey      // s_i, this party's part of the collective secret
	x     *ecdh.PrivateKey     // decrypts the Shamir shares dealt to it
	shpol mhe.ShamirPolynomial // s_i + a_1 X + ... + a_{t-1} X^{t-1}
	thr   mhe.Thresholdizer
	tsk   *mhe.ShamirSecretShare // sum over dealers j of f_j(id); nil until Receive
	cmb   mhe.Combiner

	cpk *CollectivePublicKey // nil until Receive (or SetCollectiveKey)
}

// NewParty creates participant id's secrets from crypto/rand; linkSecret is
// the federation link secret (the server never sees it), from which the
// party derives the key that authenticates setup shares and own public keys.
// A committee member (f.IsMember(id)) goes through setup (Setup, Deal,
// Receive); any other participant only publishes its own public key and
// seals once it has the collective key (AcceptSetups, or SetCollectiveKey).
func NewParty(f *Federation, id PartyID, linkSecret []byte) (*Party, error) {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("threshold: party seed: %w", err)
	}
	return newParty(f, id, seed, linkSecret)
}

func newParty(f *Federation, id PartyID, seed [32]byte, linkSecret []byte) (*Party, error) {
	if id == 0 {
		return nil, errors.New("threshold: party id 0")
	}
	p := &Party{f: f, id: id, seed: seed}
	var err error
	if p.mac, err = f.linkKey(linkSecret, setupMACPurpose); err != nil {
		return nil, err
	}
	if p.own, err = f.s.NewSecretKey(p.derive("own secret key")); err != nil {
		return nil, fmt.Errorf("threshold: own key: %w", err)
	}
	p0, err := f.rlweShare(p.own, f.ownCRP, p.derive("own public key noise"))
	if err != nil {
		return nil, err
	}
	p.ownPK = &OwnPublicKey{f: f, ID: id, P0: p0}
	p.ownPK.Auth = f.ownMAC(p.mac, id, p0)
	if !f.IsMember(id) {
		return p, nil
	}
	if p.sk, err = f.s.NewSecretKey(p.derive("collective secret share")); err != nil {
		return nil, fmt.Errorf("threshold: secret share: %w", err)
	}
	xs := p.derive("x25519")
	if p.x, err = ecdh.X25519().NewPrivateKey(xs[:]); err != nil {
		return nil, fmt.Errorf("threshold: X25519 key: %w", err)
	}
	if p.shpol, err = f.shamirPolynomial(p.sk, p.derive("shamir polynomial")); err != nil {
		return nil, err
	}
	p.thr = mhe.NewThresholdizer(f.params)
	p.cmb = mhe.NewCombiner(*f.params.GetRLWEParameters(), mhe.ShamirPublicPoint(id), shamirPoints(f.ids), f.cfg.Threshold)
	return p, nil
}

// derive returns the 32-byte seed of one of the party's secrets.
func (p *Party) derive(label string) [32]byte {
	k, err := hkdf.Key(sha256.New, p.seed[:], nil, "hyfed threshold party v1: "+label, 32)
	if err != nil { // only for lengths beyond 255 hashes
		panic(err)
	}
	return [32]byte(k)
}

// rlweShare returns crp*s + e (Lattigo's collective key generation share,
// NTT and Montgomery domains) with e drawn from a keyed stream, so that it is
// reproducible from the party's seed.
func (f *Federation) rlweShare(sk *rlwe.SecretKey, crp mhe.PublicKeyGenCRP, noiseSeed [32]byte) (ring.Poly, error) {
	prng, err := sampling.NewKeyedPRNG(noiseSeed[:])
	if err != nil {
		return ring.Poly{}, fmt.Errorf("threshold: noise stream: %w", err)
	}
	rq := f.params.RingQ()
	smp, err := ring.NewSampler(prng, rq, f.params.Xe(), false)
	if err != nil {
		return ring.Poly{}, fmt.Errorf("threshold: noise sampler: %w", err)
	}
	out := rq.NewPoly()
	smp.Read(out)
	rq.NTT(out, out)
	rq.MForm(out, out)
	// As mhe.PublicKeyGenProtocol.GenShare: e - s*crp.
	rq.MulCoeffsMontgomeryThenSub(sk.Value.Q, crp.Value.Q, out)
	return out, nil
}

// shamirPolynomial is mhe.Thresholdizer.GenShamirPolynomial with its random
// coefficients from a keyed stream (the Thresholdizer draws them from
// crypto/rand), so a reloaded party deals the same shares again.
func (f *Federation) shamirPolynomial(sk *rlwe.SecretKey, seed [32]byte) (mhe.ShamirPolynomial, error) {
	prng, err := sampling.NewKeyedPRNG(seed[:])
	if err != nil {
		return mhe.ShamirPolynomial{}, fmt.Errorf("threshold: Shamir stream: %w", err)
	}
	rqp := *f.params.RingQP()
	us := ringqp.NewUniformSampler(prng, rqp)
	gen := make([]ringqp.Poly, f.cfg.Threshold)
	gen[0] = *sk.Value.CopyNew()
	for i := 1; i < len(gen); i++ {
		gen[i] = rqp.NewPoly()
		us.Read(gen[i])
	}
	return mhe.ShamirPolynomial{Value: structs.Vector[ringqp.Poly](gen)}, nil
}

// ID returns the party's id.
func (p *Party) ID() PartyID { return p.id }

// PublicKey returns the party's own public key: publish it so that sums can
// be switched to this party.
func (p *Party) PublicKey() *OwnPublicKey { return p.ownPK }

// Setup returns the party's setup share for the server: its collective
// public key share, its X25519 public key (for the Shamir shares dealt to
// it) and its own public key, each with an HMAC tag under the link secret's
// key. The same party returns the same share every time, also after a
// restore.
func (p *Party) Setup() (*SetupShare, error) {
	if p.sk == nil {
		return nil, fmt.Errorf("threshold: party %d is not on the key committee", p.id)
	}
	ckg, err := p.f.rlweShare(p.sk, p.f.ckgCRP, p.derive("collective public key noise"))
	if err != nil {
		return nil, err
	}
	s := &SetupShare{f: p.f, From: p.id, X25519: [32]byte(p.x.PublicKey().Bytes()), CKG: ckg, Own: p.ownPK.P0}
	for i := range s.Auth {
		s.Auth[i] = p.f.setupMAC(p.mac, s, i)
	}
	return s, nil
}

// setups indexes the setup shares of the whole committee and checks every
// tag of every share: a share the server (or anyone without the link
// secret) changed is refused with an error naming the member and the
// field. It also checks that this member's own share came back unchanged.
func (p *Party) setups(setups []*SetupShare) (map[PartyID]*SetupShare, error) {
	byID, err := p.f.indexSetups(setups)
	if err != nil {
		return nil, err
	}
	for _, id := range p.f.ids {
		if err := p.f.checkSetup(p.mac, byID[id]); err != nil {
			return nil, err
		}
	}
	if p.sk != nil {
		if err := p.checkOwnSetup(byID[p.id]); err != nil {
			return nil, err
		}
	}
	return byID, nil
}

// Deal returns the party's Shamir shares of its secret share, one for every
// other committee member, each encrypted for its recipient under the X25519
// key of the recipient's setup share. setups must hold the setup share of
// every committee member (the server forwards them all).
func (p *Party) Deal(setups []*SetupShare) ([]*EncryptedShare, error) {
	if p.sk == nil {
		return nil, fmt.Errorf("threshold: party %d is not on the key committee", p.id)
	}
	byID, err := p.setups(setups)
	if err != nil {
		return nil, err
	}
	share := p.thr.AllocateThresholdSecretShare()
	out := make([]*EncryptedShare, 0, len(p.f.ids)-1)
	for _, to := range p.f.ids {
		if to == p.id {
			continue
		}
		p.thr.GenShamirSecretShare(mhe.ShamirPublicPoint(to), p.shpol, &share)
		es, err := p.encryptShare(to, byID[to].X25519, share.Q)
		if err != nil {
			return nil, err
		}
		out = append(out, es)
	}
	return out, nil
}

// checkOwnSetup refuses a set of setup shares in which the server replaced
// this party's own.
func (p *Party) checkOwnSetup(got *SetupShare) error {
	want, err := p.Setup()
	if err != nil {
		return err
	}
	if got.X25519 != want.X25519 || !equalPoly(got.CKG, want.CKG) || !equalPoly(got.Own, want.Own) || got.Auth != want.Auth {
		return fmt.Errorf("threshold: the setup share under party %d's id is not the one it sent", p.id)
	}
	return nil
}

// shareKey derives the AES-256 key of the Shamir share dealer -> recipient
// from their X25519 shared secret.
func (f *Federation) shareKey(shared []byte, from, to PartyID) ([]byte, error) {
	k, err := hkdf.Key(sha256.New, shared, f.tag[:], fmt.Sprintf("hyfed threshold shamir share v1: %d -> %d", from, to), 32)
	if err != nil {
		return nil, fmt.Errorf("threshold: share key: %w", err)
	}
	return k, nil
}

func (p *Party) encryptShare(to PartyID, peer [32]byte, share ring.Poly) (*EncryptedShare, error) {
	aead, err := p.shareAEAD(to, peer, p.id, to)
	if err != nil {
		return nil, err
	}
	es := &EncryptedShare{f: p.f, From: p.id, To: to}
	if _, err := rand.Read(es.Nonce[:]); err != nil {
		return nil, fmt.Errorf("threshold: nonce: %w", err)
	}
	plain := p.f.appendPoly(make([]byte, 0, p.f.polyB), share)
	es.Box = aead.Seal(nil, es.Nonce[:], plain, es.header())
	clear(plain)
	return es, nil
}

// shareAEAD returns AES-GCM under the key this party shares with peer for
// the direction from -> to.
func (p *Party) shareAEAD(peerID PartyID, peer [32]byte, from, to PartyID) (cipher.AEAD, error) {
	pub, err := ecdh.X25519().NewPublicKey(peer[:])
	if err != nil {
		return nil, fmt.Errorf("threshold: X25519 key of party %d: %w", peerID, err)
	}
	shared, err := p.x.ECDH(pub)
	if err != nil {
		return nil, fmt.Errorf("threshold: X25519 with party %d: %w", peerID, err)
	}
	key, err := p.f.shareKey(shared, from, to)
	clear(shared)
	if err != nil {
		return nil, err
	}
	return newGCM(key)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("threshold: AES: %w", err)
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		return nil, fmt.Errorf("threshold: GCM: %w", err)
	}
	return a, nil
}

// Receive completes the party's setup: it decrypts the Shamir shares the
// other members dealt to it (exactly one from each), adds them and its own
// into its threshold share, and adds the setup shares into the collective
// public key. It checks the tags of every setup share and that its own is
// among them unchanged.
func (p *Party) Receive(setups []*SetupShare, shares []*EncryptedShare) error {
	if p.sk == nil {
		return fmt.Errorf("threshold: party %d is not on the key committee", p.id)
	}
	byID, err := p.setups(setups)
	if err != nil {
		return err
	}
	tsk := p.thr.AllocateThresholdSecretShare()
	p.thr.GenShamirSecretShare(mhe.ShamirPublicPoint(p.id), p.shpol, &tsk)
	got := map[PartyID]bool{}
	buf := p.f.params.RingQ().NewPoly()
	for _, es := range shares {
		switch {
		case es == nil:
			return errors.New("threshold: nil Shamir share")
		case es.To != p.id:
			return fmt.Errorf("threshold: Shamir share for party %d delivered to party %d", es.To, p.id)
		case !p.f.member[es.From] || es.From == p.id:
			return fmt.Errorf("threshold: Shamir share from party %d, not another committee member", es.From)
		case got[es.From]:
			return fmt.Errorf("threshold: two Shamir shares from party %d", es.From)
		}
		got[es.From] = true
		aead, err := p.shareAEAD(es.From, byID[es.From].X25519, es.From, p.id)
		if err != nil {
			return err
		}
		plain, err := aead.Open(nil, es.Nonce[:], es.Box, es.header())
		if err != nil {
			return fmt.Errorf("threshold: Shamir share from party %d does not decrypt (tampered, or another X25519 key): %w", es.From, err)
		}
		err = p.f.readPoly(plain, buf)
		clear(plain)
		if err != nil {
			return fmt.Errorf("threshold: Shamir share from party %d: %w", es.From, err)
		}
		p.f.params.RingQ().Add(tsk.Q, buf, tsk.Q)
	}
	if len(got) != len(p.f.ids)-1 {
		return fmt.Errorf("threshold: %d Shamir shares, want one from each of the %d other members", len(got), len(p.f.ids)-1)
	}
	cpk, err := p.f.AggregatePublicKey(setups)
	if err != nil {
		return err
	}
	p.tsk, p.cpk = &tsk, cpk
	return nil
}

// Ready reports whether the party can seal (it has the collective key) and,
// for a committee member, take part in opening (it has its Shamir share).
func (p *Party) Ready() bool { return p.cpk != nil && (p.sk == nil || p.tsk != nil) }

// AcceptSetups gives a participant outside the committee the collective
// public key from the committee's setup shares, whose tags it checks as the
// members do (members compute the key in Receive): the server cannot slip it
// a key of its own. It costs n setup shares of download instead of one key.
func (p *Party) AcceptSetups(setups []*SetupShare) error {
	if _, err := p.setups(setups); err != nil {
		return err
	}
	cpk, err := p.f.AggregatePublicKey(setups)
	if err != nil {
		return err
	}
	p.cpk = cpk
	return nil
}

// SetCollectiveKey gives a participant outside the committee the collective
// public key the server aggregated, trusting the server (AcceptSetups
// checks the shares it is made of).
func (p *Party) SetCollectiveKey(cpk *CollectivePublicKey) error {
	if cpk == nil || cpk.f != p.f {
		return errors.New("threshold: collective key of another federation")
	}
	p.cpk = cpk
	return nil
}

// CollectiveKey returns the collective public key, or nil before setup ends.
func (p *Party) CollectiveKey() *CollectivePublicKey { return p.cpk }

// Sealer returns a sealer under the collective public key.
func (p *Party) Sealer() (*Sealer, error) {
	if p.cpk == nil {
		return nil, errors.New("threshold: no collective public key yet (setup not complete)")
	}
	return p.f.NewSealer(p.cpk)
}

// SwitchShare returns the party's share of switching chunk c, a sum of
// chunks sealed under the collective key, to target's own key, whose tag
// must check under the link secret (a key the server swapped is refused,
// naming the participant and the field). active is the set of t committee
// members (ascending, this party among them) whose shares the server will
// add: every one of them must be given the same set.
func (p *Party) SwitchShare(c seal.Chunk, active []PartyID, target *OwnPublicKey) (*SwitchShare, error) {
	shares, err := p.SwitchShares([]seal.Chunk{c}, active, []*OwnPublicKey{target}, [][2]int{{0, 0}})
	if err != nil {
		return nil, err
	}
	return shares[0], nil
}

// SwitchShares returns, for every job {i, j}, the party's share of
// switching chunks[j] to targets[i]'s own key, as SwitchShare does for one:
// a request of many jobs checks each target's tag, derives the additive
// share of the active set and digests each chunk once (a fifth of a share's
// time each otherwise).
func (p *Party) SwitchShares(chunks []seal.Chunk, active []PartyID, targets []*OwnPublicKey, jobs [][2]int) ([]*SwitchShare, error) {
	if p.tsk == nil {
		return nil, fmt.Errorf("threshold: party %d has no Shamir share (not on the committee, or setup not complete)", p.id)
	}
	if err := p.f.checkActive(active); err != nil {
		return nil, err
	}
	if !slices.Contains(active, p.id) {
		return nil, fmt.Errorf("threshold: party %d is not in the active set %v", p.id, active)
	}
	for _, target := range targets {
		if target == nil || target.f != p.f {
			return nil, errors.New("threshold: target key of another federation")
		}
		if err := p.f.checkOwn(p.mac, target); err != nil {
			return nil, err
		}
	}
	cts := make([]*rlwe.Ciphertext, len(chunks))
	digests := make([][32]byte, len(chunks))
	for j, c := range chunks {
		ct, err := p.f.s.Ciphertext(c)
		if err != nil {
			return nil, fmt.Errorf("threshold: switch: chunk %d: %w", j, err)
		}
		cts[j], digests[j] = ct, p.f.digest(ct)
	}
	// The additive share of s for this active set: the Shamir share times
	// the party's Lagrange coefficient at 0.
	add := rlwe.NewSecretKey(p.f.params)
	defer func() {
		for _, row := range add.Value.Q.Coeffs { // the additive share opens with the others' only
			clear(row)
		}
	}()
	if err := p.cmb.GenAdditiveShare(shamirPoints(active), mhe.ShamirPublicPoint(p.id), *p.tsk, add); err != nil {
		return nil, fmt.Errorf("threshold: combine: %w", err)
	}
	out := make([]*SwitchShare, len(jobs))
	for n, job := range jobs {
		i, j := job[0], job[1]
		if i < 0 || i >= len(targets) || j < 0 || j >= len(chunks) {
			return nil, fmt.Errorf("threshold: switch job %d names target %d of %d and chunk %d of %d", n, i, len(targets), j, len(chunks))
		}
		h, err := p.f.switchShare(add, targets[i], cts[j])
		if err != nil {
			return nil, err
		}
		out[n] = &SwitchShare{f: p.f, From: p.id, Target: targets[i].ID, Active: slices.Clone(active), Digest: digests[j], Value: h}
	}
	return out, nil
}

// switchShare is mhe.PublicKeySwitchProtocol.GenShare written out with the
// samplers of sampling.go: for the additive share s' of this member, the
// target's own public key (p0, p1) and the chunk's c1,
//
//	h0 = s'*c1 + u*p0 + flood,  h1 = u*p1 + e1,
//
// u ternary, e1 centered binomial, flood uniform on [-2^FloodBits,
// 2^FloodBits). The server adds the t shares of an active set to
// (c0, 0): the sum of the s'_i is s, so c0 + s*c1 = m/t + e becomes a
// ciphertext of m under the target's key, its noise e plus every share's
// u*e_P + flood + s_P*e1 (noise.go).
func (f *Federation) switchShare(add *rlwe.SecretKey, target *OwnPublicKey, ct *rlwe.Ciphertext) ([2]ring.Poly, error) {
	rq := f.params.RingQ()
	qs := f.params.Q()
	r, err := stream()
	if err != nil {
		return [2]ring.Poly{}, err
	}
	h := [2]ring.Poly{rq.NewPoly(), rq.NewPoly()}
	sampleFlood(r, f.flood, h[0], qs)
	rq.NTT(h[0], h[0])
	sampleBinomial(r, h[1], qs)
	rq.NTT(h[1], h[1])
	u := rq.NewPoly()
	sampleTernary(r, u, qs)
	rq.NTT(u, u)
	rq.MulCoeffsMontgomeryThenAdd(u, target.P0, h[0])
	rq.MulCoeffsMontgomeryThenAdd(u, f.ownCRP.Value.Q, h[1])
	rq.MulCoeffsMontgomeryThenAdd(ct.Value[1], add.Value.Q, h[0])
	for _, row := range u.Coeffs {
		clear(row)
	}
	return h, nil
}

// Open opens a chunk the server switched to this party's own key.
func (p *Party) Open(sw *Switched) ([]float64, error) {
	if sw == nil || sw.f != p.f {
		return nil, errors.New("threshold: switched chunk of another federation")
	}
	if sw.To != p.id {
		return nil, fmt.Errorf("threshold: chunk switched to party %d, this is party %d", sw.To, p.id)
	}
	vals, err := p.f.s.Open(p.own, sw.Chunk)
	if err != nil {
		return nil, fmt.Errorf("threshold: open: %w", err)
	}
	return vals, nil
}

// digest binds a switching share to the ciphertext it was made for: c1 is
// all that a share depends on.
func (f *Federation) digest(ct *rlwe.Ciphertext) [32]byte {
	return sha256.Sum256(f.appendPoly(nil, ct.Value[1]))
}

// equalPoly compares two polynomials.
func equalPoly(a, b ring.Poly) bool {
	if len(a.Coeffs) != len(b.Coeffs) {
		return false
	}
	for i := range a.Coeffs {
		if !slices.Equal(a.Coeffs[i], b.Coeffs[i]) {
			return false
		}
	}
	return true
}
