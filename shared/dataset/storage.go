package dataset

import "fmt"

// maxDenseValues bounds a dense matrix (2 GiB of float64): forcing dense
// storage on a large sparse set is more likely a slip than a wish. A
// variable so that fuzz tests can lower it.
var maxDenseValues = 1 << 28

// Densify returns a dense copy of a sparse matrix (or m itself if dense).
func (m *Matrix) Densify() *Matrix {
	if !m.IsSparse() {
		return m
	}
	out := NewDense(m.Rows, m.Cols)
	for i := 0; i < m.Rows; i++ {
		idx, val := m.Row(i)
		for k, j := range idx {
			out.Data[i*m.Cols+int(j)] = val[k]
		}
	}
	return out
}

// Sparsify returns a CSR copy of a dense matrix without its zeros (or m
// itself if sparse).
func (m *Matrix) Sparsify() *Matrix {
	if m.IsSparse() {
		return m
	}
	out := NewSparseBuilder(m.Cols)
	var idx []int32
	var val []float64
	for i := 0; i < m.Rows; i++ {
		idx, val = idx[:0], val[:0]
		_, row := m.Row(i)
		for j, v := range row {
			if v != 0 {
				idx = append(idx, int32(j))
				val = append(val, v)
			}
		}
		out.AppendRow(idx, val)
	}
	return out
}

// autoStorage stores m dense when at least half of its entries are
// non-zero: that is dense data, whatever the text it came in (LIBSVM's
// format lists only non-zeros), and the partitions treat it so: grid:K,Q
// cuts dense data into feature ranges, whose partial Grams add up to the
// exact Gram, and deals only sparse data's non-zeros, whose Grams miss
// the cross-holder terms (partition.Spec.Split). At that density dense
// storage also takes at most 4/3 of CSR's memory (8 bytes a value against
// 12 a non-zero).
func autoStorage(m *Matrix) *Matrix {
	if !m.IsSparse() || m.Rows == 0 || m.Cols == 0 || m.Rows > maxDenseValues/m.Cols {
		return m
	}
	if 2*int64(m.NNZ()) < int64(m.Rows)*int64(m.Cols) {
		return m
	}
	return m.Densify()
}

// withStorage applies Options.Sparse / Options.Dense to m.
func withStorage(m *Matrix, opt Options) (*Matrix, error) {
	switch {
	case opt.Dense && m.IsSparse():
		if m.Cols > 0 && m.Rows > maxDenseValues/m.Cols {
			return nil, fmt.Errorf("dense storage of %d x %d values is too large; keep it sparse", m.Rows, m.Cols)
		}
		return m.Densify(), nil
	case opt.Sparse && !m.IsSparse():
		if m.Cols > 1<<31-1 {
			return nil, fmt.Errorf("sparse storage of %d columns overflows the column index", m.Cols)
		}
		return m.Sparsify(), nil
	}
	return m, nil
}
