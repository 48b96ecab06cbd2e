// Package seal is the one interface through which every value that must not
// reach the server in plaintext travels: dual values and their updates,
// per-sample inner products and squared norms (docs/design.md section 3).
//
// Values live in slots of a federation-wide layout (one slot per sample);
// slots are grouped in chunks of ChunkLen, and a chunk is what a scheme
// seals: one ciphertext in a homomorphic scheme. The server only adds sealed
// chunks and forwards them; the key to open them never leaves the
// participants. The layout gives every chunk to the samples of one holder set
// (PadLayout), so a client is only ever sent chunks whose every slot is a
// sample it holds.
//
// Every sealed value is a fixed-point number, a multiple of 2^-FracBits:
// sums of such values are exact in the homomorphic scheme and in float64
// alike, so an encrypted federation computes bit for bit what the plaintext
// one does.
package seal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"sync"
)

// Chunk is one sealed chunk; its concrete type belongs to the scheme.
type Chunk interface{}

// Scheme holds the operations the server may run without the key.
type Scheme interface {
	Name() string
	// ChunkLen is the number of slots one chunk holds.
	ChunkLen() int
	// Add sets dst = dst + src.
	Add(dst, src Chunk) error
	// Clone returns an independent copy.
	Clone(c Chunk) Chunk
	// WireSize is the number of bytes the chunk takes on the wire.
	WireSize(c Chunk) int
	// Marshal encodes a chunk for the wire.
	Marshal(c Chunk) ([]byte, error)
	// AppendChunk appends Marshal's encoding of c to dst (a frame being
	// built: no buffer of its own).
	AppendChunk(dst []byte, c Chunk) ([]byte, error)
	// Unmarshal decodes and validates a chunk; it returns an error, never
	// panics, on malformed or mismatched input.
	Unmarshal(b []byte) (Chunk, error)
}

// FracBits is the fixed-point resolution of sealed values.
const FracBits = 28

// ErrRange is a value no scheme can seal exactly: data too large, which
// reconnecting does not change.
var ErrRange = errors.New("beyond the sealable range")

// MaxAbs bounds the magnitude of one sealed value; sums of four stay
// within the schemes' exact range (2^17). Squared row norms are the largest
// values sealed: scale features so that they stay below it.
const MaxAbs = 1 << 15

const fixedOne = 1 << FracBits

// Quantize rounds v to the fixed-point grid of sealed values. Participants
// apply it to whatever they will compare with a sealed sum.
func Quantize(v float64) float64 { return math.Round(v*fixedOne) / fixedOne }

// Key seals and opens chunks; only participants hold one.
type Key interface {
	Scheme() Scheme
	// Seal seals the values of a chunk's first len(vals) slots, 1 to
	// ChunkLen of them: the chunk's other slots are zero and cost nothing.
	Seal(vals []float64) (Chunk, error)
	// Open returns the values a chunk seals (as many as it was sealed
	// with).
	Open(c Chunk) ([]float64, error)
}

// Trimmer is a scheme whose chunks can be cut to their first n values.
type Trimmer interface {
	Trim(c Chunk, n int) (Chunk, error)
}

// Trim returns c cut to its first n values if the scheme's chunks can be
// cut and c seals more than n, else c. A checkpoint written when every
// chunk sealed ChunkLen values is cut to its layout this way, so that it
// adds to the chunks sealed since.
func Trim(s Scheme, c Chunk, n int) (Chunk, error) {
	t, ok := s.(Trimmer)
	if !ok {
		return c, nil
	}
	if l := chunkLen(c); l <= n {
		return c, nil
	}
	return t.Trim(c, n)
}

// Spans reports whether the scheme's chunks seal only the values of their
// span (SealSlots); the others (threshold keys) always seal ChunkLen.
func Spans(s Scheme) bool {
	_, ok := s.(Trimmer)
	return ok
}

// Len is the number of values chunk c of scheme s seals.
func Len(s Scheme, c Chunk) int {
	if n := chunkLen(c); n != math.MaxInt {
		return n
	}
	return s.ChunkLen()
}

// chunkLen is the number of values a chunk seals (MaxInt for a chunk whose
// scheme always seals every slot, and so has no Len).
func chunkLen(c Chunk) int {
	if l, ok := c.(interface{ Len() int }); ok {
		return l.Len()
	}
	return math.MaxInt
}

