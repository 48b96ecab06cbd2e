package seal

import "testing"

// FuzzUnmarshalVec: whatever arrives, decoding a sealed vector returns a
// vector or an error, never panics; what it accepts encodes back to the
// same bytes.
func FuzzUnmarshalVec(f *testing.F) {
	s, err := NewBGV()
	if err != nil {
		f.Fatal(err)
	}
	k, _ := s.NewKey([32]byte{})
	fresh, _ := SealSlots(k, []int{1}, []float64{1})
	summed, _ := Sum(s, fresh, fresh)
	whole, _ := Sum(s, summed, summed, summed, summed, summed, summed, summed, summed, summed)
	for _, v := range []Vec{{}, fresh, summed, whole} {
		b, _ := MarshalVec(s, v)
		f.Add(b)
	}
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
			t.Fatal("accepted vector encodes to other bytes")
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
