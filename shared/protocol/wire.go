package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
)

// WireVersion is the version of the message envelope: 3 may carry BGV
// sums whose c1 travels as several seeds (a participant built before
// could not open them, so it is refused at its first frame instead); 2
// carries the per-feature vectors in binary (floatFields), 1 had them in
// the JSON.
const WireVersion = 3

// floatFields are the message's per-feature vectors, which travel as
// float64 bits after the sealed vectors rather than in the JSON header:
// parsing and printing them as text was most of the JSON's cost, a sixth of
// the server's CPU at 5,000 participants (docs/scale.md).
func floatFields(m *Message) [4]struct {
	name string
	v    *[]float64
} {
	return [4]struct {
		name string
		v    *[]float64
	}{{"W", &m.W}, {"HatW", &m.HatW}, {"DW", &m.DW}, {"DWCentered", &m.DWCentered}}
}

// Limits bound what DecodeMessage accepts.
type Limits struct {
	// MaxBytes bounds the whole frame.
	MaxBytes int
	// MaxChunks bounds the chunk indexes of a sealed vector (the layout's
	// chunk count).
	MaxChunks int
}

// DefaultLimits fit Fashion-MNIST-sized federations with room to spare.
var DefaultLimits = Limits{MaxBytes: 256 << 20, MaxChunks: 1 << 16}

// EncodeMessage writes one message as a binary frame:
//
//	"hm" version header-length(uint32) header(JSON of the plaintext fields)
//	sealed-length(uint32) sealed-vector alpha-length(uint32) alpha-vector
//	then for W, HatW, DW, DWCentered: length(uint32) float64s (little endian)
//
// with the sealed vectors in seal.MarshalVec's format (empty when absent),
// then, only when Keys holds messages of the threshold key layer,
//
//	keys-count(uint32) then per message its length(uint32) and bytes
//
// (frames without them are those of a shared-key federation, unchanged).
// JSON cannot carry NaN or infinities, so encoding refuses them (in the
// per-feature vectors as well).
func EncodeMessage(s seal.Scheme, m Message) ([]byte, error) {
	return AppendMessage(nil, s, m)
}

// AppendMessage appends the frame of m (EncodeMessage's) to dst, growing
// it once, so that a sender may reuse its buffers (the server's writers
// draw them from a pool).
func AppendMessage(dst []byte, s seal.Scheme, m Message) ([]byte, error) {
	hdr, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("wire: %s message: %w", m.Kind, err)
	}
	vecs := []seal.Vec{m.Sealed, m.Alpha}
	size := 7 + len(hdr)
	for _, v := range vecs {
		size += 4
		if v != nil {
			size += seal.VecSize(s, v)
		}
	}
	fields := floatFields(&m)
	for _, f := range fields {
		if !finiteAll(*f.v) {
			return nil, fmt.Errorf("wire: %s message: %s holds a NaN or an infinity", m.Kind, f.name)
		}
		size += 4 + 8*len(*f.v)
	}
	if len(m.Keys) > 0 {
		size += 4
		for _, k := range m.Keys {
			size += 4 + len(k)
		}
	}
	// One buffer of the frame's size: the ciphertexts are copied into it
	// once (the server encodes every message it sends).
	out := slices.Grow(dst, size)
	out = append(out, 'h', 'm', WireVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hdr)))
	out = append(out, hdr...)
	for _, v := range vecs {
		at := len(out)
		out = append(out, 0, 0, 0, 0) // the vector's length, once written
		if v != nil {
			if out, err = seal.AppendVec(out, s, v); err != nil {
				return nil, fmt.Errorf("wire: %s message: %w", m.Kind, err)
			}
		}
		binary.LittleEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	for _, f := range fields {
		out = binary.LittleEndian.AppendUint32(out, uint32(8*len(*f.v)))
		for _, x := range *f.v {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
		}
	}
	if len(m.Keys) > 0 {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(m.Keys)))
		for _, k := range m.Keys {
			out = binary.LittleEndian.AppendUint32(out, uint32(len(k)))
			out = append(out, k...)
		}
	}
	return out, nil
}

// MaxKeys bounds the key-layer messages one frame carries: a switch
// request's targets and chunks, a member's Shamir shares.
const MaxKeys = 1 << 16

// FrameParts splits the size of a frame of EncodeMessage into its
// plaintext (the JSON header of kind, round and plaintext numbers, and the
// per-feature vectors) and the rest (ciphertexts under a sealing scheme, and
// the key layer's messages). It reads only the lengths; ok is false if they
// do not fit the frame.
func FrameParts(frame []byte) (plain, sealed int, ok bool) {
	hdr, floats, ok := frameSections(frame)
	if !ok {
		return 0, 0, false
	}
	plain = hdr + floats[1] - floats[0]
	return plain, len(frame) - plain, true
}