// Vec is a sealed vector over the slot layout: chunk index -> chunk. A chunk
// that is absent holds zeros, as do the slots of a chunk past the values it
// seals.
type Vec map[int]Chunk

// WireSize returns the bytes of all chunks plus 4 bytes of index each.
func (v Vec) WireSize(s Scheme) int {
	n := 0
	for _, c := range v {
		n += 4 + s.WireSize(c)
	}
	return n
}

// Indexes returns the chunk indexes in ascending order.
func (v Vec) Indexes() []int {
	out := make([]int, 0, len(v))
	for i := range v {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// SealSlots seals vals[i], quantized, into slot slots[i]; slots not named
// are zero, chunks without a named slot are left out. It refuses non-finite
// values and values beyond MaxAbs, which no scheme can carry exactly.
//
// span names the slots the vector is laid over (nil: slots itself): each
// chunk seals its slots from the chunk's first to the last slot of span in
// it, and nothing after, so a small group's chunk costs its values, not
// ChunkLen. Chunks that are summed must be sealed over the same span there
// (a sample group's slots, a Gram's triangle, every feature), since a scheme
// adds only chunks of one length; a slot outside the span is refused.
func SealSlots(k Key, slots []int, vals []float64, span []int) (Vec, error) {
	if len(slots) != len(vals) {
		return nil, fmt.Errorf("seal: %d slots but %d values", len(slots), len(vals))
	}
	cl := k.Scheme().ChunkLen()
	lo, hi, err := chunkRange(slots, cl)
	if err != nil || hi < lo {
		return Vec{}, err
	}
	if span == nil {
		span = slots
	}
	// A participant's slots lie in a few neighbouring chunks: index the
	// buffers by chunk rather than hashing every slot; chunk lengths are
	// powers of two, so shifts do what divisions would (a third of the
	// time here).
	shift, mask := chunkBits(cl)
	ends := make([]int, hi-lo+1) // per chunk: its sealed length
	for _, s := range span {
		if j := s>>shift - lo; s >= 0 && j >= 0 && j < len(ends) {
			ends[j] = max(ends[j], s&mask+1)
		}
	}
	plain := make([][]float64, hi-lo+1)
	for i, s := range slots {
		v := vals[i]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("seal: slot %d: value %v is not finite", s, v)
		}
		if math.Abs(v) > MaxAbs {
			return nil, fmt.Errorf("seal: slot %d: value %g is %w ±%d", s, v, ErrRange, MaxAbs)
		}
		j := s>>shift - lo
		if s&mask >= ends[j] {
			return nil, fmt.Errorf("seal: slot %d lies past the span of chunk %d (%d slots)", s, lo+j, ends[j])
		}
		p := plain[j]
		if p == nil {
			p = make([]float64, ends[j])
			plain[j] = p
		}
		p[s&mask] += v
	}
	out := Vec{}
	for j, p := range plain {
		if p == nil {
			continue
		}
		c, err := k.Seal(p) // keys quantize
		if err != nil {
			return nil, fmt.Errorf("seal: chunk %d: %w", lo+j, err)
		}
		out[lo+j] = c
	}
	return out, nil
}

// Span returns the slots 0 to n-1: the span of a vector over every one of n
// features.
func Span(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// chunkBits returns the shift and mask that split a slot into chunk and
// offset for a power-of-two chunk length.
func chunkBits(cl int) (shift uint, mask int) {
	if cl <= 0 || cl&(cl-1) != 0 {
		panic(fmt.Sprintf("seal: chunk length %d is not a power of two", cl))
	}
	return uint(bits.TrailingZeros(uint(cl))), cl - 1
}

// chunkRange returns the first and last chunk the slots touch.
func chunkRange(slots []int, cl int) (lo, hi int, err error) {
	lo, hi = math.MaxInt, -1
	for _, s := range slots {
		if s < 0 {
			return 0, -1, fmt.Errorf("seal: negative slot %d", s)
		}
		lo, hi = min(lo, s/cl), max(hi, s/cl)
	}
	return lo, hi, nil
}

// OpenSlots opens the values in the given slots of v.
func OpenSlots(k Key, v Vec, slots []int) ([]float64, error) {
	cl := k.Scheme().ChunkLen()
	out := make([]float64, len(slots))
	lo, hi, err := chunkRange(slots, cl)
	if err != nil || hi < lo {
		return out, err
	}
	shift, mask := chunkBits(cl)
	opened := make([][]float64, hi-lo+1)
	done := make([]bool, hi-lo+1)
	for i, s := range slots {
		j := s>>shift - lo
		if !done[j] {
			done[j] = true
			if c, ok := v[lo+j]; ok {
				if opened[j], err = k.Open(c); err != nil {
					return nil, fmt.Errorf("seal: open chunk %d: %w", lo+j, err)
				}
			}
		}
		if vals := opened[j]; s&mask < len(vals) {
			out[i] = vals[s&mask]
		}
	}
	return out, nil
}

// AddInto sets dst = dst + src chunk by chunk. It never changes a chunk in
// place: a chunk of dst that receives a sum is replaced by a new one, so
// chunks already handed out (Restrict) keep their values, and src stays
// independent of dst.
func AddInto(s Scheme, dst, src Vec) error { return addChunks(s, dst, src, true) }

// Sum returns the sum of the vectors, in new chunks: the inputs stay as
// they were (one copy per chunk of the sum, against a rule every caller
// would otherwise have to keep).
func Sum(s Scheme, vs ...Vec) (Vec, error) {
	out := Vec{}
	for _, v := range vs {
		if err := Accumulate(s, out, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Accumulate adds src into the running sum acc, changing acc's chunks in
// place (so they must be acc's own: chunks from Sum or Accumulate that were
// not handed out yet) and copying the chunks of src that acc lacks: src
// stays as it was and may be dropped at once. Sums do not depend on the
// order of the additions, so a sum built as replies arrive equals the one
// built from all of them at the end.
func Accumulate(s Scheme, acc, src Vec) error { return addChunks(s, acc, src, false) }

// addChunks adds src into dst chunk by chunk, into a copy of dst's chunk
// if fresh is set.
func addChunks(s Scheme, dst, src Vec, fresh bool) error {
	for ci, c := range src {
		d, ok := dst[ci]
		if !ok {
			dst[ci] = s.Clone(c)
			continue
		}
		if fresh {
			d = s.Clone(d)
		}
		if err := s.Add(d, c); err != nil {
			return fmt.Errorf("seal: add chunk %d: %w", ci, err)
		}
		dst[ci] = d
	}
	return nil
}

// Restrict returns the part of v a client holding the given slots may see:
// the chunks that cover its slots, shared with v (treat both as read-only
// while the result is in flight). Under PadLayout those chunks carry nothing
// but samples the client holds.
func Restrict(s Scheme, v Vec, slots []int) Vec {
	cl := s.ChunkLen()
	out := Vec{}
	for _, sl := range slots {
		ci := sl / cl
		if _, done := out[ci]; done {
			continue
		}
		if c, ok := v[ci]; ok {
			out[ci] = c
		}
	}
	return out
}

// PadLayout lays out sample groups of the given sizes, each starting on a
// chunk boundary, and returns each group's first slot and the total number
// of slots. Chunks then never mix samples of different holder sets, so no
// client can open another's values: no homomorphic masking (which would cost
// a ciphertext level) is needed, at the price of the padding slots.
func PadLayout(chunkLen int, sizes []int) (starts []int, total int) {
	starts = make([]int, len(sizes))
	for i, n := range sizes {
		starts[i] = total
		total += (n + chunkLen - 1) / chunkLen * chunkLen
	}
	return starts, total
}

// MarshalVec encodes a sealed vector: "hv", version 1, the chunk count, then
// for each chunk in ascending index order its index, byte length and bytes
// (all counts uint32 little endian).
func MarshalVec(s Scheme, v Vec) ([]byte, error) {
	return AppendVec(make([]byte, 0, VecSize(s, v)), s, v)
}

// VecSize is the length of MarshalVec's encoding of v.
func VecSize(s Scheme, v Vec) int {
	size := 7
	for _, c := range v {
		if c != nil { // MarshalVec refuses it
			size += 8 + s.WireSize(c)
		}
	}
	return size
}

// AppendVec appends MarshalVec's encoding of v to dst. Sized with VecSize,
// dst takes a message's ciphertexts without growing: a Gram's vector runs
// to megabytes, and growing by appends copied it about twice over.
func AppendVec(dst []byte, s Scheme, v Vec) ([]byte, error) {
	out := append(dst, 'h', 'v', 1)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(v)))
	for _, ci := range v.Indexes() {
		out = binary.LittleEndian.AppendUint32(out, uint32(ci))
		at := len(out)
		out = append(out, 0, 0, 0, 0) // the chunk's length, once written
		var err error
		if out, err = s.AppendChunk(out, v[ci]); err != nil {
			return nil, fmt.Errorf("seal: chunk %d: %w", ci, err)
		}
		binary.LittleEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	return out, nil
}

// WriteVec writes AppendVec's encoding of v to w a chunk at a time, through
// one chunk-sized buffer: a checkpoint's dual values (80 MB at 5,000
// participants) reach the disk without a copy of them all in memory.
func WriteVec(w io.Writer, s Scheme, v Vec) error {
	buf := binary.LittleEndian.AppendUint32([]byte{'h', 'v', 1}, uint32(len(v)))
	for _, ci := range v.Indexes() {
		if _, err := w.Write(buf); err != nil {
			return err
		}
		buf = binary.LittleEndian.AppendUint32(buf[:0], uint32(ci))
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = s.AppendChunk(buf, v[ci]); err != nil {
			return fmt.Errorf("seal: chunk %d: %w", ci, err)
		}
		binary.LittleEndian.PutUint32(buf[4:], uint32(len(buf)-8))
	}
	_, err := w.Write(buf)
	return err
}

// UnmarshalVec decodes a sealed vector of at most maxChunks chunks, each
// index below maxChunks, indexes strictly ascending.
func UnmarshalVec(s Scheme, b []byte, maxChunks int) (Vec, error) {
	if len(b) < 7 || b[0] != 'h' || b[1] != 'v' {
		return nil, errors.New("seal: sealed vector does not start with the magic \"hv\"")
	}
	if b[2] != 1 {
		return nil, fmt.Errorf("seal: sealed vector format version %d, want 1", b[2])
	}
	n := binary.LittleEndian.Uint32(b[3:])
	if int64(n) > int64(maxChunks) {
		return nil, fmt.Errorf("seal: sealed vector of %d chunks, at most %d allowed", n, maxChunks)
	}
	b = b[7:]
	out := make(Vec, n)
	last := -1
	for i := 0; i < int(n); i++ {
		if len(b) < 8 {
			return nil, fmt.Errorf("seal: sealed vector ends inside the header of chunk %d", i)
		}
		ci := binary.LittleEndian.Uint32(b)
		size := binary.LittleEndian.Uint32(b[4:])
		b = b[8:]
		if int64(ci) >= int64(maxChunks) || int(ci) <= last {
			return nil, fmt.Errorf("seal: chunk index %d out of order or beyond %d", ci, maxChunks)
		}
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("seal: chunk %d claims %d bytes, %d left", ci, size, len(b))
		}
		c, err := s.Unmarshal(b[:size])
		if err != nil {
			return nil, fmt.Errorf("seal: chunk %d: %w", ci, err)
		}
		out[int(ci)] = c
		last = int(ci)
		b = b[size:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("seal: %d bytes after the last chunk", len(b))
	}
	return out, nil
}

// KeyPurpose is the label under which a federation secret derives the seed
// of the homomorphic secret key (secret.Secret.Derive).
const KeyPurpose = "hyfed homomorphic secret key v1"

// NewKeyFor returns a key of scheme s from a 32-byte seed: a BGV secret key
// derived from it, or the plaintext scheme's key (which ignores it).
func NewKeyFor(s Scheme, seed [32]byte) (Key, error) {
	switch s := s.(type) {
	case *BGV:
		return s.NewKey(seed)
	case Plaintext:
		return PlainKey{S: s}, nil
	}
	return nil, fmt.Errorf("seal: no keys for scheme %s", s.Name())
}

// ByName returns the scheme "bgv" (homomorphic, the default),
// "bgv-threshold" (ThresholdScheme: sealed under a threshold key's
// collective key) or "plaintext" (no privacy; for comparisons).
//
// Every "bgv" it returns is one shared value: the parameters are fixed and
// immutable, and building them costs ~250 kB of heap, which a server with
// many federations would otherwise pay per federation.
func ByName(name string) (Scheme, error) {
	switch name {
	case "bgv", "":
		return sharedBGV()
	case "plaintext":
		return Plaintext{}, nil
	case "bgv-threshold":
		return ThresholdScheme()
	}
	return nil, fmt.Errorf("seal: unknown scheme %q (want bgv, bgv-threshold or plaintext)", name)
}

// sharedBGV is the one BGV scheme ByName hands out.
var sharedBGV = sync.OnceValues(func() (Scheme, error) { return NewBGV() })
