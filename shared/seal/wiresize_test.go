package seal

import (
	"testing"
)

// TestMaxSealedWireSize: what a key seals, and sums that keep their seeds,
// fit MaxSealedWireSize of their length; a sum of more travels whole, past it.
func TestMaxSealedWireSize(t *testing.T) {
	bgv, err := NewBGV()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		s      Scheme
		n      int // values a chunk seals
		summed int // chunks added into it
		fits   bool
	}{
		{"bgv, full", bgv, bgv.ChunkLen(), 1, true},
		{"bgv, 100 values", bgv, 100, 1, true},
		{"bgv, a sum keeping its seeds", bgv, 100, MaxSumSeeds, true},
		{"bgv, a sum travelling whole", bgv, 100, MaxSumSeeds + 1, false},
		{"plaintext, full", Plaintext{Len: 64}, 64, 1, true},
		{"plaintext, 3 values", Plaintext{Len: 64}, 3, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := NewKeyFor(tc.s, [32]byte{1})
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]float64, tc.n)
			c, err := key.Seal(vals)
			if err != nil {
				t.Fatal(err)
			}
			for range tc.summed - 1 {
				d, err := key.Seal(vals)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.s.Add(c, d); err != nil {
					t.Fatal(err)
				}
			}
			b, err := tc.s.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if max := MaxSealedWireSize(tc.s, tc.n); (len(b) <= max) != tc.fits {
				t.Fatalf("%d bytes against a bound of %d: fits %v, want %v", len(b), max, len(b) <= max, tc.fits)
			}
		})
	}
}
