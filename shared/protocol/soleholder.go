package protocol

import (
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/gram"
	"github.com/hyfed/hyfed/shared/vec"
)

// A sample group with a single holder (every horizontal partition's, and
// any group whose samples one participant holds whole) has nothing to add
// up: its holder's partial Gram is the group's Gram. Its holder seals none
// (the server gets no Gram chunk of the group and returns none) and solves
// from what it holds:
//
//   - on sparse rows, where a row's non-zeros are fewer than half the picks,
//     against the rows themselves (gram.SplitRows and the row models
//     below): a coordinate costs the row's non-zeros, not a Gram row, and
//     nobody forms the Gram;
//   - otherwise against the Gram it computes, quantized as a sealed sum of
//     it would open, so that the numbers are those of a group with other
//     holders.
//
// The other holders of a group agree without talking because they solve
// the same subproblem from the same numbers; a group with one holder has
// nobody to agree with, so the row form's rounding is free to differ from
// the Gram form's.

// subModel is the model a group's solve runs against (solveGroupFrom):
// its diagonal, and its product with the dual changes moved so far.
type subModel interface {
	diag(x int) float64     // M_xx
	at(x int) float64       // (M d)_x
	move(x int, dl float64) // d_x += dl
}

// gramModel is a dense h x h model (row-major). Its moves reach A d four
// at a time (vec.Axpy4: one pass over A d for four rows of A); at adds
// the pending ones in the order they were made, so every entry is the sum
// the moves one by one would have left, bit for bit.
type gramModel struct {
	a    []float64
	h    int
	ad   []float64 // A d, less the pending moves
	rows [4]int    // the pending moves: their rows and sizes
	dls  [4]float64
	n    int
}

func newGramModel(a []float64, h int) *gramModel {
	return &gramModel{a: a, h: h, ad: make([]float64, h)}
}

func (g *gramModel) diag(x int) float64 { return g.a[x*g.h+x] }
func (g *gramModel) at(x int) float64 {
	s := g.ad[x]
	for k := range g.n {
		s += g.dls[k] * g.a[g.rows[k]*g.h+x]
	}
	return s
}
func (g *gramModel) move(x int, dl float64) {
	g.rows[g.n], g.dls[g.n] = x, dl
	if g.n++; g.n == len(g.rows) {
		h, r := g.h, g.rows
		vec.Axpy4(g.dls, g.a[r[0]*h:(r[0]+1)*h], g.a[r[1]*h:(r[1]+1)*h], g.a[r[2]*h:(r[2]+1)*h], g.a[r[3]*h:(r[3]+1)*h], g.ad)
		g.n = 0
	}
}

// rowModel is gram.RowModel on the holder's rows: M = Sr X X^T + F P P^T.
type rowModel struct {
	x     *dataset.Matrix
	picks []int
	md    gram.RowModel
	dg    []float64 // M_xx
	v     []float64 // X^T d
	t     []float64 // P^T d
}

func newRowModel(x *dataset.Matrix, picks []int, md gram.RowModel) *rowModel {
	r := &rowModel{x: x, picks: picks, md: md, dg: make([]float64, len(picks)), v: make([]float64, x.Cols)}
	if md.F != 0 && len(md.P) > 0 {
		r.t = make([]float64, len(md.P[0]))
	}
	for k, i := range picks {
		r.dg[k] = md.Sr * x.RowNormSq(i)
		if r.t != nil {
			r.dg[k] += md.F * vec.Dot(md.P[k], md.P[k])
		}
	}
	return r
}

func (r *rowModel) diag(x int) float64 { return r.dg[x] }
func (r *rowModel) at(x int) float64 {
	s := r.md.Sr * r.x.Dot(r.picks[x], r.v)
	if r.t != nil {
		s += r.md.F * vec.Dot(r.md.P[x], r.t)
	}
	return s
}
func (r *rowModel) move(x int, dl float64) {
	r.x.AddRowTo(r.picks[x], dl, r.v)
	if r.t != nil {
		vec.Axpy(dl, r.md.P[x], r.t)
	}
}

// centeredRows is the Gram of the picks' rows less their mean row xm,
// (X - 1 xm^T)(X - 1 xm^T)^T (centerGram's, on rows): with v = X^T d and
// s = sum d, row x of it times d is x_x.v - s x_x.xm - xm.v + s ||xm||^2.
type centeredRows struct {
	x     *dataset.Matrix
	picks []int
	c     []float64 // x_x . xm
	dg    []float64 // ||x_x - xm||^2
	m2    float64   // ||xm||^2
	v     []float64 // X^T d
	s, g  float64   // sum d, xm . v
}

func newCenteredRows(x *dataset.Matrix, picks []int) *centeredRows {
	h := len(picks)
	xm := make([]float64, x.Cols)
	for _, i := range picks {
		x.AddRowTo(i, 1/float64(h), xm)
	}
	r := &centeredRows{x: x, picks: picks, c: make([]float64, h), dg: make([]float64, h), m2: vec.Dot(xm, xm), v: make([]float64, x.Cols)}
	for k, i := range picks {
		r.c[k] = x.Dot(i, xm)
		r.dg[k] = x.RowNormSq(i) - 2*r.c[k] + r.m2
	}
	return r
}

func (r *centeredRows) diag(x int) float64 { return r.dg[x] }
func (r *centeredRows) at(x int) float64 {
	return r.x.Dot(r.picks[x], r.v) - r.s*r.c[x] - r.g + r.s*r.m2
}
func (r *centeredRows) move(x int, dl float64) {
	r.x.AddRowTo(r.picks[x], dl, r.v)
	r.s += dl
	r.g += dl * r.c[x]
}

// onRows reports whether the participant solves group g's picks on its
// rows: it holds the group alone, with the bias feature (the Gram form adds
// the bias's part by the formula), and its rows are sparse with fewer
// non-zeros than half the picks.
func (p *Participant) onRows(g int, picks []int) bool {
	x := p.block.X
	if !p.sole[g] || !x.IsSparse() || len(picks) == 0 || p.setup.Config.BiasValue != 0 && p.biasColumn() < 0 {
		return false
	}
	nnz := 0
	for _, i := range picks {
		idx, _ := x.Row(i)
		nnz += len(idx)
	}
	return 2*nnz < len(picks)*len(picks)
}

// solveRows solves group g's subproblem on the holder's rows: the first
// direction against SplitRows' model (or sigma X X^T without shared
// directions), and under group steps the centered one from where it leads
// (as onGramSum does with a Gram).
func (p *Participant) solveRows(picks []int, sigma, sigmaShared float64, centered, once bool) (delta, cent []float64) {
	x := p.block.X
	shared := p.setup.Config.SharedDirections
	if shared > 0 {
		delta = p.solveGroupFrom(picks, newRowModel(x, picks, gram.SplitRows(x, picks, x.Cols, shared, sigma, sigmaShared)), 1, nil, nil)
	} else {
		delta = p.solveGroupFrom(picks, newRowModel(x, picks, gram.RowModel{Sr: 1}), sigma, nil, nil)
	}
	if once {
		quantize(delta)
	}
	if !centered {
		return delta, nil
	}
	w := make([]float64, x.Cols)
	for k, i := range picks {
		x.AddRowTo(i, delta[k], w)
	}
	zoff := make([]float64, len(picks))
	for k, i := range picks {
		zoff[k] = x.Dot(i, w) / p.lambdaN
	}
	cent = p.solveGroupFrom(picks, newCenteredRows(x, picks), sigma, delta, zoff)
	if once {
		quantize(cent)
	}
	return delta, cent
}
