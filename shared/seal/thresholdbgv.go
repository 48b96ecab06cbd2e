package seal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
	"github.com/tuneinsight/lattigo/v5/utils/sampling"
)

// The threshold BGV parameter set (docs/encryption.md, "Threshold keys"):
// the ring degree, plaintext modulus and fixed-point encoding of the BGV set
// above, so a sum opens to the very integers (and float64 values) the
// shared-key scheme and the plaintext scheme give, over a ciphertext modulus
// of two primes, Q = q1*q2 < 2^109: the most the homomorphic-encryption
// standard's table allows at ring degree 2^12 for 128-bit security with a
// ternary secret (MaxLogQ128; TestThresholdBGVSecurity checks the set
// against it, since Lattigo does not). The decryption margin Q/(2t) is
// about 2^62 instead of 2^13: room for the public-key noise of a collective
// key, flooding noise in key switching and sums of any realistic length.
const (
	thrQ1 = 36028797018652673 // 55 bits, 1 mod 2^13
	thrQ2 = 18014398509309953 // 54 bits, 1 mod 2^13
	// thrID identifies the parameter set on the wire (bgvID is 2).
	thrID = 3
)

// MaxLogQ128 is the homomorphic-encryption standard's bound on log2 of the
// ciphertext modulus (Q times P) for 128-bit classical security with a
// ternary secret and error of standard deviation 3.2, by log2 of the ring
// degree (Albrecht et al., "Homomorphic Encryption Standard", 2018, table
// of uniform ternary secrets).
var MaxLogQ128 = map[int]int{10: 27, 11: 54, 12: 109, 13: 218, 14: 438, 15: 881}

// ThresholdBGV is the scheme of chunks sealed under a threshold (collective)
// public key, shared/seal/threshold: BGV on two primes. The server adds its
// chunks as it adds BGV chunks; its chunk type (*ThresholdCipher) and wire
// id (3) differ from BGV's (*Cipher, 2), so a chunk of one set is never
// taken for the other. It has no shared key: chunks are sealed under a
// public key and opened, after key switching, with a participant's own
// secret key (Open).
type ThresholdBGV struct {
	params bgv.Parameters
	tInv   [2]uint64 // t^-1 mod q_i, Montgomery form
	q1Inv  uint64    // q1^-1 mod q2
	q1InvS uint64    // its Shoup constant
	tBred  [2]uint64 // t mod q_i, Montgomery form
}

// NewThresholdBGV returns the scheme with its fixed parameters.
func NewThresholdBGV() (*ThresholdBGV, error) {
	p, err := bgv.NewParametersFromLiteral(bgv.ParametersLiteral{
		LogN:             bgvLogN,
		Q:                []uint64{thrQ1, thrQ2},
		PlaintextModulus: bgvT,
	})
	if err != nil {
		return nil, fmt.Errorf("bgv-threshold: parameters: %w", err)
	}
	s := &ThresholdBGV{params: p}
	for i, sr := range p.RingQ().SubRings {
		s.tInv[i] = ring.MForm(ring.ModExp(bgvT, sr.Modulus-2, sr.Modulus), sr.Modulus, sr.BRedConstant)
		s.tBred[i] = ring.MForm(bgvT, sr.Modulus, sr.BRedConstant)
	}
	s.q1Inv = ring.ModExp(thrQ1%thrQ2, thrQ2-2, thrQ2)
	s.q1InvS, _ = bits.Div64(s.q1Inv, 0, thrQ2)
	return s, nil
}

// ThresholdScheme returns the one ThresholdBGV of the process (its
// parameters are immutable; building them costs a few hundred kB).
func ThresholdScheme() (*ThresholdBGV, error) { return sharedThreshold() }

var sharedThreshold = sync.OnceValues(NewThresholdBGV)

// Params returns the Lattigo parameters.
func (s *ThresholdBGV) Params() bgv.Parameters { return s.params }

// Name implements Scheme.
func (s *ThresholdBGV) Name() string { return "bgv-threshold" }

// ChunkLen implements Scheme: one value per ring coefficient.
func (s *ThresholdBGV) ChunkLen() int { return s.params.N() }

// ThresholdCipher is a chunk of the threshold parameter set: a ciphertext at
// its top level (both primes) in the NTT domain.
type ThresholdCipher struct {
	ct *rlwe.Ciphertext
}

func (s *ThresholdBGV) cipher(c Chunk) (*ThresholdCipher, error) {
	ct, ok := c.(*ThresholdCipher)
	if !ok || ct == nil || ct.ct == nil {
		return nil, fmt.Errorf("bgv-threshold: chunk of type %T", c)
	}
	if ct.ct.Degree() != 1 || ct.ct.Level() != s.params.MaxLevel() || ct.ct.Value[0].N() != s.params.N() || !ct.ct.IsNTT {
		return nil, fmt.Errorf("bgv-threshold: ciphertext of degree %d, level %d, ring degree %d does not match the parameters",
			ct.ct.Degree(), ct.ct.Level(), ct.ct.Value[0].N())
	}
	return ct, nil
}

