package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	mrand "math/rand/v2"
	"slices"

	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
	"github.com/tuneinsight/lattigo/v5/utils/sampling"
)

// The BGV parameter set (docs/encryption.md says why BGV and these sizes):
// ring degree 2^12 and one 60-bit ciphertext prime q (128-bit security allows
// up to 109 bits at this degree; additions need no second prime), plaintext
// modulus t a 46-bit prime. Values are packed as polynomial coefficients (no
// slot NTT is needed for additions) in the fixed point of FracBits: a sum of
// sealed values is exact while |sum| < t/2^(FracBits+1) = 2^17. Decryption
// is correct while the summed noise stays below q/(2t) = 2^13, that is for
// sums of up to about 10^5 fresh ciphertexts per chunk (fresh noise has
// standard deviation 3.24).
const (
	bgvLogN = 12
	bgvQ    = 1152921504606830593 // 60 bits, 1 mod 2^13
	bgvT    = 70368743669761      // 46 bits, 1 mod 2^13
	// bgvID identifies the parameter set on the wire.
	bgvID = 2
)

// BGV is the homomorphic scheme of hyfed: Lattigo v5 BGV with secret-key
// encryption. The server holds only the public parameters; it adds
// ciphertexts coefficient-wise and can neither open nor forge them.
type BGV struct {
	params bgv.Parameters
}

// NewBGV returns the scheme with hyfed's fixed parameters.
func NewBGV() (*BGV, error) {
	p, err := bgv.NewParametersFromLiteral(bgv.ParametersLiteral{
		LogN:             bgvLogN,
		Q:                []uint64{bgvQ},
		PlaintextModulus: bgvT,
	})
	if err != nil {
		return nil, fmt.Errorf("bgv: parameters: %w", err)
	}
	return &BGV{params: p}, nil
}

// Params returns the Lattigo parameters.
func (s *BGV) Params() bgv.Parameters { return s.params }

// Name implements Scheme.
func (s *BGV) Name() string { return "bgv" }

// ChunkLen implements Scheme: one value per ring coefficient.
func (s *BGV) ChunkLen() int { return s.params.N() }

// Cipher is a BGV chunk: a ciphertext (c0, c1) whose phase c0 + c1*s is
// m/t + e, of which only the first Len coefficients of c0 are kept.
//
// c0 is held in the coefficient domain, so that coefficient i carries
// value i alone: a chunk that seals 48 values (a small sample group in a
// 4,096-slot chunk) keeps and sends 48 coefficients of c0, not 4,096.
// Leaving coefficients of c0 out tells nobody anything: the full c0 is
// indistinguishable from uniform under RLWE, so any part of it is too (a
// reduction that drops coordinates). Sums stay exact: coefficient-wise
// addition needs only the kept coefficients, as long as every summand of a
// chunk keeps the same ones (Add refuses others; seal.SealSlots's span fixes
// them from the layout).
//
// A fresh ciphertext remembers the seed its uniform part c1 was drawn
// from, so that it travels as c0 and 32 bytes, and a sum of at most
// MaxSumSeeds fresh ciphertexts keeps their seeds instead of adding their
// c1: it travels as c0 and the seeds, and the server never expands a seed
// (the c1 of a sum is a public function of public seeds, so sending the
// seeds tells nobody more than sending it). c1 is a whole polynomial when
// held: opening one coefficient needs all of c1*s.
type Cipher struct {
	c0 []uint64 // coefficient domain, below q; 1 to N of them
	// c1 in the NTT domain, or no coefficients when it is only its seeds'.
	c1 ring.Poly
	// seeds, when not nil: c1 is the sum of their expansions (expand).
	seeds [][]byte
}

// Len is the number of values (slots from the chunk's first) the chunk
// seals; the chunk's other slots are zero.
func (ct *Cipher) Len() int { return len(ct.c0) }

