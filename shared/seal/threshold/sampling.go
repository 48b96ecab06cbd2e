package threshold

import (
	"crypto/rand"
	"fmt"
	"math/bits"
	mrand "math/rand/v2"

	"github.com/tuneinsight/lattigo/v5/ring"
)

// The randomness of sealing and of switching shares, written out as
// shared/seal's BGVKey.Seal writes its own (Lattigo's samplers spend most of
// an encryption in BLAKE2, and its Gaussian sampler cannot give the exact
// low bits that flooding needs): a ChaCha8 stream keyed by 32 bytes of
// crypto/rand per chunk, and from it
//
//   - ternary polynomials (u): each coefficient -1, 0 or 1 with probability
//     1/3, the density 2/3 of Lattigo's secrets (rlwe.DefaultXs);
//   - errors: the centered binomial distribution of shared/seal (21 coin
//     pairs, standard deviation 3.24, at least the 3.2 of the standard);
//   - flooding: uniform on [-2^k, 2^k), every integer equally likely.
//
// Each writes a polynomial in the coefficient domain over every prime.

// stream returns a ChaCha8 stream keyed from crypto/rand.
func stream() (*mrand.ChaCha8, error) {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("threshold: randomness: %w", err)
	}
	r := mrand.NewChaCha8(seed)
	clear(seed[:])
	return r, nil
}

// residue returns x mod q.
func residue(x int64, q uint64) uint64 {
	if x >= 0 {
		if u := uint64(x); u < q {
			return u
		}
		return uint64(x) % q
	}
	u := uint64(-x)
	if u >= q {
		if u %= q; u == 0 {
			return 0
		}
	}
	return q - u
}

// setSmall writes the integer x at coefficient j of every prime.
func setSmall(p ring.Poly, qs []uint64, j int, x int64) {
	for i, q := range qs {
		p.Coeffs[i][j] = residue(x, q)
	}
}

// addSmall adds the small integer x to coefficient j of every prime.
func addSmall(p ring.Poly, qs []uint64, j int, x int64) {
	for i, q := range qs {
		v := p.Coeffs[i][j] + residue(x, q)
		if v >= q {
			v -= q
		}
		p.Coeffs[i][j] = v
	}
}

// sampleTernary fills p with a uniform ternary polynomial: bytes below 255
// (a multiple of 3) give a trit each, 255 is drawn again.
func sampleTernary(r *mrand.ChaCha8, p ring.Poly, qs []uint64) {
	var w uint64
	left := 0
	for j := range p.N() {
		for {
			if left == 0 {
				w, left = r.Uint64(), 8
			}
			b := byte(w)
			w >>= 8
			left--
			if b != 255 {
				setSmall(p, qs, j, int64(b%3)-1)
				break
			}
		}
	}
}

// binomial draws the centered binomial error of shared/seal.
func binomial(r *mrand.ChaCha8) int64 {
	const mask = 1<<21 - 1
	u := r.Uint64()
	return int64(bits.OnesCount64(u&mask)) - int64(bits.OnesCount64((u>>21)&mask))
}

// sampleBinomial fills p with centered binomial errors.
func sampleBinomial(r *mrand.ChaCha8, p ring.Poly, qs []uint64) {
	for j := range p.N() {
		setSmall(p, qs, j, binomial(r))
	}
}

// addBinomial adds centered binomial errors to p.
func addBinomial(r *mrand.ChaCha8, p ring.Poly, qs []uint64) {
	for j := range p.N() {
		addSmall(p, qs, j, binomial(r))
	}
}

// sampleFlood fills p with integers uniform on [-2^k, 2^k), 1 <= k <= 62:
// the top k+1 bits of a word, shifted down by 2^k.
func sampleFlood(r *mrand.ChaCha8, k int, p ring.Poly, qs []uint64) {
	shift := 63 - uint(k)
	off := int64(1) << k
	for j := range p.N() {
		setSmall(p, qs, j, int64(r.Uint64()>>shift)-off)
	}
}
