package threshold

import (
	"crypto/ecdh"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/ring"
)

// The messages that cross the network. Every one starts with a 12-byte
// header: "ht", format version 2, the message type, and the 8-byte tag of the
// federation (its id, committee, threshold and parameters), so a message of
// another federation or kind is refused before its body is read. Polynomials
// travel as little-endian uint64 coefficients, each below its prime, the
// rows of q1 then of q2 (64 kB at N = 4096). Every decoder is a method of Federation, checks every field
// against it and the exact length, and returns an error naming the field,
// never panics (FuzzUnmarshal*).

const (
	magic0, magic1 = 'h', 't'
	wireVersion    = 2
	headerLen      = 4 + tagLen

	msgSetup      = 1
	msgOwnKey     = 2
	msgCollective = 3
	msgShamir     = 4
	msgSwitch     = 5
	msgSwitched   = 6

	nonceLen = 12
	gcmTag   = 16
	digestB  = 32
	macLen   = sha256.Size
)

var msgNames = map[byte]string{msgSetup: "setup share", msgOwnKey: "own public key", msgCollective: "collective public key",
	msgShamir: "encrypted Shamir share", msgSwitch: "switching share", msgSwitched: "switched chunk"}

// SetupShare is a committee member's first message (member -> server -> every
// member): its collective public key share crp*s_i + e_i, its X25519 public
// key and its own public key, each with an HMAC-SHA256 tag under a key
// derived from the link secret (setupMAC), which every receiving party
// checks (the server cannot: it lacks the secret).
type SetupShare struct {
	f      *Federation
	From   PartyID
	X25519 [32]byte
	CKG    ring.Poly // share of p0 of the collective public key
	Own    ring.Poly // p0 of the member's own public key
	// Auth holds the tags of the fields x25519, ckg and own (setupFields):
	// Auth[2] is the own public key's tag (OwnPublicKey.Auth).
	Auth [3][macLen]byte
}

// setupFields names the authenticated fields of a setup share, in the order
// of their tags (and of the checks: the ckg tag covers the X25519 key too,
// so a swapped X25519 key is named as such).
var setupFields = [3]string{"x25519", "ckg", "own"}

// OwnPublicKey is a participant's own public key (p0; p1 is the federation's
// common random polynomial): the server switches sums to it. Auth is the
// owner's HMAC-SHA256 tag under the link secret's key: a committee member
// makes no switching share towards a key whose tag does not check, so the
// server cannot have a sum switched to a key of its own.
type OwnPublicKey struct {
	f    *Federation
	ID   PartyID
	P0   ring.Poly
	Auth [macLen]byte
}

// setupMAC returns the tag of field i of a setup share: HMAC-SHA256 under the
// link secret's key of the message header (magic, version, type, federation
// tag), the member id, the field's name and its bytes; the ckg tag also
// covers the X25519 key, which ties the share's fields together (two setups
// of one member cannot be mixed). The own tag is that of the member's own
// public key (ownMAC).
func (f *Federation) setupMAC(key []byte, s *SetupShare, i int) [macLen]byte {
	if setupFields[i] == "own" {
		return f.ownMAC(key, s.From, s.Own)
	}
	m := hmac.New(sha256.New, key)
	b := make([]byte, 0, headerLen+4+8+32+f.polyB)
	b = append(b, f.header(msgSetup)...)
	b = binary.LittleEndian.AppendUint32(b, uint32(s.From))
	b = append(append(b, setupFields[i]...), 0)
	b = append(b, s.X25519[:]...)
	if setupFields[i] == "ckg" {
		b = f.appendPoly(b, s.CKG)
	}
	m.Write(b)
	return [macLen]byte(m.Sum(nil))
}

// ownMAC returns the tag of an own public key: HMAC-SHA256 of its message
// header, id and p0.
func (f *Federation) ownMAC(key []byte, id PartyID, p0 ring.Poly) [macLen]byte {
	m := hmac.New(sha256.New, key)
	b := make([]byte, 0, headerLen+4+f.polyB)
	b = append(b, f.header(msgOwnKey)...)
	b = binary.LittleEndian.AppendUint32(b, uint32(id))
	m.Write(f.appendPoly(b, p0))
	return [macLen]byte(m.Sum(nil))
}

