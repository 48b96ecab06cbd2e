package oprf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cloudflare/circl/zk/dleq"
)

// Wire format: every message starts with a version byte and a kind byte,
// then fixed-order fields; integers are big-endian, elements and scalars use
// RFC 9496 / RFC 9497 encodings. Every encoding is canonical, so a decoded
// message re-encodes to the same bytes.
//
//	commitment: dealer u16 | T u16 | T elements
//	share:      dealer u16 | recipient u16 | scalar
//	request:    len u16 | federation id | len u16 | participant id | count u32 | count elements
//	response:   member u16 | count u32 | count elements | proof (two scalars)
const wireVersion = 1

const (
	kindCommitment byte = 1 + iota
	kindShare
	kindRequest
	kindResponse
)

// MarshalBinary encodes the commitment for broadcast.
func (c *Commitment) MarshalBinary() ([]byte, error) {
	if c.Dealer < 1 || c.Dealer > MaxMembers || len(c.Coefficients) < 1 || len(c.Coefficients) > MaxMembers {
		return nil, fmt.Errorf("oprf: encode commitment: dealer %d with %d coefficients out of range", c.Dealer, len(c.Coefficients))
	}
	b := make([]byte, 0, 6+len(c.Coefficients)*ElementLength)
	b = append(b, wireVersion, kindCommitment)
	b = binary.BigEndian.AppendUint16(b, uint16(c.Dealer))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Coefficients)))
	b, err := appendElements(b, c.Coefficients)
	if err != nil {
		return nil, fmt.Errorf("oprf: encode commitment: %w", err)
	}
	return b, nil
}

// DecodeCommitment decodes a commitment for committee c, refusing any other
// threshold, dealers outside the committee and invalid elements.
func DecodeCommitment(data []byte, c Committee) (*Commitment, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	d := decoder{data: data, what: "commitment"}
	d.header(kindCommitment)
	dealer := d.u16()
	t := d.u16()
	if d.err == nil && t != c.T {
		d.fail(fmt.Errorf("%d coefficients, threshold is %d", t, c.T))
	}
	coeffs := d.elements(t)
	d.end()
	if d.err != nil {
		return nil, d.err
	}
	if err := c.checkMember(dealer, "dealer"); err != nil {
		return nil, fmt.Errorf("oprf: decode commitment: %w", err)
	}
	return &Commitment{Dealer: dealer, Coefficients: coeffs}, nil
}

// MarshalBinary encodes the share; the caller encrypts it for its recipient.
func (s *SecretShare) MarshalBinary() ([]byte, error) {
	if s.Dealer < 1 || s.Dealer > MaxMembers || s.Recipient < 1 || s.Recipient > MaxMembers {
		return nil, fmt.Errorf("oprf: encode share: dealer %d or recipient %d out of range", s.Dealer, s.Recipient)
	}
	if s.Value == nil || s.Value.Group() != g {
		return nil, errors.New("oprf: encode share: not a ristretto255 scalar")
	}
	v, err := s.Value.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("oprf: encode share: %w", err)
	}
	b := make([]byte, 0, 6+ScalarLength)
	b = append(b, wireVersion, kindShare)
	b = binary.BigEndian.AppendUint16(b, uint16(s.Dealer))
	b = binary.BigEndian.AppendUint16(b, uint16(s.Recipient))
	return append(b, v...), nil
}

// DecodeSecretShare decodes a share for committee c, refusing indices outside
// it and non-canonical scalars.
func DecodeSecretShare(data []byte, c Committee) (*SecretShare, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	d := decoder{data: data, what: "share"}
	d.header(kindShare)
	dealer := d.u16()
	recipient := d.u16()
	v := d.scalar()
	d.end()
	if d.err != nil {
		return nil, d.err
	}
	if err := c.checkMember(dealer, "dealer"); err != nil {
		return nil, fmt.Errorf("oprf: decode share: %w", err)
	}
	if err := c.checkMember(recipient, "recipient"); err != nil {
		return nil, fmt.Errorf("oprf: decode share: %w", err)
	}
	return &SecretShare{Dealer: dealer, Recipient: recipient, Value: v}, nil
}

// MarshalBinary encodes the request.
func (r *EvaluationRequest) MarshalBinary() ([]byte, error) {
	if err := r.Context.check(); err != nil {
		return nil, fmt.Errorf("oprf: encode request: %w", err)
	}
	if len(r.Elements) == 0 || len(r.Elements) > MaxBatch {
		return nil, fmt.Errorf("oprf: encode request: batch of %d points, want 1..%d", len(r.Elements), MaxBatch)
	}
	b := make([]byte, 0, 10+len(r.FederationID)+len(r.ParticipantID)+len(r.Elements)*ElementLength)
	b = append(b, wireVersion, kindRequest)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.FederationID)))
	b = append(b, r.FederationID...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.ParticipantID)))
	b = append(b, r.ParticipantID...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Elements)))
	b, err := appendElements(b, r.Elements)
	if err != nil {
		return nil, fmt.Errorf("oprf: encode request: %w", err)
	}
	return b, nil
}

// DecodeEvaluationRequest decodes a request of at most maxBatch points,
// refusing invalid ids, identity and non-canonical points. The ids are what
// the sender claims; see Context.
func DecodeEvaluationRequest(data []byte, maxBatch int) (*EvaluationRequest, error) {
	if maxBatch < 1 || maxBatch > MaxBatch {
		return nil, fmt.Errorf("oprf: decode request: batch cap %d, want 1..%d", maxBatch, MaxBatch)
	}
	d := decoder{data: data, what: "request"}
	d.header(kindRequest)
	fed := d.str()
	part := d.str()
	n := d.count(maxBatch)
	elems := d.elements(n)
	d.end()
	if d.err != nil {
		return nil, d.err
	}
	r := &EvaluationRequest{Context: Context{FederationID: fed, ParticipantID: part}, Elements: elems}
	if err := r.Context.check(); err != nil {
		return nil, fmt.Errorf("oprf: decode request: %w", err)
	}
	return r, nil
}

