package seal

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Plaintext is the scheme that seals nothing: chunks carry their values in
// the clear. It exists so that the protocol can be developed, tested and
// compared without encryption; it gives the server no privacy at all.
type Plaintext struct {
	// Len is the chunk length, a power of two; 0 means 4096, as BGV.
	Len int
}

// PlainChunk is a Plaintext chunk: the values of its first len(V) slots
// (1 to ChunkLen; the others are zero).
type PlainChunk struct{ V []float64 }

// Len is the number of values the chunk seals.
func (pc *PlainChunk) Len() int { return len(pc.V) }

// Name implements Scheme.
func (p Plaintext) Name() string { return "plaintext" }

// ChunkLen implements Scheme.
func (p Plaintext) ChunkLen() int {
	if p.Len <= 0 {
		return 4096
	}
	return p.Len
}

func (p Plaintext) chunk(c Chunk) (*PlainChunk, error) {
	pc, ok := c.(*PlainChunk)
	if !ok || pc == nil {
		return nil, fmt.Errorf("plaintext: chunk of type %T", c)
	}
	if len(pc.V) < 1 || len(pc.V) > p.ChunkLen() {
		return nil, fmt.Errorf("plaintext: chunk of %d values, want 1 to %d", len(pc.V), p.ChunkLen())
	}
	return pc, nil
}

// Add implements Scheme; as BGV's, it refuses chunks of other lengths.
func (p Plaintext) Add(dst, src Chunk) error {
	d, err := p.chunk(dst)
	if err != nil {
		return err
	}
	s, err := p.chunk(src)
	if err != nil {
		return err
	}
	if len(d.V) != len(s.V) {
		return fmt.Errorf("plaintext: add a chunk of %d values to one of %d: summands must seal the same slots", len(s.V), len(d.V))
	}
	for i, v := range s.V {
		d.V[i] += v
	}
	return nil
}

// Clone implements Scheme.
func (p Plaintext) Clone(c Chunk) Chunk {
	pc := c.(*PlainChunk)
	return &PlainChunk{V: append([]float64(nil), pc.V...)}
}

// Trim implements Trimmer.
func (p Plaintext) Trim(c Chunk, n int) (Chunk, error) {
	pc, err := p.chunk(c)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > len(pc.V) {
		return nil, fmt.Errorf("plaintext: trim a chunk of %d values to %d", len(pc.V), n)
	}
	return &PlainChunk{V: append([]float64(nil), pc.V[:n]...)}, nil
}

// WireSize implements Scheme: the header, the count and 8 bytes a value.
func (p Plaintext) WireSize(c Chunk) int {
	pc, ok := c.(*PlainChunk)
	if !ok || pc == nil {
		return 0
	}
	return chunkHeader + 2 + 8*len(pc.V)
}

// plainID identifies the plaintext scheme on the wire.
const plainID = 0

// Marshal implements Scheme: the header of a BGV chunk with parameter id 0
// and log2 of the chunk length, the number of values (uint16), then the
// values as float64 bits. Format version 1 (still read) had no count: every
// slot's value.
func (p Plaintext) Marshal(c Chunk) ([]byte, error) {
	return p.AppendChunk(make([]byte, 0, p.WireSize(c)), c)
}

// AppendChunk implements Scheme.
func (p Plaintext) AppendChunk(out []byte, c Chunk) ([]byte, error) {
	pc, err := p.chunk(c)
	if err != nil {
		return nil, err
	}
	out = append(out, 'h', 'c', 2, plainID, byte(bits.Len(uint(p.ChunkLen()))-1), 0, 1, 0)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(pc.V)))
	for _, v := range pc.V {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
	}
	return out, nil
}

// Unmarshal implements Scheme; it refuses non-finite values.
func (p Plaintext) Unmarshal(b []byte) (Chunk, error) {
	cl := p.ChunkLen()
	if len(b) < chunkHeader {
		return nil, fmt.Errorf("plaintext: chunk of %d bytes is shorter than its header", len(b))
	}
	if b[0] != 'h' || b[1] != 'c' || (b[2] != 1 && b[2] != 2) || b[3] != plainID || 1<<b[4] != cl || b[5] != 0 || b[6] != 1 || b[7] != 0 {
		return nil, fmt.Errorf("plaintext: chunk header % x does not match the plaintext scheme of %d slots", b[:chunkHeader], cl)
	}
	n, at := cl, chunkHeader
	if b[2] == 2 {
		if len(b) < chunkHeader+2 {
			return nil, fmt.Errorf("plaintext: chunk of %d bytes ends before its value count", len(b))
		}
		if n, at = int(binary.LittleEndian.Uint16(b[chunkHeader:])), chunkHeader+2; n < 1 || n > cl {
			return nil, fmt.Errorf("plaintext: chunk of %d values, want 1 to %d", n, cl)
		}
	}
	if len(b) != at+8*n {
		return nil, fmt.Errorf("plaintext: chunk of %d bytes, want %d", len(b), at+8*n)
	}
	out := &PlainChunk{V: make([]float64, n)}
	for i := range out.V {
		v := math.Float64frombits(binary.LittleEndian.Uint64(b[at+8*i:]))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("plaintext: slot %d holds %v, not a finite number", i, v)
		}
		out.V[i] = v
	}
	return out, nil
}

// PlainKey is the Plaintext scheme's key.
type PlainKey struct{ S Plaintext }

// Scheme implements Key.
func (k PlainKey) Scheme() Scheme { return k.S }

// Seal implements Key: 1 to ChunkLen values.
func (k PlainKey) Seal(vals []float64) (Chunk, error) {
	if len(vals) < 1 || len(vals) > k.S.ChunkLen() {
		return nil, fmt.Errorf("plaintext: seal %d values, want 1 to %d", len(vals), k.S.ChunkLen())
	}
	out := &PlainChunk{V: make([]float64, len(vals))}
	for i, v := range vals {
		out.V[i] = Quantize(v) // the grid BGV carries: same sums, bit for bit
	}
	return out, nil
}

// Open implements Key.
func (k PlainKey) Open(c Chunk) ([]float64, error) {
	pc, err := k.S.chunk(c)
	if err != nil {
		return nil, err
	}
	return append([]float64(nil), pc.V...), nil
}