// checkSetup checks the tags of a setup share, naming the member and the
// first field that fails.
func (f *Federation) checkSetup(key []byte, s *SetupShare) error {
	for i, name := range setupFields {
		want := f.setupMAC(key, s, i)
		if !hmac.Equal(want[:], s.Auth[i][:]) {
			return fmt.Errorf("threshold: setup share of party %d: field %s does not authenticate under the link secret (changed on its way: the server cannot make a valid tag)", s.From, name)
		}
	}
	return nil
}

// checkOwn checks the tag of an own public key.
func (f *Federation) checkOwn(key []byte, k *OwnPublicKey) error {
	want := f.ownMAC(key, k.ID, k.P0)
	if !hmac.Equal(want[:], k.Auth[:]) {
		return fmt.Errorf("threshold: own public key of party %d: field p0 does not authenticate under the link secret (changed on its way: the server cannot make a valid tag)", k.ID)
	}
	return nil
}

// CollectivePublicKey is the federation's public key (p0; p1 is common).
type CollectivePublicKey struct {
	f  *Federation
	P0 ring.Poly
}

// EncryptedShare is one Shamir share, dealer -> server -> recipient,
// AES-256-GCM under a key only the two share (X25519, HKDF); the header,
// dealer and recipient are its additional data. The server reads From and
// To to route it, nothing else.
type EncryptedShare struct {
	f     *Federation
	From  PartyID
	To    PartyID
	Nonce [nonceLen]byte
	Box   []byte // AES-GCM of the share's coefficients
}

// SwitchShare is an active member's share of switching one chunk to
// Target's own key (member -> server).
type SwitchShare struct {
	f      *Federation
	From   PartyID
	Target PartyID
	Active []PartyID     // the t members whose shares the server adds, ascending
	Digest [digestB]byte // SHA-256 of the chunk's c1: the share is for this chunk only
	Value  [2]ring.Poly  // (s_i' c1 + u_i p0 + e, u_i p1 + e'), NTT domain
}

// Switched is a chunk switched to participant To's own key (server -> To).
type Switched struct {
	f     *Federation
	To    PartyID
	Chunk seal.Chunk
}

func (f *Federation) header(typ byte) []byte {
	out := make([]byte, 0, headerLen)
	out = append(out, magic0, magic1, wireVersion, typ)
	return append(out, f.tag[:]...)
}

func (f *Federation) appendPoly(out []byte, p ring.Poly) []byte {
	out = slices.Grow(out, 8*len(p.Coeffs)*p.N()) // one allocation, not a doubling per 8 bytes appended
	for _, row := range p.Coeffs {
		for _, v := range row {
			out = binary.LittleEndian.AppendUint64(out, v)
		}
	}
	return out
}

// readPoly decodes exactly one polynomial of the parameters into p.
func (f *Federation) readPoly(b []byte, p ring.Poly) error {
	if len(b) != f.polyB {
		return fmt.Errorf("polynomial of %d bytes, want %d", len(b), f.polyB)
	}
	qs := f.params.Q()
	for i, row := range p.Coeffs {
		q := qs[i]
		for j := range row {
			v := binary.LittleEndian.Uint64(b)
			if v >= q {
				return fmt.Errorf("coefficient %d of modulus %d is %d, not below the modulus", j, i, v)
			}
			row[j] = v
			b = b[8:]
		}
	}
	return nil
}

// reader walks a message body, naming the field that fails.
type reader struct {
	f    *Federation
	what string
	b    []byte
	err  error
}

func (f *Federation) open(b []byte, typ byte) *reader {
	r := &reader{f: f, what: msgNames[typ]}
	switch {
	case len(b) < headerLen:
		r.err = fmt.Errorf("threshold: %s of %d bytes is shorter than its header", r.what, len(b))
	case b[0] != magic0 || b[1] != magic1:
		r.err = fmt.Errorf("threshold: %s does not start with the magic \"ht\"", r.what)
	case b[2] != wireVersion:
		r.err = fmt.Errorf("threshold: %s format version %d, want %d", r.what, b[2], wireVersion)
	case b[3] != typ:
		r.err = fmt.Errorf("threshold: message type %d, want %d (%s)", b[3], typ, r.what)
	case string(b[4:headerLen]) != string(f.tag[:]):
		r.err = fmt.Errorf("threshold: %s of another federation, committee, threshold or parameter set (tag)", r.what)
	default:
		r.b = b[headerLen:]
	}
	return r
}

func (r *reader) fail(field, format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("threshold: %s: field %s: %s", r.what, field, fmt.Sprintf(format, a...))
	}
}