// MaxSumSeeds is the most seeds a sum keeps before it adds up its c1. An
// opener expands every seed, about a third of the time opening a chunk
// takes (`go test ./shared/seal -bench 'BGVExpand|BGVDecrypt'`), to save
// 32 kB on the wire each: a sum of a group's holders (4 under quadrants, up
// to 16 under grid:K,Q) keeps them; a sum of many, or the dual values'
// running sum, travels whole.
const MaxSumSeeds = 16

// held reports whether c1's coefficients are held (not only as seeds).
func (ct *Cipher) held() bool { return ct.c1.Coeffs != nil }

func (s *BGV) cipher(c Chunk) (*Cipher, error) {
	ct, ok := c.(*Cipher)
	if !ok || ct == nil {
		return nil, fmt.Errorf("bgv: chunk of type %T", c)
	}
	n := s.params.N()
	if len(ct.c0) == 0 || len(ct.c0) > n || (ct.seeds == nil && !ct.held()) ||
		(ct.held() && (ct.c1.N() != n || ct.c1.Level() != 0)) {
		return nil, fmt.Errorf("bgv: chunk of %d values (c1 held %v, %d seeds) does not match the parameters (1 to %d values)",
			len(ct.c0), ct.held(), len(ct.seeds), n)
	}
	return ct, nil
}

// Add implements Scheme. Both chunks must seal the same number of values:
// a coefficient one of them left out is not a sealed zero.
func (s *BGV) Add(dst, src Chunk) error {
	d, err := s.cipher(dst)
	if err != nil {
		return err
	}
	a, err := s.cipher(src)
	if err != nil {
		return err
	}
	if len(d.c0) != len(a.c0) {
		return fmt.Errorf("bgv: add a chunk of %d values to one of %d: summands must seal the same slots", len(a.c0), len(d.c0))
	}
	// Plain loops and ring additions need no evaluator buffers, so this
	// is safe for concurrent use on distinct chunks.
	addMod(d.c0, a.c0)
	if d.seeds != nil && a.seeds != nil && len(d.seeds)+len(a.seeds) <= MaxSumSeeds {
		// The seeds are never changed in place: clip so that appending
		// does not write into an array a clone shares.
		d.seeds = append(d.seeds[:len(d.seeds):len(d.seeds)], a.seeds...)
		// In a canonical order: a sum's bytes then do not depend on the
		// order its terms were added in (replies are summed as they arrive).
		slices.SortFunc(d.seeds, bytes.Compare)
		d.c1 = ring.Poly{}
		return nil
	}
	rq := s.params.RingQ()
	if !d.held() {
		d.c1 = s.c1(d, rq.NewPoly())
	}
	if a.held() {
		rq.Add(d.c1, a.c1, d.c1)
	} else {
		for _, seed := range a.seeds {
			s.expandAdd(seed, d.c1)
		}
	}
	d.seeds = nil
	return nil
}

// addMod sets d = d + a mod q coefficient-wise.
func addMod(d, a []uint64) {
	a = a[:len(d)]
	for i, v := range a {
		if v += d[i]; v >= bgvQ {
			v -= bgvQ
		}
		d[i] = v
	}
}

// Clone implements Scheme.
func (s *BGV) Clone(c Chunk) Chunk {
	ct := c.(*Cipher)
	out := &Cipher{c0: slices.Clone(ct.c0)}
	if ct.held() {
		out.c1 = *ct.c1.CopyNew()
	}
	if ct.seeds != nil {
		out.seeds = ct.seeds[:len(ct.seeds):len(ct.seeds)] // never changed in place
	}
	return out
}

// Trim returns a copy of c that seals only its first n values: what a
// chunk written before chunks kept only their values becomes once the
// layout says how many it holds.
func (s *BGV) Trim(c Chunk, n int) (Chunk, error) {
	ct, err := s.cipher(c)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > len(ct.c0) {
		return nil, fmt.Errorf("bgv: trim a chunk of %d values to %d", len(ct.c0), n)
	}
	out := s.Clone(ct).(*Cipher)
	out.c0 = out.c0[:n:n]
	return out, nil
}

