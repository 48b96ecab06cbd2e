package seal

import (
	"math"
	"testing"
)

func TestSealSumRestrictScale(t *testing.T) {
	s := Plaintext{Len: 4}
	k := PlainKey{S: s}
	a, err := SealSlots(k, []int{0, 5, 9}, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SealSlots(k, []int{5, 6}, []float64{10, 20})
	sum, err := Sum(s, a, b)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := OpenSlots(k, sum, []int{0, 5, 6, 9, 11})
	want := []float64{1, 12, 20, 3, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sum slot %d = %v, want %v", i, got[i], want[i])
		}
	}
	// Adding into sum must not have changed a.
	if v, _ := OpenSlots(k, a, []int{5}); v[0] != 2 {
		t.Fatal("Sum changed an input")
	}
	// A client holding slots 5 and 9 sees nothing of slots 0 and 6.
	r, _ := Restrict(s, sum, []int{5, 9})
	for ci, c := range r {
		vals, _ := k.Open(c)
		for off, v := range vals {
			slot := ci*4 + off
			if slot != 5 && slot != 9 && v != 0 {
				t.Fatalf("restricted vector leaks slot %d = %v", slot, v)
			}
		}
	}
	sc, _ := Scale(s, r, 0.5)
	if v, _ := OpenSlots(k, sc, []int{5, 9}); v[0] != 6 || v[1] != 1.5 {
		t.Fatalf("scaled %v", v)
	}
}

func TestSealRefusesBadInput(t *testing.T) {
	k := PlainKey{S: Plaintext{Len: 4}}
	for _, v := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := SealSlots(k, []int{1}, []float64{v}); err == nil {
			t.Errorf("sealed %v", v)
		}
	}
	if _, err := SealSlots(k, []int{1, 2}, []float64{1}); err == nil {
		t.Error("sealed mismatched slots")
	}
	if _, err := SealSlots(k, []int{-1}, []float64{1}); err == nil {
		t.Error("sealed a negative slot")
	}
	if err := (Plaintext{Len: 4}).Add(&PlainChunk{V: make([]float64, 3)}, &PlainChunk{V: make([]float64, 4)}); err == nil {
		t.Error("added chunks of different lengths")
	}
}
