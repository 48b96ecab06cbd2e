package dataset

import (
	"fmt"
	"math"
)

// MaxRowNormSq returns the largest squared norm of a sample and its row.
func (d *Dataset) MaxRowNormSq() (float64, int) {
	best, at := 0.0, 0
	for i := 0; i < d.X.Rows; i++ {
		if n := d.X.RowNormSq(i); n > best {
			best, at = n, i
		}
	}
	return best, at
}

// ScaleMaxAbs divides every feature by its largest magnitude over all
// samples, in place, as LIBSVM's svm-scale does for the range [-1, 1]
// without shifting, so that zeros stay zeros and sparse data stays sparse.
// It records the divisors in d.Scale (1 for a feature that is zero
// everywhere) and returns them. A model w of the scaled data scores the
// raw data as w_f / Scale[f] (UnscaleWeights).
func (d *Dataset) ScaleMaxAbs() []float64 {
	m := d.X
	// col is the feature of a row's k-th stored value (Row gives indexes
	// only for sparse rows).
	col := func(idx []int32, k int) int {
		if idx == nil {
			return k
		}
		return int(idx[k])
	}
	scale := make([]float64, m.Cols)
	for i := 0; i < m.Rows; i++ {
		idx, val := m.Row(i)
		for k, v := range val {
			j := col(idx, k)
			scale[j] = math.Max(scale[j], math.Abs(v))
		}
	}
	for j, s := range scale {
		if s == 0 {
			scale[j] = 1
		}
	}
	for i := 0; i < m.Rows; i++ {
		idx, val := m.Row(i)
		for k := range val {
			val[k] /= scale[col(idx, k)]
		}
	}
	d.Scale = scale
	return scale
}

// UnscaleWeights returns the weights w of a model of d's (scaled) features
// as weights of the raw features: w_f / Scale[f]; w itself when d was not
// scaled.
func (d *Dataset) UnscaleWeights(w []float64) []float64 {
	if d.Scale == nil {
		return w
	}
	out := make([]float64, len(w))
	for f, v := range w {
		out[f] = v
		if f < len(d.Scale) {
			out[f] = v / d.Scale[f]
		}
	}
	return out
}

// SampleName names sample i for messages: its line in the file it was read
// from, when known, and its record id.
func (d *Dataset) SampleName(i int) string {
	if d.Lines != nil {
		if d.IDs[i] == fmt.Sprintf("line-%d", d.Lines[i]) {
			return fmt.Sprintf("line %d", d.Lines[i])
		}
		return fmt.Sprintf("line %d (record %q)", d.Lines[i], d.IDs[i])
	}
	return fmt.Sprintf("sample %q", d.IDs[i])
}