// WireSize implements Scheme.
func (s *BGV) WireSize(c Chunk) int {
	ct, ok := c.(*Cipher)
	if !ok || ct == nil {
		return 0
	}
	return s.wireLen(len(ct.seeds), len(ct.c0))
}

// wireLen is the size of a chunk of n values whose c1 travels as that many
// seeds (0: whole).
func (s *BGV) wireLen(seeds, n int) int {
	c0 := 2 + packedLen(n)
	switch {
	case seeds == 0:
		return chunkHeader + c0 + packedLen(s.params.N())
	case seeds == 1:
		return chunkHeader + seedLen + c0
	}
	return chunkHeader + 1 + seeds*seedLen + c0
}

// packedLen is the bytes of n coefficients below q < 2^60 packed at 60
// bits: 15 bytes a pair, 8 for an odd last one.
func packedLen(n int) int { return 15*(n/2) + 8*(n%2) }

const (
	chunkHeader = 8
	seedLen     = 32
	flagSeeded  = 1 // c1 is one seed's expansion
	flagSeeds   = 2 // c1 is the sum of several seeds' expansions
	// bgvVersion is the chunk format: 2 sends c0's first n coefficients
	// in the coefficient domain; 1 (still read: checkpoints written before
	// it) sent all of c0 in the NTT domain.
	bgvVersion = 2
)

// Marshal implements Scheme. The layout (little endian):
//
//	"hc" version=2 param-id log2(N) level elements=2 flags
//	[32-byte seed of c1 if flags&1]
//	[count k in 2..MaxSumSeeds, k 32-byte seeds whose expansions sum to c1, if flags&2]
//	n (uint16, 1..N), c0's first n coefficients (coefficient domain)
//	[c1, N coefficients in the NTT domain, unless seeded]
//
// with the coefficients, each below q < 2^60, packed at 60 bits
// (appendPacked): 7.5 bytes a value. Version 1 had no n, and every
// coefficient of c0, in the NTT domain, as a uint64.
func (s *BGV) Marshal(c Chunk) ([]byte, error) {
	return s.AppendChunk(make([]byte, 0, s.WireSize(c)), c)
}

// AppendChunk implements Scheme.
func (s *BGV) AppendChunk(out []byte, c Chunk) ([]byte, error) {
	ct, err := s.cipher(c)
	if err != nil {
		return nil, err
	}
	flags := byte(0)
	switch len(ct.seeds) {
	case 0:
	case 1:
		flags = flagSeeded
	default:
		flags = flagSeeds
	}
	out = append(out, 'h', 'c', bgvVersion, bgvID, bgvLogN, 0, 2, flags)
	if flags == flagSeeds {
		out = append(out, byte(len(ct.seeds)))
	}
	for _, seed := range ct.seeds {
		out = append(out, seed...)
	}
	out = binary.LittleEndian.AppendUint16(out, uint16(len(ct.c0)))
	out = appendPacked(out, ct.c0)
	if flags == 0 {
		out = appendPacked(out, ct.c1.Coeffs[0])
	}
	return out, nil
}

// appendPacked appends the coefficients (each below 2^60) at 60 bits,
// little endian: a pair as the 120 bits a | b<<60 in 15 bytes, an odd last
// one in 8.
func appendPacked(out []byte, row []uint64) []byte {
	i := 0
	for ; i+1 < len(row); i += 2 {
		a, b := row[i], row[i+1]
		out = binary.LittleEndian.AppendUint64(out, a|b<<60)
		hi := b >> 4 // 56 bits
		out = append(out, byte(hi), byte(hi>>8), byte(hi>>16), byte(hi>>24), byte(hi>>32), byte(hi>>40), byte(hi>>48))
	}
	if i < len(row) {
		out = binary.LittleEndian.AppendUint64(out, row[i])
	}
	return out
}