func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.fail(field, "needs %d bytes, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u32(field string) uint32 {
	b := r.take(field, 4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) id(field string, member bool) PartyID {
	v := PartyID(r.u32(field))
	if r.err != nil {
		return 0
	}
	if v == 0 {
		r.fail(field, "party id 0")
	} else if member && !r.f.member[v] {
		r.fail(field, "party %d is not on the committee", v)
	}
	return v
}

func (r *reader) poly(field string) ring.Poly {
	b := r.take(field, r.f.polyB)
	if b == nil {
		return ring.Poly{}
	}
	p := r.f.params.RingQ().NewPoly()
	if err := r.f.readPoly(b, p); err != nil {
		r.fail(field, "%v", err)
	}
	return p
}

func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("threshold: %s: %d bytes after the last field", r.what, len(r.b))
	}
	return r.err
}

// Marshal encodes the share: header, from (uint32), X25519 key (32 bytes),
// CKG polynomial, own public key polynomial, the three tags (32 bytes each).
func (s *SetupShare) Marshal() ([]byte, error) {
	if s == nil || s.f == nil {
		return nil, errors.New("threshold: nil setup share")
	}
	out := s.f.header(msgSetup)
	out = binary.LittleEndian.AppendUint32(out, uint32(s.From))
	out = append(out, s.X25519[:]...)
	out = s.f.appendPoly(out, s.CKG)
	out = s.f.appendPoly(out, s.Own)
	for _, a := range s.Auth {
		out = append(out, a[:]...)
	}
	return out, nil
}

