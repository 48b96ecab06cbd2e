package dataset

import "testing"

// TestConstantFeature finds a bias only where every sample holds the same
// non-zero value in the last feature, dense or sparse.
func TestConstantFeature(t *testing.T) {
	dense := func(rows ...[]float64) *Dataset {
		m := NewDense(len(rows), len(rows[0]))
		for i, r := range rows {
			copy(m.Data[i*m.Cols:], r)
		}
		return &Dataset{X: m}
	}
	sparse := func(d *Dataset) *Dataset { return &Dataset{X: d.X.Sparsify()} }
	for _, tc := range []struct {
		name    string
		d       *Dataset
		feature int
		value   float64
		ok      bool
	}{
		{"dense bias", dense([]float64{1, 2, 10}, []float64{0, 3, 10}), 2, 10, true},
		{"sparse bias", sparse(dense([]float64{1, 0, 1}, []float64{0, 3, 1})), 2, 1, true},
		{"one sample differs", dense([]float64{1, 2, 10}, []float64{0, 3, 9}), 0, 0, false},
		{"sparse, one sample lacks it", sparse(dense([]float64{1, 0, 1}, []float64{0, 3, 0})), 0, 0, false},
		{"zeros are no bias", dense([]float64{1, 0}, []float64{2, 0}), 0, 0, false},
	} {
		f, v, ok := tc.d.ConstantFeature()
		if f != tc.feature || v != tc.value || ok != tc.ok {
			t.Errorf("%s: got %d, %v, %v; want %d, %v, %v", tc.name, f, v, ok, tc.feature, tc.value, tc.ok)
		}
	}
}