// readPacked reads len(dst) coefficients packed by appendPacked from b
// (at least packedLen(len(dst)) bytes), each checked below q.
func readPacked(dst []uint64, b []byte, name string) error {
	const mask = 1<<60 - 1
	i := 0
	for ; i+1 < len(dst); i += 2 {
		lo := binary.LittleEndian.Uint64(b)
		hi := uint64(b[8]) | uint64(b[9])<<8 | uint64(b[10])<<16 | uint64(b[11])<<24 | uint64(b[12])<<32 | uint64(b[13])<<40 | uint64(b[14])<<48
		dst[i], dst[i+1] = lo&mask, lo>>60|hi<<4
		b = b[15:]
	}
	if i < len(dst) {
		dst[i] = binary.LittleEndian.Uint64(b)
	}
	for j, v := range dst {
		if v >= bgvQ {
			return fmt.Errorf("bgv: coefficient %d of %s is %d, not below the modulus", j, name, v)
		}
	}
	return nil
}

// appendCoeffs appends the coefficients, little endian.
func appendCoeffs(out []byte, row []uint64) []byte {
	for _, v := range row {
		out = binary.LittleEndian.AppendUint64(out, v)
	}
	return out
}

// appendPolys appends every coefficient of polys, little endian.
func appendPolys(out []byte, polys []ring.Poly) []byte {
	for _, p := range polys {
		for _, row := range p.Coeffs {
			out = appendCoeffs(out, row)
		}
	}
	return out
}

// checkHeader checks the 8-byte header of a chunk of the scheme name
// (format version 1 to maxVersion, parameter set id, at level, two
// elements; flags only the allowed bits).
func checkHeader(b []byte, name string, maxVersion, id byte, level int, allowed byte) error {
	if len(b) < chunkHeader {
		return fmt.Errorf("%s: chunk of %d bytes is shorter than its header", name, len(b))
	}
	switch {
	case b[0] != 'h' || b[1] != 'c':
		return fmt.Errorf("%s: chunk does not start with the magic \"hc\"", name)
	case b[3] != id:
		return fmt.Errorf("%s: chunk for parameter set %d, want %d", name, b[3], id)
	case b[2] < 1 || b[2] > maxVersion:
		return fmt.Errorf("%s: chunk format version %d, want 1 to %d", name, b[2], maxVersion)
	case b[4] != bgvLogN:
		return fmt.Errorf("%s: chunk of ring degree 2^%d, want 2^%d", name, b[4], bgvLogN)
	case int(b[5]) != level:
		return fmt.Errorf("%s: chunk at level %d, want %d", name, b[5], level)
	case b[6] != 2:
		return fmt.Errorf("%s: chunk of %d elements, want 2", name, b[6])
	case b[7]&^allowed != 0:
		return fmt.Errorf("%s: unknown chunk flags %#x", name, b[7])
	}
	return nil
}

