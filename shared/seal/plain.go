package seal

import "fmt"

// Plaintext is the scheme that seals nothing: chunks carry their values in
// the clear. It exists so that the protocol can be developed, tested and
// compared without encryption; it gives the server no privacy at all.
type Plaintext struct {
	// Len is the chunk length; 0 means 4096.
	Len int
}

// PlainChunk is a Plaintext chunk.
type PlainChunk struct{ V []float64 }

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
	if len(pc.V) != p.ChunkLen() {
		return nil, fmt.Errorf("plaintext: chunk of %d slots, want %d", len(pc.V), p.ChunkLen())
	}
	return pc, nil
}

// Add implements Scheme.
func (p Plaintext) Add(dst, src Chunk) error {
	d, err := p.chunk(dst)
	if err != nil {
		return err
	}
	s, err := p.chunk(src)
	if err != nil {
		return err
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

// Mask implements Scheme.
func (p Plaintext) Mask(c Chunk, keep []int) (Chunk, error) {
	pc, err := p.chunk(c)
	if err != nil {
		return nil, err
	}
	out := &PlainChunk{V: make([]float64, len(pc.V))}
	for _, o := range keep {
		if o < 0 || o >= len(pc.V) {
			return nil, fmt.Errorf("plaintext: mask offset %d outside chunk", o)
		}
		out.V[o] = pc.V[o]
	}
	return out, nil
}

// MulConst implements Scheme.
func (p Plaintext) MulConst(c Chunk, g float64) (Chunk, error) {
	pc, err := p.chunk(c)
	if err != nil {
		return nil, err
	}
	out := &PlainChunk{V: make([]float64, len(pc.V))}
	for i, v := range pc.V {
		out.V[i] = g * v
	}
	return out, nil
}

// WireSize implements Scheme: 8 bytes a slot.
func (p Plaintext) WireSize(c Chunk) int { return 8 * p.ChunkLen() }

// PlainKey is the Plaintext scheme's key.
type PlainKey struct{ S Plaintext }

// Scheme implements Key.
func (k PlainKey) Scheme() Scheme { return k.S }

// Seal implements Key.
func (k PlainKey) Seal(vals []float64) (Chunk, error) {
	if len(vals) != k.S.ChunkLen() {
		return nil, fmt.Errorf("plaintext: seal %d values, want %d", len(vals), k.S.ChunkLen())
	}
	return &PlainChunk{V: append([]float64(nil), vals...)}, nil
}

// Open implements Key.
func (k PlainKey) Open(c Chunk) ([]float64, error) {
	pc, err := k.S.chunk(c)
	if err != nil {
		return nil, err
	}
	return append([]float64(nil), pc.V...), nil
}
