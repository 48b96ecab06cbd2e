package oprf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The dealing's private channel: a dealer encrypts each member's share to
// that member's X25519 key, so that the relay (and every participant that
// shares the relay's view) sees only ciphertexts. The members' keys must
// reach the dealers authenticated; the caller tags them.

// ChannelKey is a member's X25519 key pair for receiving its shares.
type ChannelKey struct{ priv *ecdh.PrivateKey }

// NewChannelKey draws a key pair from rnd (crypto/rand.Reader if nil).
func NewChannelKey(rnd io.Reader) (*ChannelKey, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	k, err := ecdh.X25519().GenerateKey(rnd)
	if err != nil {
		return nil, fmt.Errorf("oprf: channel key: %w", err)
	}
	return &ChannelKey{priv: k}, nil
}

// Public is the key dealers encrypt to (32 bytes).
func (k *ChannelKey) Public() []byte { return k.priv.PublicKey().Bytes() }

// SealShare encrypts share to the recipient's public key, bound to context
// (the federation's key setup) and to the dealer and recipient.
func (k *ChannelKey) SealShare(to []byte, context string, share *SecretShare) ([]byte, error) {
	body, err := share.MarshalBinary()
	if err != nil {
		return nil, err
	}
	head := channelHead(share.Dealer, share.Recipient)
	aead, err := k.aead(to, context, head)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("oprf: nonce: %w", err)
	}
	out := append(append(head, nonce...), aead.Seal(nil, nonce, body, head)...)
	return out, nil
}

// OpenShare decrypts a share from the dealer whose public key is from,
// refusing one not addressed to recipient or altered on the way.
func (k *ChannelKey) OpenShare(from []byte, context string, c Committee, recipient int, data []byte) (*SecretShare, error) {
	if len(data) < 4+12+16 {
		return nil, errors.New("oprf: sealed share: too short")
	}
	head := data[:4]
	dealer, to := int(binary.BigEndian.Uint16(head)), int(binary.BigEndian.Uint16(head[2:]))
	if to != recipient {
		return nil, fmt.Errorf("oprf: sealed share for member %d, not %d", to, recipient)
	}
	aead, err := k.aead(from, context, head)
	if err != nil {
		return nil, err
	}
	body, err := aead.Open(nil, data[4:16], data[16:], head)
	if err != nil {
		return nil, fmt.Errorf("oprf: sealed share from dealer %d: %w", dealer, err)
	}
	s, err := DecodeSecretShare(body, c)
	if err != nil {
		return nil, err
	}
	if s.Dealer != dealer || s.Recipient != recipient {
		return nil, fmt.Errorf("oprf: sealed share: header %d -> %d, share %d -> %d", dealer, to, s.Dealer, s.Recipient)
	}
	return s, nil
}

// ShareRoute reads a sealed share's dealer and recipient, for a relay to
// route it (it cannot open it).
func ShareRoute(data []byte) (dealer, recipient int, ok bool) {
	if len(data) < 4+12+16 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint16(data)), int(binary.BigEndian.Uint16(data[2:])), true
}

func channelHead(dealer, recipient int) []byte {
	var h [4]byte
	binary.BigEndian.PutUint16(h[:], uint16(dealer))
	binary.BigEndian.PutUint16(h[2:], uint16(recipient))
	return h[:]
}

// aead derives the pair's AES-256-GCM key: X25519, then HKDF-SHA256 over
// the context and the direction (dealer -> recipient in head).
func (k *ChannelKey) aead(peer []byte, context string, head []byte) (cipher.AEAD, error) {
	pub, err := ecdh.X25519().NewPublicKey(peer)
	if err != nil {
		return nil, fmt.Errorf("oprf: channel: peer key: %w", err)
	}
	secret, err := k.priv.ECDH(pub)
	if err != nil {
		return nil, fmt.Errorf("oprf: channel: %w", err)
	}
	key, err := hkdf.Key(sha256.New, secret, []byte(context), "hyfed oprf share "+string(head), 32)
	if err != nil {
		return nil, fmt.Errorf("oprf: channel: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
