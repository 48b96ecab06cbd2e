package oprf

import (
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cloudflare/circl/group"
)

// Suite parameters of RFC 9497 section 4.1, OPRF(ristretto255, SHA-512), in
// mode OPRF (0x00): the pseudonyms are that mode's outputs.
const (
	// Identifier is the RFC 9497 suite identifier.
	Identifier = "ristretto255-SHA512"
	// ElementLength and ScalarLength are the encoded sizes in bytes.
	ElementLength = 32
	ScalarLength  = 32
	// ProofLength is the size of an encoded DLEQ proof (two scalars).
	ProofLength = 2 * ScalarLength
	// OutputLength is the size of a pseudonym (a SHA-512 digest).
	OutputLength = 64
	// MaxInputLength is set by the two-byte length prefix in Finalize.
	MaxInputLength = 1<<16 - 1
	// MaxBatch is set by the two-byte batch index RFC 9497 hashes into
	// batched proofs; larger datasets are sent as several batches.
	MaxBatch = 1<<16 - 1
	// MaxMembers bounds committees (and wire sizes); committees are small.
	MaxMembers = 255
	// MaxIDLength bounds federation and participant ids.
	MaxIDLength = 255
)

// contextString is RFC 9497 section 3.1's "OPRFV1-" || I2OSP(mode, 1) || "-"
// || identifier for mode OPRF.
const contextString = "OPRFV1-\x00-" + Identifier

// hashToGroupDST is the domain separation tag RFC 9497 section 4.1 uses to
// hash inputs to the group.
var hashToGroupDST = []byte("HashToGroup-" + contextString)

// Element and Scalar are ristretto255 group elements and scalars, so callers
// need not import circl for the types they pass around.
type (
	Element = group.Element
	Scalar  = group.Scalar
)

var g = group.Ristretto255

// hashToGroup is RFC 9497's HashToGroup for this suite.
func hashToGroup(input []byte) Element {
	return g.HashToElement(input, hashToGroupDST)
}

// finalizeHash is RFC 9497 section 3.3.1's Finalize hash for mode OPRF;
// unblinded is the encoded element N = k·H(input).
func finalizeHash(input, unblinded []byte) []byte {
	h := sha512.New()
	var n [2]byte
	binary.BigEndian.PutUint16(n[:], uint16(len(input)))
	h.Write(n[:])
	h.Write(input)
	binary.BigEndian.PutUint16(n[:], uint16(len(unblinded)))
	h.Write(n[:])
	h.Write(unblinded)
	h.Write([]byte("Finalize"))
	return h.Sum(nil)
}

// randomScalar draws a uniform non-zero scalar from rnd by rejection sampling
// over 253-bit strings. circl's RandomScalar ignores its reader, which would
// make caller-supplied randomness (and fixed test vectors) impossible.
func randomScalar(rnd io.Reader) (Scalar, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var buf [ScalarLength]byte
	s := g.NewScalar()
	// Each try succeeds with probability about 1/2; 128 failures in a row
	// means the reader is broken, not unlucky.
	for range 128 {
		if _, err := io.ReadFull(rnd, buf[:]); err != nil {
			return nil, fmt.Errorf("oprf: read randomness: %w", err)
		}
		buf[ScalarLength-1] &= 0x1f
		if s.UnmarshalBinary(buf[:]) == nil && !s.IsZero() {
			return s, nil
		}
	}
	return nil, errors.New("oprf: randomness source keeps yielding out-of-range scalars")
}

// scalarOf returns i as a scalar (member indices are small and positive).
func scalarOf(i int) Scalar {
	return g.NewScalar().SetUint64(uint64(i))
}

// lagrangeAtZero returns the Lagrange coefficients at x = 0 for the distinct
// member indices given, so that f(0) = Σ λ_j f(j) for any f of degree
// below len(indices).
func lagrangeAtZero(indices []int) []Scalar {
	out := make([]Scalar, len(indices))
	for a, i := range indices {
		num := scalarOf(1)
		den := scalarOf(1)
		xi := scalarOf(i)
		for b, j := range indices {
			if a == b {
				continue
			}
			xj := scalarOf(j)
			num.Mul(num, xj)
			den.Mul(den, g.NewScalar().Sub(xj, xi))
		}
		out[a] = num.Mul(num, g.NewScalar().Inv(den))
	}
	return out
}

// checkElement refuses what no honest party sends: nil, foreign-group and
// identity elements (the identity would reveal nothing yet pass proofs).
func checkElement(e Element) error {
	if e == nil {
		return errors.New("missing element")
	}
	if e.Group() != g {
		return errors.New("element is not in ristretto255")
	}
	if e.IsIdentity() {
		return errors.New("element is the identity")
	}
	return nil
}
