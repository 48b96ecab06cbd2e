package dataset

import "testing"

func TestEmptySparseRow(t *testing.T) {
	m := NewSparseBuilder(3)
	m.AppendRow(nil, nil)
	m.AppendRow([]int32{1}, []float64{2})
	w := []float64{1, 1, 1}
	if m.At(0, 2) != 0 || m.At(1, 1) != 2 || m.Dot(0, w) != 0 || m.Dot(1, w) != 2 {
		t.Fatal("wrong values around an empty sparse row")
	}
	m.AddRowTo(0, 5, w)
	if w[0] != 1 || w[2] != 1 {
		t.Fatal("an empty row changed w")
	}
}
