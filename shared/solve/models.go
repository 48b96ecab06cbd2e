package solve

import (
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/gram"
	"github.com/hyfed/hyfed/shared/vec"
)

// Model is the model a group's solve runs against (Group): its
// diagonal, and its product with the dual changes moved so far.
type Model interface {
	Diag(x int) float64     // M_xx
	At(x int) float64       // (M d)_x
	Move(x int, dl float64) // d_x += dl
}

// Gram is a dense h x h model (row-major). Its moves reach A d four
// at a time (vec.Axpy4: one pass over A d for four rows of A); at adds
// the pending ones in the order they were made, so every entry is the sum
// the moves one by one would have left, bit for bit.
type Gram struct {
	a    []float64
	h    int
	ad   []float64 // A d, less the pending moves
	rows [4]int    // the pending moves: their rows and sizes
	dls  [4]float64
	n    int
}

func NewGram(a []float64, h int) *Gram {
	return &Gram{a: a, h: h, ad: make([]float64, h)}
}

func (g *Gram) Diag(x int) float64 { return g.a[x*g.h+x] }
func (g *Gram) At(x int) float64 {
	s := g.ad[x]
	for k := range g.n {
		s += g.dls[k] * g.a[g.rows[k]*g.h+x]
	}
	return s
}
func (g *Gram) Move(x int, dl float64) {
	g.rows[g.n], g.dls[g.n] = x, dl
	if g.n++; g.n == len(g.rows) {
		h, r := g.h, g.rows
		vec.Axpy4(g.dls, g.a[r[0]*h:(r[0]+1)*h], g.a[r[1]*h:(r[1]+1)*h], g.a[r[2]*h:(r[2]+1)*h], g.a[r[3]*h:(r[3]+1)*h], g.ad)
		g.n = 0
	}
}

// Rows is gram.RowModel on the holder's rows: M = Sr X X^T + F P P^T.
type Rows struct {
	x     *dataset.Matrix
	picks []int
	md    gram.RowModel
	dg    []float64 // M_xx
	v     []float64 // X^T d
	t     []float64 // P^T d
}

func NewRows(x *dataset.Matrix, picks []int, md gram.RowModel) *Rows {
	r := &Rows{x: x, picks: picks, md: md, dg: make([]float64, len(picks)), v: make([]float64, x.Cols)}
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

func (r *Rows) Diag(x int) float64 { return r.dg[x] }
func (r *Rows) At(x int) float64 {
	s := r.md.Sr * r.x.Dot(r.picks[x], r.v)
	if r.t != nil {
		s += r.md.F * vec.Dot(r.md.P[x], r.t)
	}
	return s
}
func (r *Rows) Move(x int, dl float64) {
	r.x.AddRowTo(r.picks[x], dl, r.v)
	if r.t != nil {
		vec.Axpy(dl, r.md.P[x], r.t)
	}
}

// CenteredRows is the Gram of the picks' rows less their mean row xm,
// (X - 1 xm^T)(X - 1 xm^T)^T (CenterGram's, on rows): with v = X^T d and
// s = sum d, row x of it times d is x_x.v - s x_x.xm - xm.v + s ||xm||^2.
type CenteredRows struct {
	x     *dataset.Matrix
	picks []int
	c     []float64 // x_x . xm
	dg    []float64 // ||x_x - xm||^2
	m2    float64   // ||xm||^2
	v     []float64 // X^T d
	s, g  float64   // sum d, xm . v
}

func NewCenteredRows(x *dataset.Matrix, picks []int) *CenteredRows {
	h := len(picks)
	xm := make([]float64, x.Cols)
	for _, i := range picks {
		x.AddRowTo(i, 1/float64(h), xm)
	}
	r := &CenteredRows{x: x, picks: picks, c: make([]float64, h), dg: make([]float64, h), m2: vec.Dot(xm, xm), v: make([]float64, x.Cols)}
	for k, i := range picks {
		r.c[k] = x.Dot(i, xm)
		r.dg[k] = x.RowNormSq(i) - 2*r.c[k] + r.m2
	}
	return r
}

func (r *CenteredRows) Diag(x int) float64 { return r.dg[x] }
func (r *CenteredRows) At(x int) float64 {
	return r.x.Dot(r.picks[x], r.v) - r.s*r.c[x] - r.g + r.s*r.m2
}
func (r *CenteredRows) Move(x int, dl float64) {
	r.x.AddRowTo(r.picks[x], dl, r.v)
	r.s += dl
	r.g += dl * r.c[x]
}