// MarshalBinary encodes the response with its proof.
func (r *EvaluationResponse) MarshalBinary() ([]byte, error) {
	if r.Member < 1 || r.Member > MaxMembers {
		return nil, fmt.Errorf("oprf: encode response: member %d outside 1..%d", r.Member, MaxMembers)
	}
	if len(r.Elements) == 0 || len(r.Elements) > MaxBatch {
		return nil, fmt.Errorf("oprf: encode response: batch of %d evaluations, want 1..%d", len(r.Elements), MaxBatch)
	}
	if r.proof == nil {
		return nil, errors.New("oprf: encode response: no proof")
	}
	proof, err := r.proof.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("oprf: encode response: proof: %w", err)
	}
	b := make([]byte, 0, 8+len(r.Elements)*ElementLength+ProofLength)
	b = append(b, wireVersion, kindResponse)
	b = binary.BigEndian.AppendUint16(b, uint16(r.Member))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Elements)))
	if b, err = appendElements(b, r.Elements); err != nil {
		return nil, fmt.Errorf("oprf: encode response: %w", err)
	}
	return append(b, proof...), nil
}

// DecodeEvaluationResponse decodes a response of at most maxBatch
// evaluations. It checks encodings only; Finalize checks the proof.
func DecodeEvaluationResponse(data []byte, maxBatch int) (*EvaluationResponse, error) {
	if maxBatch < 1 || maxBatch > MaxBatch {
		return nil, fmt.Errorf("oprf: decode response: batch cap %d, want 1..%d", maxBatch, MaxBatch)
	}
	d := decoder{data: data, what: "response"}
	d.header(kindResponse)
	member := d.u16()
	if d.err == nil && (member < 1 || member > MaxMembers) {
		d.fail(fmt.Errorf("member %d outside 1..%d", member, MaxMembers))
	}
	n := d.count(maxBatch)
	elems := d.elements(n)
	raw := d.take(ProofLength)
	d.end()
	if d.err != nil {
		return nil, d.err
	}
	proof := new(dleq.Proof)
	if err := proof.UnmarshalBinary(g, raw); err != nil {
		return nil, fmt.Errorf("oprf: decode response: proof: %w", err)
	}
	return &EvaluationResponse{Member: member, Elements: elems, proof: proof}, nil
}

func appendElements(b []byte, elems []Element) ([]byte, error) {
	for i, e := range elems {
		if err := checkElement(e); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		enc, err := e.MarshalBinaryCompress()
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		b = append(b, enc...)
	}
	return b, nil
}

// decoder reads fields in order and keeps the first error, so decoders read
// as a flat list of fields.
type decoder struct {
	data []byte
	what string
	err  error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("oprf: decode %s: %w", d.what, err)
	}
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.data) < n {
		d.fail(fmt.Errorf("truncated: need %d more bytes, have %d", n, len(d.data)))
		return nil
	}
	b := d.data[:n]
	d.data = d.data[n:]
	return b
}

func (d *decoder) header(kind byte) {
	b := d.take(2)
	if d.err != nil {
		return
	}
	if b[0] != wireVersion {
		d.fail(fmt.Errorf("wire version %d, want %d", b[0], wireVersion))
	} else if b[1] != kind {
		d.fail(fmt.Errorf("message kind %d, want %d", b[1], kind))
	}
}

func (d *decoder) u16() int {
	b := d.take(2)
	if d.err != nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

// count reads a batch length and checks it against the cap and the bytes
// left before anything is allocated.
func (d *decoder) count(maxBatch int) int {
	b := d.take(4)
	if d.err != nil {
		return 0
	}
	n := binary.BigEndian.Uint32(b)
	switch {
	case n == 0:
		d.fail(errors.New("empty batch"))
	case n > uint32(maxBatch):
		d.fail(fmt.Errorf("batch of %d points exceeds the cap of %d", n, maxBatch))
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.u16()
	if d.err == nil && n > MaxIDLength {
		d.fail(fmt.Errorf("id of %d bytes exceeds %d", n, MaxIDLength))
	}
	return string(d.take(n))
}

func (d *decoder) elements(n int) []Element {
	if d.err != nil {
		return nil
	}
	if len(d.data) < n*ElementLength {
		d.fail(fmt.Errorf("truncated: %d elements need %d bytes, have %d", n, n*ElementLength, len(d.data)))
		return nil
	}
	out := make([]Element, n)
	for i := range out {
		e := g.NewElement()
		// go-ristretto's decoding follows RFC 9496 and refuses non-canonical
		// encodings; the identity decodes, so it is refused separately.
		if err := e.UnmarshalBinary(d.take(ElementLength)); err != nil {
			d.fail(fmt.Errorf("element %d: not a canonical ristretto255 encoding", i))
			return nil
		}
		if e.IsIdentity() {
			d.fail(fmt.Errorf("element %d is the identity", i))
			return nil
		}
		out[i] = e
	}
	return out
}

func (d *decoder) scalar() Scalar {
	b := d.take(ScalarLength)
	if d.err != nil {
		return nil
	}
	s := g.NewScalar()
	if err := s.UnmarshalBinary(b); err != nil {
		d.fail(errors.New("not a canonical ristretto255 scalar"))
		return nil
	}
	return s
}

func (d *decoder) end() {
	if d.err == nil && len(d.data) != 0 {
		d.fail(fmt.Errorf("%d trailing bytes", len(d.data)))
	}
}