// Add implements Scheme; safe for concurrent use on distinct chunks.
func (s *ThresholdBGV) Add(dst, src Chunk) error {
	d, err := s.cipher(dst)
	if err != nil {
		return err
	}
	a, err := s.cipher(src)
	if err != nil {
		return err
	}
	rq := s.params.RingQ()
	rq.Add(d.ct.Value[0], a.ct.Value[0], d.ct.Value[0])
	rq.Add(d.ct.Value[1], a.ct.Value[1], d.ct.Value[1])
	return nil
}

// Clone implements Scheme.
func (s *ThresholdBGV) Clone(c Chunk) Chunk {
	return &ThresholdCipher{ct: c.(*ThresholdCipher).ct.CopyNew()}
}

// WireSize implements Scheme: every chunk travels whole (c1 of a public-key
// encryption is not a seed's expansion), 32 bytes a value.
func (s *ThresholdBGV) WireSize(c Chunk) int {
	if ct, ok := c.(*ThresholdCipher); !ok || ct == nil {
		return 0
	}
	return s.wireLen()
}

func (s *ThresholdBGV) wireLen() int {
	return chunkHeader + 2*(s.params.MaxLevel()+1)*s.params.N()*8
}

// Marshal implements Scheme. The layout is BGV's (bgv.go) with parameter-set
// id 3, level 1 and no flags:
//
//	"hc" version=1 param-id=3 log2(N)=12 level=1 elements=2 flags=0
//	c0 (mod q1, then mod q2) c1 (likewise)
//
// with every coefficient a little-endian uint64 below its prime.
func (s *ThresholdBGV) Marshal(c Chunk) ([]byte, error) {
	return s.AppendChunk(make([]byte, 0, s.wireLen()), c)
}

// AppendChunk implements Scheme.
func (s *ThresholdBGV) AppendChunk(out []byte, c Chunk) ([]byte, error) {
	ct, err := s.cipher(c)
	if err != nil {
		return nil, err
	}
	out = append(out, 'h', 'c', 1, thrID, bgvLogN, byte(ct.ct.Level()), 2, 0)
	return appendPolys(out, ct.ct.Value), nil
}

// Unmarshal implements Scheme: it checks every header field and every
// coefficient, and never panics on malformed input.
func (s *ThresholdBGV) Unmarshal(b []byte) (Chunk, error) {
	if err := checkHeader(b, "bgv-threshold", 1, thrID, s.params.MaxLevel(), 0); err != nil {
		return nil, err
	}
	if want := s.wireLen(); len(b) != want {
		return nil, fmt.Errorf("bgv-threshold: chunk of %d bytes, want %d", len(b), want)
	}
	b = b[chunkHeader:]
	ct := bgv.NewCiphertext(s.params, 1, s.params.MaxLevel())
	ct.IsBatched = false
	qs := s.params.Q()
	for _, p := range ct.Value {
		for i, row := range p.Coeffs {
			for j := range row {
				v := binary.LittleEndian.Uint64(b)
				if v >= qs[i] {
					return nil, fmt.Errorf("bgv-threshold: coefficient %d of modulus %d is %d, not below the modulus", j, i, v)
				}
				row[j] = v
				b = b[8:]
			}
		}
	}
	return &ThresholdCipher{ct: ct}, nil
}

// EncodeScaled writes m * t^-1 mod Q, the plaintext part of a ciphertext's
// phase, for the fixed-point integers m of vals into out (coefficient
// domain, both primes): BGV's encoding, as BGVKey.Seal forms it on one
// prime. vals must hold 1 to ChunkLen values on the fixed-point grid within
// ±MaxAbs; the coefficients after them are zero (a threshold chunk always
// travels whole).
func (s *ThresholdBGV) EncodeScaled(vals []float64, out ring.Poly) error {
	if len(vals) < 1 || len(vals) > s.ChunkLen() {
		return fmt.Errorf("bgv-threshold: encode %d values, want 1 to %d", len(vals), s.ChunkLen())
	}
	if out.N() != s.params.N() || out.Level() != s.params.MaxLevel() {
		return fmt.Errorf("bgv-threshold: encode into a polynomial of degree %d, level %d", out.N(), out.Level())
	}
	r0, r1 := out.Coeffs[0], out.Coeffs[1]
	for i, v := range vals {
		x, err := toFixed(v)
		if err != nil {
			return fmt.Errorf("bgv-threshold: slot %d: %w", i, err)
		}
		r0[i], r1[i] = residueQ(x, thrQ1), residueQ(x, thrQ2)
	}
	clear(r0[len(vals):])
	clear(r1[len(vals):])
	for i, sr := range s.params.RingQ().SubRings {
		sr.MulScalarMontgomery(out.Coeffs[i], s.tInv[i], out.Coeffs[i])
	}
	return nil
}

// residueQ returns x mod q for |x| < q.
func residueQ(x int64, q uint64) uint64 {
	if x < 0 {
		return q - uint64(-x)
	}
	return uint64(x)
}