// FramePlain returns the plaintext parts of a frame (FrameParts), in their
// order, in a new slice.
func FramePlain(frame []byte) ([]byte, bool) {
	hdr, floats, ok := frameSections(frame)
	if !ok {
		return nil, false
	}
	return append(append([]byte(nil), frame[:hdr]...), frame[floats[0]:floats[1]]...), true
}

// frameSections returns where a frame's JSON header ends and where its
// per-feature vectors lie, from the lengths alone.
func frameSections(frame []byte) (hdr int, floats [2]int, ok bool) {
	if len(frame) < 7 || frame[0] != 'h' || frame[1] != 'm' {
		return 0, floats, false
	}
	at := 3
	skip := func() bool {
		if len(frame)-at < 4 {
			return false
		}
		n := int(binary.LittleEndian.Uint32(frame[at:]))
		if n > len(frame)-at-4 {
			return false
		}
		at += 4 + n
		return true
	}
	if !skip() {
		return 0, floats, false
	}
	hdr = at
	for range 2 { // the sealed vectors
		if !skip() {
			return 0, floats, false
		}
	}
	floats[0] = at
	for range len(floatFields(&Message{})) {
		if !skip() {
			return 0, floats, false
		}
	}
	floats[1] = at
	return hdr, floats, true
}

// DecodeMessage reads a frame of EncodeMessage. It checks the magic, the
// version, every length against the frame and the limits, the JSON header
// strictly (unknown fields, trailing data and non-finite numbers are
// errors) and the sealed vectors through the scheme's decoder. It returns
// an error, never panics, whatever the bytes.
func DecodeMessage(s seal.Scheme, b []byte, lim Limits) (Message, error) {
	var m Message
	if lim.MaxBytes > 0 && len(b) > lim.MaxBytes {
		return m, fmt.Errorf("wire: frame of %d bytes exceeds the limit of %d", len(b), lim.MaxBytes)
	}
	if len(b) < 7 || b[0] != 'h' || b[1] != 'm' {
		return m, errors.New("wire: frame does not start with the magic \"hm\"")
	}
	if b[2] != WireVersion {
		return m, fmt.Errorf("wire: envelope version %d, this build speaks %d", b[2], WireVersion)
	}
	b = b[3:]
	next := func(what string) ([]byte, error) {
		if len(b) < 4 {
			return nil, fmt.Errorf("wire: frame ends before the length of the %s", what)
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(n) > uint64(len(b)) {
			return nil, fmt.Errorf("wire: %s claims %d bytes, %d left", what, n, len(b))
		}
		part := b[:n]
		b = b[n:]
		return part, nil
	}
	hdr, err := next("header")
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("wire: header: %w", err)
	}
	if dec.More() {
		return Message{}, errors.New("wire: header: data after the JSON object")
	}
	for _, f := range []struct {
		name string
		dst  *seal.Vec
	}{{"sealed vector", &m.Sealed}, {"sealed dual values", &m.Alpha}} {
		part, err := next(f.name)
		if err != nil {
			return Message{}, err
		}
		if len(part) == 0 {
			continue
		}
		if *f.dst, err = seal.UnmarshalVec(s, part, lim.MaxChunks); err != nil {
			return Message{}, fmt.Errorf("wire: %s of a %s message: %w", f.name, m.Kind, err)
		}
	}
	for _, f := range floatFields(&m) {
		part, err := next(f.name)
		if err != nil {
			return Message{}, err
		}
		if len(part)%8 != 0 {
			return Message{}, fmt.Errorf("wire: %s message: %s of %d bytes, not a whole number of float64", m.Kind, f.name, len(part))
		}
		if len(part) == 0 {
			continue
		}
		v := make([]float64, len(part)/8)
		for i := range v {
			if v[i] = math.Float64frombits(binary.LittleEndian.Uint64(part[8*i:])); math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
				return Message{}, fmt.Errorf("wire: %s message: %s[%d] is %v", m.Kind, f.name, i, v[i])
			}
		}
		*f.v = v
	}
	if len(b) > 0 {
		// The key layer's messages; each is decoded and checked by its
		// receiver, which knows the federation's key.
		if len(b) < 4 {
			return Message{}, fmt.Errorf("wire: %d bytes after the message", len(b))
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if n == 0 || n > MaxKeys || uint64(n)*4 > uint64(len(b)) {
			return Message{}, fmt.Errorf("wire: %s message: %d key messages in %d bytes (want 1 to %d)", m.Kind, n, len(b), MaxKeys)
		}
		m.Keys = make([][]byte, n)
		for i := range m.Keys {
			part, err := next(fmt.Sprintf("key message %d", i))
			if err != nil {
				return Message{}, err
			}
			m.Keys[i] = bytes.Clone(part) // the server reuses the frame's buffer
		}
	}
	if len(b) != 0 {
		return Message{}, fmt.Errorf("wire: %d bytes after the message", len(b))
	}
	return m, nil
}

// finiteAll reports whether v holds no NaN and no infinity (JSON could not
// carry them, and no per-feature vector may hold them).
func finiteAll(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