// Unmarshal implements Scheme: it checks every header field and every
// coefficient, and never panics on malformed input. It does not expand
// seeds: a chunk that came with them keeps them.
func (s *BGV) Unmarshal(b []byte) (Chunk, error) {
	if err := checkHeader(b, "bgv", bgvVersion, bgvID, s.params.MaxLevel(), flagSeeded|flagSeeds); err != nil {
		return nil, err
	}
	version := b[2]
	seeds := 0
	switch b[7] {
	case flagSeeded:
		seeds = 1
	case flagSeeds:
		if len(b) <= chunkHeader {
			return nil, fmt.Errorf("bgv: chunk of %d bytes has no seed count", len(b))
		}
		if seeds = int(b[chunkHeader]); seeds < 2 || seeds > MaxSumSeeds {
			return nil, fmt.Errorf("bgv: chunk with %d seeds, want 2 to %d", seeds, MaxSumSeeds)
		}
	case flagSeeded | flagSeeds:
		return nil, fmt.Errorf("bgv: chunk flags %#x: one seed and several", b[7])
	}
	at := chunkHeader
	if seeds > 1 {
		at++
	}
	at += seeds * seedLen
	N := s.params.N()
	n := N
	if version >= 2 {
		if len(b) < at+2 {
			return nil, fmt.Errorf("bgv: chunk of %d bytes ends before its value count", len(b))
		}
		if n = int(binary.LittleEndian.Uint16(b[at:])); n < 1 || n > N {
			return nil, fmt.Errorf("bgv: chunk of %d values, want 1 to %d", n, N)
		}
	}
	want := s.wireLen(seeds, n)
	if version < 2 { // uint64 coefficients, all of c0
		want = at + 8*n
		if seeds == 0 {
			want += 8 * N
		}
	}
	if len(b) != want {
		return nil, fmt.Errorf("bgv: chunk of %d bytes, want %d", len(b), want)
	}
	out := &Cipher{}
	if seeds > 0 {
		all := append([]byte(nil), b[at-seeds*seedLen:at]...)
		out.seeds = make([][]byte, seeds)
		for i := range out.seeds {
			out.seeds[i] = all[i*seedLen : (i+1)*seedLen : (i+1)*seedLen]
		}
	}
	if version >= 2 {
		at += 2
	}
	read, size := readPacked, packedLen
	if version < 2 {
		read, size = readCoeffs, func(n int) int { return 8 * n }
	}
	out.c0 = make([]uint64, n)
	if err := read(out.c0, b[at:], "c0"); err != nil {
		return nil, err
	}
	at += size(n)
	if seeds == 0 {
		out.c1 = s.params.RingQ().NewPoly()
		if err := read(out.c1.Coeffs[0], b[at:], "c1"); err != nil {
			return nil, err
		}
	}
	if version < 2 {
		// All of c0 in the NTT domain: to the coefficient domain.
		p := ring.Poly{Coeffs: [][]uint64{out.c0}}
		s.params.RingQ().INTT(p, p)
	}
	return out, nil
}

// readCoeffs reads len(dst) little-endian coefficients below q from b.
func readCoeffs(dst []uint64, b []byte, name string) error {
	for j := range dst {
		v := binary.LittleEndian.Uint64(b[8*j:])
		if v >= bgvQ {
			return fmt.Errorf("bgv: coefficient %d of %s is %d, not below the modulus", j, name, v)
		}
		dst[j] = v
	}
	return nil
}

// expand draws c1, in the NTT domain, from its public seed: ChaCha8 (a
// cryptographically strong stream), 60-bit words below q by rejection.
func (s *BGV) expand(seed []byte, c1 ring.Poly) {
	s.expandInto(seed, c1, false)
}

// expandAdd adds the seed's expansion to c1.
func (s *BGV) expandAdd(seed []byte, c1 ring.Poly) {
	s.expandInto(seed, c1, true)
}

func (s *BGV) expandInto(seed []byte, c1 ring.Poly, add bool) {
	rng := mrand.NewChaCha8([32]byte(seed))
	row := c1.Coeffs[0]
	for j := range row {
		for {
			if v := rng.Uint64() >> 4; v < bgvQ {
				if add {
					if v += row[j]; v >= bgvQ {
						v -= bgvQ
					}
				}
				row[j] = v
				break
			}
		}
	}
}

// c1 returns the chunk's c1: its own, or its seeds' expansions summed into
// buf.
func (s *BGV) c1(ct *Cipher, buf ring.Poly) ring.Poly {
	if ct.held() {
		return ct.c1
	}
	s.expand(ct.seeds[0], buf)
	for _, seed := range ct.seeds[1:] {
		s.expandAdd(seed, buf)
	}
	return buf
}

// BGVKey seals and opens BGV chunks. It is not safe for concurrent use: give
// every goroutine its own key (NewKey is cheap).
//
// Encryption is the scheme's secret-key encryption written out on Lattigo's
// ring arithmetic (Lattigo's own encryptor spends three quarters of its time
// in its BLAKE2 sampler): c1 uniform from a fresh public seed, e centered
// binomial of standard deviation 3.24 from a fresh secret seed,
// c0 = m/t + e - INTT(c1*s), of which a chunk keeps the coefficients of
// its values. It is BGV's encoding, so Lattigo's decryptor opens it too (the
// tests check).
type BGVKey struct {
	s    *BGV
	sk   *rlwe.SecretKey
	rq   *ring.Ring
	tInv uint64 // t^-1 mod q
	buf  ring.Poly
	c1   ring.Poly
}