// WrapCiphertext returns ct, a ciphertext of the parameters at the top
// level in the NTT domain, as a chunk of this scheme; the chunk shares ct's
// memory.
func (s *ThresholdBGV) WrapCiphertext(ct *rlwe.Ciphertext) (Chunk, error) {
	if ct == nil || len(ct.Value) == 0 || ct.MetaData == nil || !ct.IsNTT {
		return nil, errors.New("bgv-threshold: wrap: not a ciphertext in the NTT domain")
	}
	c := &ThresholdCipher{ct: ct}
	if _, err := s.cipher(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Ciphertext returns the Lattigo ciphertext of a chunk, shared with it.
func (s *ThresholdBGV) Ciphertext(c Chunk) (*rlwe.Ciphertext, error) {
	ct, err := s.cipher(c)
	if err != nil {
		return nil, err
	}
	return ct.ct, nil
}

// NewSecretKey derives a ternary secret key (NTT and Montgomery domains,
// as Lattigo keeps them) deterministically from a 32-byte seed.
func (s *ThresholdBGV) NewSecretKey(seed [32]byte) (*rlwe.SecretKey, error) {
	prng, err := sampling.NewKeyedPRNG(seed[:])
	if err != nil {
		return nil, fmt.Errorf("bgv-threshold: key seed: %w", err)
	}
	sampler, err := ring.NewSampler(prng, s.params.RingQ(), s.params.Xs(), false)
	if err != nil {
		return nil, fmt.Errorf("bgv-threshold: key sampler: %w", err)
	}
	sk := rlwe.NewSecretKey(s.params)
	sampler.AtLevel(sk.LevelQ()).Read(sk.Value.Q)
	rqp := s.params.RingQP().AtLevel(sk.LevelQ(), sk.LevelP())
	rqp.NTT(sk.Value, sk.Value)
	rqp.MForm(sk.Value, sk.Value)
	return sk, nil
}

// Open decrypts a chunk with a secret key: the phase c0 + c1*s = m/t + e
// mod Q, times t, is m + t*e, exact while |e| < Q/(2t) - 1/2 (about 2^62);
// its centered residue mod t is m. The residue is reconstructed from the
// two primes (CRT) in 128-bit arithmetic and decoded as BGVKey.Open decodes
// one prime's, so both schemes give the same float64 bits for the same sum.
func (s *ThresholdBGV) Open(sk *rlwe.SecretKey, c Chunk) ([]float64, error) {
	ct, err := s.cipher(c)
	if err != nil {
		return nil, err
	}
	if sk == nil || sk.Value.Q.N() != s.params.N() || sk.Value.Q.Level() < s.params.MaxLevel() {
		return nil, errors.New("bgv-threshold: open: not a secret key of the parameters")
	}
	rq := s.params.RingQ()
	ph := rq.NewPoly()
	rq.MulCoeffsMontgomery(ct.ct.Value[1], sk.Value.Q, ph)
	rq.Add(ph, ct.ct.Value[0], ph)
	rq.INTT(ph, ph)
	for i, sr := range rq.SubRings {
		sr.MulScalarMontgomery(ph.Coeffs[i], s.tBred[i], ph.Coeffs[i])
	}
	out := make([]float64, s.ChunkLen())
	for i := range out {
		out[i] = float64(s.centeredModT(ph.Coeffs[0][i], ph.Coeffs[1][i])) / fixedOne
	}
	return out, nil
}

// Q = q1*q2 as (hi, lo), and (Q-1)/2, the largest non-negative centered
// residue.
var (
	thrQHi, thrQLo       = bits.Mul64(thrQ1, thrQ2)
	thrHalfHi, thrHalfLo = thrQHi >> 1, thrQLo>>1 | thrQHi<<63
)

// centeredModT returns x mod t, centered in (-t/2, t/2), for the integer x
// in (-Q/2, Q/2] whose residues are a1 mod q1 and a2 mod q2.
func (s *ThresholdBGV) centeredModT(a1, a2 uint64) int64 {
	// x = a1 + q1 * ((a2 - a1) * q1^-1 mod q2), in [0, Q).
	d := a2 + thrQ2 - a1%thrQ2
	if d >= thrQ2 {
		d -= thrQ2
	}
	hi, _ := bits.Mul64(d, s.q1InvS)
	k := d*s.q1Inv - hi*thrQ2
	if k >= thrQ2 {
		k -= thrQ2
	}
	hi, lo := bits.Mul64(thrQ1, k)
	var carry uint64
	lo, carry = bits.Add64(lo, a1, 0)
	hi += carry
	// Centered: x > Q/2 stands for x - Q.
	neg := hi > thrHalfHi || (hi == thrHalfHi && lo > thrHalfLo)
	if neg {
		var borrow uint64
		lo, borrow = bits.Sub64(thrQLo, lo, 0)
		hi = thrQHi - hi - borrow
	}
	r := int64(bits.Rem64(hi, lo, bgvT))
	if neg {
		r = -r
	}
	switch {
	case r > bgvT/2:
		r -= bgvT
	case r < -bgvT/2:
		r += bgvT
	}
	return r
}
