package threshold

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
)

// A party's stored state, for the browser tab's storage: "hk", version 1,
// the federation tag, the party id (uint32), a 12-byte nonce, then
// AES-256-GCM (the header its additional data) of: the party seed (32
// bytes), flags (bit 0: Shamir share follows, bit 1: collective key
// follows), the Shamir share, the collective public key. The key is HKDF-SHA256
// of the federation link secret (which the server never sees) salted with
// the federation tag: a stolen copy of the tab's storage alone opens nothing.
// Size: 61 bytes + 64 kB a polynomial.

const (
	stateMagic0, stateMagic1 = 'h', 'k'
	stateVersion             = 1
	stateHeader              = 3 + tagLen + 4
	flagShare                = 1
	flagCollective           = 2
)

// ErrWrongLinkSecret: the state does not decrypt under the given link
// secret (another federation's secret, or a tampered state).
var ErrWrongLinkSecret = errors.New("threshold: stored state does not decrypt with this link secret (wrong secret, or tampered state)")

func (f *Federation) stateAEAD(link []byte) (aeadFn, error) {
	k, err := f.linkKey(link, "hyfed threshold party state v1")
	if err != nil {
		return nil, err
	}
	a, err := newGCM(k)
	if err != nil {
		return nil, err
	}
	return a, nil
}

type aeadFn interface {
	Seal(dst, nonce, plaintext, additionalData []byte) []byte
	Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error)
}

func (f *Federation) stateHeader(id PartyID) []byte {
	out := []byte{stateMagic0, stateMagic1, stateVersion}
	out = append(out, f.tag[:]...)
	return binary.LittleEndian.AppendUint32(out, uint32(id))
}

// Save returns the party's secret state encrypted under a key derived from
// the federation link secret.
func (p *Party) Save(linkSecret []byte) ([]byte, error) {
	aead, err := p.f.stateAEAD(linkSecret)
	if err != nil {
		return nil, err
	}
	plain := append([]byte(nil), p.seed[:]...)
	flags := byte(0)
	if p.tsk != nil {
		flags |= flagShare
	}
	if p.cpk != nil {
		flags |= flagCollective
	}
	plain = append(plain, flags)
	if p.tsk != nil {
		plain = p.f.appendPoly(plain, p.tsk.Q)
	}
	if p.cpk != nil {
		plain = p.f.appendPoly(plain, p.cpk.P0)
	}
	out := p.f.stateHeader(p.id)
	var nonce [nonceLen]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("threshold: nonce: %w", err)
	}
	ad := out
	out = append(out[:len(out):len(out)], nonce[:]...)
	out = aead.Seal(out, nonce[:], plain, ad)
	clear(plain)
	return out, nil
}

// Restore rebuilds a party from its saved state; a state saved under
// another link secret or federation, or changed, is refused with an error
// saying so.
func Restore(f *Federation, state, linkSecret []byte) (*Party, error) {
	aead, err := f.stateAEAD(linkSecret)
	if err != nil {
		return nil, err
	}
	switch {
	case len(state) < stateHeader+nonceLen+gcmTag:
		return nil, fmt.Errorf("threshold: stored state of %d bytes is shorter than its header", len(state))
	case state[0] != stateMagic0 || state[1] != stateMagic1:
		return nil, errors.New("threshold: stored state does not start with the magic \"hk\"")
	case state[2] != stateVersion:
		return nil, fmt.Errorf("threshold: stored state version %d, want %d", state[2], stateVersion)
	case string(state[3:3+tagLen]) != string(f.tag[:]):
		return nil, errors.New("threshold: stored state of another federation, committee, threshold or parameter set")
	}
	id := PartyID(binary.LittleEndian.Uint32(state[3+tagLen:]))
	ad := state[:stateHeader]
	nonce := state[stateHeader : stateHeader+nonceLen]
	plain, err := aead.Open(nil, nonce, state[stateHeader+nonceLen:], ad)
	if err != nil {
		return nil, ErrWrongLinkSecret
	}
	defer clear(plain)
	if len(plain) < 33 {
		return nil, fmt.Errorf("threshold: stored state holds %d bytes, want at least 33", len(plain))
	}
	p, err := newParty(f, id, [32]byte(plain[:32]), linkSecret)
	if err != nil {
		return nil, err
	}
	flags, rest := plain[32], plain[33:]
	want := 0
	if flags&^(flagShare|flagCollective) != 0 {
		return nil, fmt.Errorf("threshold: stored state has unknown flags %#x", flags)
	}
	if flags&flagShare != 0 {
		if p.sk == nil {
			return nil, fmt.Errorf("threshold: stored state holds a Shamir share, but party %d is not on the committee", id)
		}
		want += f.polyB
	}
	if flags&flagCollective != 0 {
		want += f.polyB
	}
	if len(rest) != want {
		return nil, fmt.Errorf("threshold: stored state body of %d bytes, want %d", len(rest), want)
	}
	if flags&flagShare != 0 {
		tsk := p.thr.AllocateThresholdSecretShare()
		if err := f.readPoly(rest[:f.polyB], tsk.Q); err != nil {
			return nil, fmt.Errorf("threshold: stored Shamir share: %w", err)
		}
		p.tsk, rest = &tsk, rest[f.polyB:]
	}
	if flags&flagCollective != 0 {
		cpk := &CollectivePublicKey{f: f, P0: f.params.RingQ().NewPoly()}
		if err := f.readPoly(rest, cpk.P0); err != nil {
			return nil, fmt.Errorf("threshold: stored collective key: %w", err)
		}
		p.cpk = cpk
	}
	return p, nil
}
