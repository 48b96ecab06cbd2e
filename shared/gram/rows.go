package gram

import (
	"math"
)

// Rows are the rows of a block of data (dataset.Matrix): what SplitRows
// needs of the picks.
type Rows interface {
	Dot(i int, w []float64) float64         // row i . w
	AddRowTo(i int, a float64, w []float64) // w += a row i
	RowNormSq(i int) float64                // ||row i||^2
}

// RowModel is Split's model for picks whose rows one participant holds
// whole (a sample group with a single holder), in the feature space:
//
//	M = Sr X X^T + F P P^T
//
// with X the picks' rows (m features) and row x of P the pick's
// coordinates along the shared directions. A solver against it pays per
// coordinate the row's non-zeros and r, not the h entries of a Gram row,
// and nobody forms the h x h Gram: on sparse rows (tens of non-zeros
// against hundreds of picks) that is most of a group's solve.
type RowModel struct {
	Sr, F float64
	P     [][]float64 // nil when F == 0
}

// SplitRows returns the model Split returns for the Gram X X^T of the rows
// picks of x (m features), in the form of RowModel: the same leading
// subspace (subspace iteration from the same start, A v computed as
// X (X^T v)) and the same projection, A_S = (X W) (W^T W)^-1 (X W)^T with
// W = X^T V. Its entries equal Split's up to rounding.
func SplitRows(x Rows, picks []int, m, r int, sr, sm float64) RowModel {
	h := len(picks)
	if r >= h || sr >= sm {
		return RowModel{Sr: sm}
	}
	if r < 1 {
		return RowModel{Sr: sr}
	}
	v := leadingRows(x, picks, m, r)
	if len(v) == 0 {
		return RowModel{Sr: sr}
	}
	r = len(v)
	w := make([][]float64, r) // X^T v_j
	for j := range v {
		w[j] = rowsT(x, picks, m, v[j])
	}
	l, ok := cholesky(symDots(w, w), r) // V^T A V = W^T W
	if !ok {
		return RowModel{Sr: sr}
	}
	p := make([][]float64, h)
	row := make([]float64, r)
	for xi, i := range picks {
		for j := range w {
			row[j] = x.Dot(i, w[j]) // row xi of A V
		}
		p[xi] = forward(l, r, row)
	}
	return RowModel{Sr: sr, F: sm - sr, P: p}
}

// leadingRows is leading for A = X X^T, from the rows.
func leadingRows(x Rows, picks []int, m, r int) [][]float64 {
	h := len(picks)
	ones := make([]float64, h)
	for i := range ones {
		ones[i] = 1
	}
	v := make([][]float64, 0, r)
	v = append(v, mulRows(x, picks, m, ones))
	buf := make([]float64, m)
	for j := 1; j < r; j++ {
		c := j * h / r // column c of A: every pick's row . pick c's row
		clear(buf)
		x.AddRowTo(picks[c], 1, buf)
		col := make([]float64, h)
		for xi, i := range picks {
			col[xi] = x.Dot(i, buf)
		}
		v = append(v, col)
	}
	tr := 0.0
	for _, i := range picks {
		tr += x.RowNormSq(i)
	}
	floor := 1e-10 * math.Max(tr, 1e-300)
	v = orthonormal(v, floor)
	for it := 0; it < subspaceIters && len(v) > 0; it++ {
		for j := range v {
			v[j] = mulRows(x, picks, m, v[j])
		}
		v = orthonormal(v, floor)
	}
	return v
}

// mulRows returns A v = X (X^T v).
func mulRows(x Rows, picks []int, m int, v []float64) []float64 {
	w := rowsT(x, picks, m, v)
	y := make([]float64, len(picks))
	for xi, i := range picks {
		y[xi] = x.Dot(i, w)
	}
	return y
}

// rowsT returns X^T v = sum_x v[x] row picks[x] (m features).
func rowsT(x Rows, picks []int, m int, v []float64) []float64 {
	w := make([]float64, m)
	for xi, i := range picks {
		x.AddRowTo(i, v[xi], w)
	}
	return w
}
