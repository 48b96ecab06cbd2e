// Package secret holds the federation secret that only participants know and
// the values derived from it: sample pseudonyms and the seeds of
// synchronized picks. (The homomorphic key is derived from it too.)
package secret

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Secret is the 32-byte federation secret. It travels only in the fragment
// of the join link, which browsers never send to a server.
type Secret [32]byte

// New returns a fresh random secret.
func New() (Secret, error) {
	var s Secret
	if _, err := rand.Read(s[:]); err != nil {
		return s, fmt.Errorf("secret: %w", err)
	}
	return s, nil
}

// FromSeed derives a secret from a number, for reproducible experiments only.
func FromSeed(seed int64) Secret {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	return Secret(sha256.Sum256(append([]byte("hyfed experiment secret "), b[:]...)))
}

// String returns the URL-safe text form used in join links.
func (s Secret) String() string { return base64.RawURLEncoding.EncodeToString(s[:]) }

// Parse reads the text form.
func Parse(text string) (Secret, error) {
	var s Secret
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return s, fmt.Errorf("secret: not URL-safe base64: %w", err)
	}
	if len(b) != len(s) {
		return s, fmt.Errorf("secret: %d bytes, want %d", len(b), len(s))
	}
	copy(s[:], b)
	return s, nil
}

func (s Secret) mac(label string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, s[:])
	m.Write([]byte(label))
	for _, p := range parts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

// Pseudonym is the keyed hash under which a record id leaves a client: the
// server aligns samples by it but cannot invert it.
func (s Secret) Pseudonym(recordID string) string {
	return hex.EncodeToString(s.mac("hyfed pseudonym", []byte(recordID))[:16])
}

// PickSeed seeds the synchronized choice of samples that every holder of a
// sample group makes in a round; the server cannot predict it.
func (s Secret) PickSeed(group string, round int) uint64 {
	var r [8]byte
	binary.LittleEndian.PutUint64(r[:], uint64(round))
	return binary.LittleEndian.Uint64(s.mac("hyfed picks", []byte(group), r[:]))
}

// Derive returns 32 bytes for the given purpose (for example the
// homomorphic key seed).
func (s Secret) Derive(purpose string) [32]byte {
	var out [32]byte
	copy(out[:], s.mac("hyfed derive", []byte(purpose)))
	return out
}

// Fingerprint is a keyed value the server can compare to reject a joiner
// holding another secret, without learning the secret.
func (s Secret) Fingerprint() string {
	return hex.EncodeToString(s.mac("hyfed fingerprint")[:16])
}
