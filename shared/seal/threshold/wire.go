package threshold

import (
	"crypto/ecdh"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/ring"
)

// The messages that cross the network. Every one starts with a 12-byte
// header: "ht", format version 1, the message type, and the 8-byte tag of the
// federation (its id, committee, threshold and parameters), so a message of
// another federation or kind is refused before its body is read. Polynomials
// travel as little-endian uint64 coefficients, each below its prime (32 kB
// at N = 4096). Every decoder is a method of Federation, checks every field
// against it and the exact length, and returns an error naming the field,
// never panics (FuzzUnmarshal*).

const (
	magic0, magic1 = 'h', 't'
	wireVersion    = 1
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
)

var msgNames = map[byte]string{msgSetup: "setup share", msgOwnKey: "own public key", msgCollective: "collective public key",
	msgShamir: "encrypted Shamir share", msgSwitch: "switching share", msgSwitched: "switched chunk"}

// SetupShare is a committee member's first message (member -> server -> every
// member): its collective public key share crp*s_i + e_i, its X25519 public
// key and its own public key.
type SetupShare struct {
	f      *Federation
	From   PartyID
	X25519 [32]byte
	CKG    ring.Poly // share of p0 of the collective public key
	Own    ring.Poly // p0 of the member's own public key
}

// OwnPublicKey is a participant's own public key (p0; p1 is the federation's
// common random polynomial): the server switches sums to it.
type OwnPublicKey struct {
	f  *Federation
	ID PartyID
	P0 ring.Poly
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
// CKG polynomial, own public key polynomial.
func (s *SetupShare) Marshal() ([]byte, error) {
	if s == nil || s.f == nil {
		return nil, errors.New("threshold: nil setup share")
	}
	out := s.f.header(msgSetup)
	out = binary.LittleEndian.AppendUint32(out, uint32(s.From))
	out = append(out, s.X25519[:]...)
	out = s.f.appendPoly(out, s.CKG)
	return s.f.appendPoly(out, s.Own), nil
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
	if err := r.done(); err != nil {
		return nil, err
	}
	return s, nil
}

// Marshal encodes the key: header, id (uint32), p0.
func (k *OwnPublicKey) Marshal() ([]byte, error) {
	if k == nil || k.f == nil {
		return nil, errors.New("threshold: nil own public key")
	}
	out := k.f.header(msgOwnKey)
	out = binary.LittleEndian.AppendUint32(out, uint32(k.ID))
	return k.f.appendPoly(out, k.P0), nil
}

// UnmarshalOwnPublicKey decodes and validates a participant's own public key
// (the participant need not be on the committee).
func (f *Federation) UnmarshalOwnPublicKey(b []byte) (*OwnPublicKey, error) {
	r := f.open(b, msgOwnKey)
	k := &OwnPublicKey{f: f}
	k.ID = r.id("id", false)
	k.P0 = r.poly("p0")
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
// shared/seal's wire format.
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
// seal.BGV.Unmarshal).
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
