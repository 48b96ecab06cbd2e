package seal

import (
	"encoding/binary"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSpanKeepsValuesOnly: a vector laid over a span of 48 slots (a small
// sample group in its own chunk) seals, sums and sends 48 values a chunk,
// not ChunkLen; slots past them open as zero; chunks of other lengths do
// not add.
func TestSpanKeepsValuesOnly(t *testing.T) {
	for _, sc := range schemes(t) {
		t.Run(sc.name, func(t *testing.T) {
			s, k := sc.s, sc.k
			cl := s.ChunkLen()
			group := make([]int, 48) // the second chunk's first 48 slots
			for i := range group {
				group[i] = cl + i
			}
			var sum Vec
			want := make([]float64, len(group))
			for h := range 4 { // four holders, each naming some of the slots
				var slots []int
				var vals []float64
				for i := h; i < len(group); i += 3 {
					v := Quantize(float64(i*h) / 7)
					slots, vals = append(slots, group[i]), append(vals, v)
					want[i] += v
				}
				v, err := SealSlots(k, slots, vals, group)
				if err != nil {
					t.Fatal(err)
				}
				if len(v) != 1 || v[1] == nil {
					t.Fatalf("holder %d: chunks %v, want [1]", h, v.Indexes())
				}
				if sum == nil {
					sum = Vec{}
				}
				if err := Accumulate(s, sum, v); err != nil {
					t.Fatal(err)
				}
			}
			got, err := OpenSlots(k, sum, append(slices.Clone(group), cl+48, cl+cl-1))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[:48], want) || got[48] != 0 || got[49] != 0 {
				t.Fatalf("opened %v, want %v and zeros", got, want)
			}
			// The bytes follow the 48 values: 8 a value (7.5 under BGV)
			// besides the header, the count and (BGV) the four holders'
			// seeds.
			// (BGV's 60-bit coefficients packed: 7.5 bytes a value)
			size := s.WireSize(sum[1])
			wantSize := chunkHeader + 2 + 8*48
			if sc.name == "bgv" {
				wantSize = chunkHeader + 2 + 1 + 4*seedLen + 15*24
			}
			if size != wantSize {
				t.Fatalf("a sum of 48 values travels as %d bytes, want %d", size, wantSize)
			}
			b, err := MarshalVec(s, sum)
			if err != nil {
				t.Fatal(err)
			}
			back, err := UnmarshalVec(s, b, 4)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := OpenSlots(k, back, group); !slices.Equal(again, want) {
				t.Fatal("the decoded sum opens to other values")
			}
			// A chunk over another span does not add to it.
			other, _ := SealSlots(k, []int{cl}, []float64{1}, nil)
			err = AddInto(s, sum, other)
			if err == nil || !strings.Contains(err.Error(), "same slots") {
				t.Fatalf("added a chunk of 1 value to one of 48: %v", err)
			}
		})
	}
}

// TestLegacyChunks: chunks in the format before spans (every slot's value,
// BGV's c0 in the NTT domain), as checkpoints hold them, still decode and
// open, and Trim cuts them to a layout so that they add to chunks sealed
// over it.
func TestLegacyChunks(t *testing.T) {
	for _, sc := range schemes(t) {
		t.Run(sc.name, func(t *testing.T) {
			s, k := sc.s, sc.k
			cl := s.ChunkLen()
			vals := make([]float64, cl)
			for i := range 48 {
				vals[i] = Quantize(float64(i-20) / 3)
			}
			c, err := k.Seal(vals)
			if err != nil {
				t.Fatal(err)
			}
			old := legacyBytes(t, s, c)
			back, err := s.Unmarshal(old)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := k.Open(back); !slices.Equal(got, vals) {
				t.Fatal("a legacy chunk opens to other values")
			}
			trimmed, err := Trim(s, back, 48)
			if err != nil {
				t.Fatal(err)
			}
			fresh, _ := SealSlots(k, []int{0}, []float64{1}, Span(48))
			if err := s.Add(trimmed, fresh[0]); err != nil {
				t.Fatal(err)
			}
			got, _ := k.Open(trimmed)
			want := slices.Clone(vals[:48])
			want[0]++
			if !slices.Equal(got, want) {
				t.Fatalf("trimmed legacy chunk plus a fresh one: %v, want %v", got, want)
			}
			if again, _ := Trim(s, trimmed, 100); again != trimmed {
				t.Fatal("Trim to more values than the chunk has changed it")
			}
		})
	}
}

// legacyBytes encodes c in chunk format version 1.
func legacyBytes(t testing.TB, s Scheme, c Chunk) []byte {
	t.Helper()
	switch s := s.(type) {
	case Plaintext:
		out := []byte{'h', 'c', 1, plainID, byte(math.Log2(float64(s.ChunkLen()))), 0, 1, 0}
		for _, v := range c.(*PlainChunk).V {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
		return out
	case *BGV:
		ct, err := s.Ciphertext(c)
		if err != nil {
			t.Fatal(err)
		}
		out := []byte{'h', 'c', 1, bgvID, bgvLogN, 0, 2, flagSeeded}
		out = append(out, c.(*Cipher).seeds[0]...)
		return appendCoeffs(out, ct.Value[0].Coeffs[0])
	}
	t.Fatalf("no legacy format for %s", s.Name())
	return nil
}

// TestPacked: coefficients below q pack at 60 bits and read back, for even
// and odd counts; a packed value at or above q is refused.
func TestPacked(t *testing.T) {
	r := mrand.New(mrand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 47, 48, 4096} {
		in := make([]uint64, n)
		for i := range in {
			in[i] = r.Uint64N(bgvQ)
		}
		in[0], in[n-1] = bgvQ-1, 0
		b := appendPacked(nil, in)
		if len(b) != packedLen(n) {
			t.Fatalf("%d coefficients packed in %d bytes, want %d", n, len(b), packedLen(n))
		}
		out := make([]uint64, n)
		if err := readPacked(out, b, "c0"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(in, out) {
			t.Fatalf("%d coefficients read back differently", n)
		}
		big := slices.Clone(in)
		big[n/2] = 1<<60 - 1
		if err := readPacked(out, appendPacked(nil, big), "c0"); err == nil {
			t.Fatalf("%d coefficients: a value above q read", n)
		}
	}
}
