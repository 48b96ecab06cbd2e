// Package seal is the one interface through which every value that must not
// reach the server in plaintext travels: dual values and their updates,
// per-sample inner products and squared norms (DESIGN.md 3).
//
// Values live in slots of a federation-wide layout (one slot per sample);
// slots are grouped in chunks of ChunkLen, and a chunk is what a scheme
// seals: one ciphertext in a homomorphic scheme. The server only adds sealed
// chunks, masks them down to the slots a client may see, and scales them by
// public constants; the key to open them never leaves the participants.
package seal

import (
	"fmt"
	"math"
	"sort"
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
	// Mask returns a chunk that keeps only the given slot offsets (0 <=
	// off < ChunkLen) and carries nothing decryptable about the others.
	Mask(c Chunk, keep []int) (Chunk, error)
	// MulConst returns c scaled by the public constant g.
	MulConst(c Chunk, g float64) (Chunk, error)
	// WireSize is the number of bytes the chunk takes on the wire.
	WireSize(c Chunk) int
}

// Key seals and opens chunks; only participants hold one.
type Key interface {
	Scheme() Scheme
	// Seal seals exactly ChunkLen values.
	Seal(vals []float64) (Chunk, error)
	// Open returns the ChunkLen values of a chunk.
	Open(c Chunk) ([]float64, error)
}

// Vec is a sealed vector over the slot layout: chunk index -> chunk. A chunk
// that is absent holds zeros.
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

// SealSlots seals vals[i] into slot slots[i]; slots not named are zero. It
// refuses non-finite values, which no scheme can carry.
func SealSlots(k Key, slots []int, vals []float64) (Vec, error) {
	if len(slots) != len(vals) {
		return nil, fmt.Errorf("seal: %d slots but %d values", len(slots), len(vals))
	}
	cl := k.Scheme().ChunkLen()
	plain := map[int][]float64{}
	for i, s := range slots {
		if s < 0 {
			return nil, fmt.Errorf("seal: negative slot %d", s)
		}
		if math.IsNaN(vals[i]) || math.IsInf(vals[i], 0) {
			return nil, fmt.Errorf("seal: slot %d: value %v is not finite", s, vals[i])
		}
		ci := s / cl
		p := plain[ci]
		if p == nil {
			p = make([]float64, cl)
			plain[ci] = p
		}
		p[s%cl] += vals[i]
	}
	out := make(Vec, len(plain))
	for ci, p := range plain {
		c, err := k.Seal(p)
		if err != nil {
			return nil, fmt.Errorf("seal: chunk %d: %w", ci, err)
		}
		out[ci] = c
	}
	return out, nil
}

// OpenSlots opens the values in the given slots of v.
func OpenSlots(k Key, v Vec, slots []int) ([]float64, error) {
	cl := k.Scheme().ChunkLen()
	opened := map[int][]float64{}
	out := make([]float64, len(slots))
	for i, s := range slots {
		ci := s / cl
		vals, ok := opened[ci]
		if !ok {
			c, present := v[ci]
			if present {
				var err error
				if vals, err = k.Open(c); err != nil {
					return nil, fmt.Errorf("seal: open chunk %d: %w", ci, err)
				}
			}
			opened[ci] = vals
		}
		if vals != nil {
			out[i] = vals[s%cl]
		}
	}
	return out, nil
}

// AddInto sets dst = dst + src chunk by chunk, cloning chunks that dst does
// not have yet so that src stays independent.
func AddInto(s Scheme, dst, src Vec) error {
	for ci, c := range src {
		if d, ok := dst[ci]; ok {
			if err := s.Add(d, c); err != nil {
				return fmt.Errorf("seal: add chunk %d: %w", ci, err)
			}
			continue
		}
		dst[ci] = s.Clone(c)
	}
	return nil
}

// Sum returns the sum of the vectors.
func Sum(s Scheme, vs ...Vec) (Vec, error) {
	out := Vec{}
	for _, v := range vs {
		if err := AddInto(s, out, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Restrict returns the part of v a client holding the given slots may see:
// only chunks that cover its slots, masked to those slots.
func Restrict(s Scheme, v Vec, slots []int) (Vec, error) {
	cl := s.ChunkLen()
	keep := map[int][]int{}
	for _, sl := range slots {
		keep[sl/cl] = append(keep[sl/cl], sl%cl)
	}
	out := make(Vec, len(keep))
	for ci, offs := range keep {
		c, ok := v[ci]
		if !ok {
			continue
		}
		m, err := s.Mask(c, offs)
		if err != nil {
			return nil, fmt.Errorf("seal: mask chunk %d: %w", ci, err)
		}
		out[ci] = m
	}
	return out, nil
}

// Scale returns g*v.
func Scale(s Scheme, v Vec, g float64) (Vec, error) {
	out := make(Vec, len(v))
	for ci, c := range v {
		m, err := s.MulConst(c, g)
		if err != nil {
			return nil, fmt.Errorf("seal: scale chunk %d: %w", ci, err)
		}
		out[ci] = m
	}
	return out, nil
}
