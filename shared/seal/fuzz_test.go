package seal

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzUnmarshalVec: whatever arrives, decoding a sealed vector returns a
// vector or an error, never panics; what it accepts encodes back to the
// same bytes (or, for a chunk of the older format, to bytes that decode and
// encode to themselves).
func FuzzUnmarshalVec(f *testing.F) {
	s, err := NewBGV()
	if err != nil {
		f.Fatal(err)
	}
	k, _ := s.NewKey([32]byte{})
	fresh, _ := SealSlots(k, []int{1}, []float64{1}, nil)
	summed, _ := Sum(s, fresh, fresh)
	whole, _ := Sum(s, summed, summed, summed, summed, summed, summed, summed, summed, summed)
	short, _ := SealSlots(k, []int{1, 40}, []float64{1, -2}, Span(48))
	for _, v := range []Vec{{}, fresh, summed, whole, short} {
		b, _ := MarshalVec(s, v)
		f.Add(b)
	}
	full, _ := k.Seal(make([]float64, s.ChunkLen()))
	legacy := legacyBytes(f, s, full)
	f.Add(append(binary.LittleEndian.AppendUint32([]byte("hv\x01\x01\x00\x00\x00\x00\x00\x00\x00"), uint32(len(legacy))), legacy...))
	f.Add([]byte("hv\x01\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := UnmarshalVec(s, b, 16)
		if err != nil {
			return
		}
		again, err := MarshalVec(s, v)
		if err != nil {
			t.Fatalf("accepted vector does not encode: %v", err)
		}
		if string(again) != string(b) {
			v2, err := UnmarshalVec(s, again, 16)
			if err != nil {
				t.Fatalf("accepted vector encodes to bytes that do not decode: %v", err)
			}
			if third, _ := MarshalVec(s, v2); string(third) != string(again) {
				t.Fatal("accepted vector encodes to other bytes, twice")
			}
			if !bytes.Contains(b, []byte("hc\x01")) {
				t.Fatal("accepted vector of the current format encodes to other bytes")
			}
		}
	})
}

// FuzzPlainUnmarshal: the plaintext scheme's decoder refuses what it
// cannot carry, never panics.
func FuzzPlainUnmarshal(f *testing.F) {
	p := Plaintext{Len: 4}
	b, _ := p.Marshal(&PlainChunk{V: []float64{1, -2, 0.5, 0}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := p.Unmarshal(b)
		if err != nil {
			return
		}
		if _, err := p.Marshal(c); err != nil {
			t.Fatal(err)
		}
	})
}