// UnmarshalSetupShare decodes and validates a setup share.
func (f *Federation) UnmarshalSetupShare(b []byte) (*SetupShare, error) {
	r := f.open(b, msgSetup)
	s := &SetupShare{f: f}
	s.From = r.id("from", true)
	if x := r.take("x25519", 32); x != nil {
		if _, err := ecdh.X25519().NewPublicKey(x); err != nil {
			r.fail("x25519", "%v", err)
		}
		s.X25519 = [32]byte(x)
	}
	s.CKG = r.poly("ckg")
	s.Own = r.poly("own")
	for i, name := range setupFields {
		if a := r.take("auth "+name, macLen); a != nil {
			s.Auth[i] = [macLen]byte(a)
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return s, nil
}

// Marshal encodes the key: header, id (uint32), p0, tag (32 bytes).
func (k *OwnPublicKey) Marshal() ([]byte, error) {
	if k == nil || k.f == nil {
		return nil, errors.New("threshold: nil own public key")
	}
	out := k.f.header(msgOwnKey)
	out = binary.LittleEndian.AppendUint32(out, uint32(k.ID))
	out = k.f.appendPoly(out, k.P0)
	return append(out, k.Auth[:]...), nil
}

// UnmarshalOwnPublicKey decodes and validates a participant's own public key
// (the participant need not be on the committee).
func (f *Federation) UnmarshalOwnPublicKey(b []byte) (*OwnPublicKey, error) {
	r := f.open(b, msgOwnKey)
	k := &OwnPublicKey{f: f}
	k.ID = r.id("id", false)
	k.P0 = r.poly("p0")
	if a := r.take("auth", macLen); a != nil {
		k.Auth = [macLen]byte(a)
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return k, nil
}

// Marshal encodes the key: header, p0.
func (k *CollectivePublicKey) Marshal() ([]byte, error) {
	if k == nil || k.f == nil {
		return nil, errors.New("threshold: nil collective public key")
	}
	return k.f.appendPoly(k.f.header(msgCollective), k.P0), nil
}

// UnmarshalCollectivePublicKey decodes and validates the collective key.
func (f *Federation) UnmarshalCollectivePublicKey(b []byte) (*CollectivePublicKey, error) {
	r := f.open(b, msgCollective)
	k := &CollectivePublicKey{f: f}
	k.P0 = r.poly("p0")
	if err := r.done(); err != nil {
		return nil, err
	}
	return k, nil
}

// header is the additional data of the share's encryption: the message
// header, dealer and recipient, so the server can neither redirect a share
// nor pass it off as another dealer's.
func (e *EncryptedShare) header() []byte {
	out := e.f.header(msgShamir)
	out = binary.LittleEndian.AppendUint32(out, uint32(e.From))
	return binary.LittleEndian.AppendUint32(out, uint32(e.To))
}

// Marshal encodes the share: header, from, to (uint32 each), nonce (12
// bytes), AES-GCM box (the polynomial's bytes plus a 16-byte tag).
func (e *EncryptedShare) Marshal() ([]byte, error) {
	if e == nil || e.f == nil {
		return nil, errors.New("threshold: nil encrypted share")
	}
	out := e.header()
	out = append(out, e.Nonce[:]...)
	return append(out, e.Box...), nil
}

// UnmarshalEncryptedShare decodes and validates an encrypted Shamir share:
// the server calls it to route the share (From, To), the recipient to open
// it (Party.Receive).
func (f *Federation) UnmarshalEncryptedShare(b []byte) (*EncryptedShare, error) {
	r := f.open(b, msgShamir)
	e := &EncryptedShare{f: f}
	e.From = r.id("from", true)
	e.To = r.id("to", true)
	if r.err == nil && e.From == e.To {
		r.fail("to", "party %d deals to itself", e.To)
	}
	if n := r.take("nonce", nonceLen); n != nil {
		e.Nonce = [nonceLen]byte(n)
	}
	if box := r.take("box", f.polyB+gcmTag); box != nil {
		e.Box = slices.Clone(box)
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return e, nil
}

// Marshal encodes the share: header, from, target (uint32 each), the number
// of active members (uint16) and their ids (uint32 each), the chunk digest
// (32 bytes), the two polynomials.
func (s *SwitchShare) Marshal() ([]byte, error) {
	if s == nil || s.f == nil {
		return nil, errors.New("threshold: nil switching share")
	}
	out := s.f.header(msgSwitch)
	out = binary.LittleEndian.AppendUint32(out, uint32(s.From))
	out = binary.LittleEndian.AppendUint32(out, uint32(s.Target))
	out = binary.LittleEndian.AppendUint16(out, uint16(len(s.Active)))
	for _, id := range s.Active {
		out = binary.LittleEndian.AppendUint32(out, uint32(id))
	}
	out = append(out, s.Digest[:]...)
	out = s.f.appendPoly(out, s.Value[0])
	return s.f.appendPoly(out, s.Value[1]), nil
}

// UnmarshalSwitchShare decodes and validates a switching share: the sender
// and every active id on the committee, exactly t active ids ascending with
// the sender among them.
func (f *Federation) UnmarshalSwitchShare(b []byte) (*SwitchShare, error) {
	r := f.open(b, msgSwitch)
	s := &SwitchShare{f: f}
	s.From = r.id("from", true)
	s.Target = r.id("target", false)
	var n int
	if c := r.take("active count", 2); c != nil {
		n = int(binary.LittleEndian.Uint16(c))
		if n != f.cfg.Threshold {
			r.fail("active count", "%d, want t = %d", n, f.cfg.Threshold)
		}
	}
	for i := 0; i < n && r.err == nil; i++ {
		s.Active = append(s.Active, r.id(fmt.Sprintf("active[%d]", i), true))
	}
	if r.err == nil {
		if err := f.checkActive(s.Active); err != nil {
			r.fail("active", "%v", err)
		} else if !slices.Contains(s.Active, s.From) {
			r.fail("active", "sender %d is not in the active set %v", s.From, s.Active)
		}
	}
	if d := r.take("digest", digestB); d != nil {
		s.Digest = [digestB]byte(d)
	}
	s.Value[0] = r.poly("value[0]")
	s.Value[1] = r.poly("value[1]")
	if err := r.done(); err != nil {
		return nil, err
	}
	return s, nil
}

// Marshal encodes the switched chunk: header, to (uint32), the chunk in
// seal.ThresholdBGV's wire format.
func (s *Switched) Marshal() ([]byte, error) {
	if s == nil || s.f == nil {
		return nil, errors.New("threshold: nil switched chunk")
	}
	c, err := s.f.s.Marshal(s.Chunk)
	if err != nil {
		return nil, fmt.Errorf("threshold: switched chunk: %w", err)
	}
	out := s.f.header(msgSwitched)
	out = binary.LittleEndian.AppendUint32(out, uint32(s.To))
	return append(out, c...), nil
}

// UnmarshalSwitched decodes and validates a switched chunk (its chunk with
// seal.ThresholdBGV.Unmarshal).
func (f *Federation) UnmarshalSwitched(b []byte) (*Switched, error) {
	r := f.open(b, msgSwitched)
	s := &Switched{f: f}
	s.To = r.id("to", false)
	if r.err == nil {
		c, err := f.s.Unmarshal(r.b)
		if err != nil {
			r.fail("chunk", "%v", err)
		}
		s.Chunk, r.b = c, nil
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return s, nil
}