// NewKey derives the secret key deterministically from a 32-byte seed (the
// federation secret's derivation for this purpose): every participant of a
// federation gets the same key, nobody else can.
func (s *BGV) NewKey(seed [32]byte) (*BGVKey, error) {
	prng, err := sampling.NewKeyedPRNG(seed[:])
	if err != nil {
		return nil, fmt.Errorf("bgv: key seed: %w", err)
	}
	sampler, err := ring.NewSampler(prng, s.params.RingQ(), s.params.Xs(), false)
	if err != nil {
		return nil, fmt.Errorf("bgv: key sampler: %w", err)
	}
	sk := rlwe.NewSecretKey(s.params)
	// As rlwe.KeyGenerator does, from our sampler: a ternary secret, in
	// the NTT and Montgomery domains.
	sampler.AtLevel(sk.LevelQ()).Read(sk.Value.Q)
	rqp := s.params.RingQP().AtLevel(sk.LevelQ(), sk.LevelP())
	rqp.NTT(sk.Value, sk.Value)
	rqp.MForm(sk.Value, sk.Value)
	rq := s.params.RingQ()
	return &BGVKey{s: s, sk: sk, rq: rq, tInv: ring.ModExp(bgvT, bgvQ-2, bgvQ), buf: rq.NewPoly(), c1: rq.NewPoly()}, nil
}

// Scheme implements Key.
func (k *BGVKey) Scheme() Scheme { return k.s }

// Seal implements Key: 1 to ChunkLen values, multiples of 2^-FracBits within
// ±MaxAbs (SealSlots quantizes them); the chunk seals exactly these.
func (k *BGVKey) Seal(vals []float64) (Chunk, error) {
	n := len(vals)
	if n < 1 || n > k.s.ChunkLen() {
		return nil, fmt.Errorf("bgv: seal %d values, want 1 to %d", n, k.s.ChunkLen())
	}
	// A fresh public seed for c1 (two messages under one c1 would leak
	// their difference) and a fresh secret one for the noise.
	var seeds [2 * seedLen]byte
	if _, err := rand.Read(seeds[:]); err != nil {
		return nil, fmt.Errorf("bgv: seed: %w", err)
	}
	c0 := make([]uint64, n)
	for i, v := range vals {
		x, err := toFixed(v)
		if err != nil {
			return nil, fmt.Errorf("bgv: slot %d: %w", i, err)
		}
		c0[i] = ring.BRed(residue(x), k.tInv, bgvQ, k.rq.SubRings[0].BRedConstant)
	}
	seed := append([]byte(nil), seeds[:seedLen]...)
	k.s.expand(seed, k.c1)
	k.rq.MulCoeffsMontgomery(k.c1, k.sk.Value.Q, k.buf)
	k.rq.INTT(k.buf, k.buf)
	// m/t + e - c1*s mod q, on the kept coefficients only.
	cs := k.buf.Coeffs[0]
	noise := mrand.NewChaCha8([32]byte(seeds[seedLen:]))
	for i := range c0 {
		v := c0[i] + residue(noiseSample(noise))
		if v >= bgvQ {
			v -= bgvQ
		}
		if v < cs[i] {
			v += bgvQ
		}
		c0[i] = v - cs[i]
	}
	return &Cipher{c0: c0, seeds: [][]byte{seed}}, nil
}

// Open implements Key: the chunk's Len values.
func (k *BGVKey) Open(c Chunk) ([]float64, error) {
	ct, err := k.s.cipher(c)
	if err != nil {
		return nil, err
	}
	// c0 + c1*s = m/t + e; times t: m + t*e, exact below q/2; mod t: m.
	k.rq.MulCoeffsMontgomery(k.s.c1(ct, k.c1), k.sk.Value.Q, k.buf)
	k.rq.INTT(k.buf, k.buf)
	out := make([]float64, len(ct.c0))
	const half = bgvQ / 2
	bred := k.rq.SubRings[0].BRedConstant
	cs := k.buf.Coeffs[0]
	for i, c := range ct.c0 {
		v := c + cs[i]
		if v >= bgvQ {
			v -= bgvQ
		}
		v = ring.BRed(v, bgvT, bgvQ, bred)
		var x int64
		if v > half {
			x = -int64(bgvQ - v)
		} else {
			x = int64(v)
		}
		x %= bgvT
		switch {
		case x > bgvT/2:
			x -= bgvT
		case x < -bgvT/2:
			x += bgvT
		}
		out[i] = float64(x) / fixedOne
	}
	return out, nil
}

// WrapCiphertext returns ct, a ciphertext of the parameters in the NTT
// domain that another encryptor made, as a chunk of all N values that this
// scheme adds, marshals and opens; it travels unseeded.
func (s *BGV) WrapCiphertext(ct *rlwe.Ciphertext) (Chunk, error) {
	if ct == nil || len(ct.Value) != 2 || ct.MetaData == nil || !ct.IsNTT || ct.Level() != s.params.MaxLevel() ||
		ct.Value[0].N() != s.params.N() || ct.Value[1].N() != s.params.N() {
		return nil, errors.New("bgv: wrap: not a ciphertext of the parameters in the NTT domain")
	}
	c0 := *ct.Value[0].CopyNew()
	s.params.RingQ().INTT(c0, c0)
	return &Cipher{c0: c0.Coeffs[0], c1: *ct.Value[1].CopyNew()}, nil
}

// Ciphertext returns the Lattigo ciphertext of a chunk (a copy, in the NTT
// domain; c0's coefficients past the chunk's values are zero, so only the
// first Len slots open to the sealed values).
func (s *BGV) Ciphertext(c Chunk) (*rlwe.Ciphertext, error) {
	ct, err := s.cipher(c)
	if err != nil {
		return nil, err
	}
	rq := s.params.RingQ()
	out := bgv.NewCiphertext(s.params, 1, s.params.MaxLevel())
	out.IsBatched = false
	copy(out.Value[0].Coeffs[0], ct.c0)
	rq.NTT(out.Value[0], out.Value[0])
	s.c1(ct, out.Value[1])
	if ct.held() {
		out.Value[1].Copy(ct.c1)
	}
	return out, nil
}

// SecretKey returns the key's Lattigo secret key (NTT and Montgomery
// domains), shared with it: a participant that switches ciphertexts to its
// own key publishes the matching public key.
func (k *BGVKey) SecretKey() *rlwe.SecretKey { return k.sk }

// noiseSample draws the error from the centered binomial distribution of
// 21 coin pairs (as Kyber does): standard deviation sqrt(21/2) = 3.24, at
// least the 3.2 of the homomorphic-encryption standard's parameter tables,
// bounded by 21; one 64-bit draw a sample, no table, no branches.
func noiseSample(r *mrand.ChaCha8) int64 {
	const mask = 1<<21 - 1
	u := r.Uint64()
	return int64(bits.OnesCount64(u&mask)) - int64(bits.OnesCount64((u>>21)&mask))
}

// residue returns x mod q for |x| < q.
func residue(x int64) uint64 {
	if x < 0 {
		return bgvQ - uint64(-x)
	}
	return uint64(x)
}

// toFixed converts a value on the fixed-point grid to its integer.
func toFixed(v float64) (int64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("value %v is not finite", v)
	}
	if math.Abs(v) > MaxAbs {
		return 0, fmt.Errorf("value %g is %w ±%g", v, ErrRange, float64(MaxAbs))
	}
	return int64(math.Round(v * fixedOne)), nil
}
