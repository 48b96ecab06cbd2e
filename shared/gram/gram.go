// Package gram holds the model a sample group's holders solve against
// under the block step: the summed Gram of the group's picks, with the
// directions every group shares priced apart from the rest.
//
// Many groups' combined step moves w by sum_g X_g^T d_g. Where the groups'
// rows share directions (the bias, the mean image and the next few
// principal directions of image data), every group moves them the same
// way and the moves add up: CoCoA+'s safe scale prices every direction at
// the number of updating groups K. Where the rows differ, the moves are
// nearly orthogonal and add up like independent ones: a scale near 1 is
// right. One scale for both either crawls (K everywhere: each group moves
// w by a K-th of its own step) or overshoots along the shared directions
// (the model swings between two values while the dual creeps: measured at
// 1,250 groups, docs/results/2026-11-25-shared-directions.md). Split
// prices the group's r leading directions at K and the rest at the
// adaptive scale.
//
// Every kernel is a plain loop in a fixed order (package vec), not gonum's
// eigensolver: every holder of a group, natively or in WebAssembly, must
// compute the same bits from the same Gram, and gonum's amd64 assembly
// sums in another order than its generic Go.
package gram

import (
	"math"

	"github.com/hyfed/hyfed/shared/vec"
)

// SharedDirections is the number r of leading directions Split prices at
// the number of updating groups unless the federation says otherwise
// (protocol.Config.SharedDirections). Measured in the study simulator
// (docs/results/2026-11-24-step-study.md, section 8): 4 left 5,000-client
// image groups (48 picks) swinging; 16 kept them steady and cost nothing
// measurable on the small settings; in the product,
// docs/results/2026-11-25-shared-directions.md.
const SharedDirections = 16

// subspaceIters is the number of subspace iterations that find the
// leading directions. Split needs a subspace holding most of the leading
// energy, not exact eigenvectors: whatever subspace it finds, the
// projection keeps the model between the two scales' Grams.
const subspaceIters = 8

// Split returns the h x h model Gram (row-major)
//
//	sr A + (sm - sr) A_S,   A_S = (A V) (V^T A V)^-1 (A V)^T,
//
// where A is the picks' Gram X X^T and V spans (about) its r leading
// eigenvectors: A_S is the Gram of the picks' rows projected on the
// feature-space directions X^T V, so d^T A_S d is the squared length of
// X^T d's component there and A - A_S is positive semi-definite. With r
// >= h (or sr >= sm) it is sm A. A is not modified.
func Split(a []float64, h, r int, sr, sm float64) []float64 {
	out := make([]float64, h*h)
	if r >= h || sr >= sm {
		for k, v := range a {
			out[k] = sm * v
		}
		return out
	}
	for k, v := range a {
		out[k] = sr * v
	}
	if r < 1 {
		return out
	}
	v := leading(a, h, r)
	if len(v) == 0 {
		return out
	}
	r = len(v)
	// av[j] = A v_j; c = V^T A V, factored.
	av := mulBlock(a, h, v)
	l, ok := cholesky(symDots(v, av), r)
	if !ok {
		return out
	}
	// A_S = B C^-1 B^T with B = A V: with C = L L^T, A_S = E E^T for
	// E = B L^-T, whose columns are solved one row of B at a time.
	e := make([][]float64, h) // rows of E
	row := make([]float64, r)
	for x := 0; x < h; x++ {
		for j := 0; j < r; j++ {
			row[j] = av[j][x]
		}
		e[x] = forward(l, r, row)
	}
	f := sm - sr
	for x := 0; x < h; x++ {
		for y := x; y < h; y++ {
			s := f * vec.Dot(e[x], e[y])
			out[x*h+y] += s
			if y != x {
				out[y*h+x] += s
			}
		}
	}
	return out
}

// leading returns an orthonormal basis (at most r vectors) of a subspace
// close to A's r leading eigenvectors: subspace iteration from the picks'
// mean direction A 1 and r-1 of A's columns spread over the picks.
func leading(a []float64, h, r int) [][]float64 {
	v := make([][]float64, 0, r)
	ones := make([]float64, h)
	for i := range ones {
		ones[i] = 1
	}
	v = append(v, mulSym(a, h, ones))
	for j := 1; j < r; j++ {
		c := j * h / r
		v = append(v, append([]float64(nil), a[c*h:(c+1)*h]...))
	}
	tr := 0.0
	for x := 0; x < h; x++ {
		tr += a[x*h+x]
	}
	floor := 1e-10 * math.Max(tr, 1e-300)
	v = orthonormal(v, floor)
	for it := 0; it < subspaceIters && len(v) > 0; it++ {
		v = orthonormal(mulBlock(a, h, v), floor)
	}
	return v
}

// orthonormal orthonormalises v by modified Gram-Schmidt (twice, for
// accuracy) and drops the vectors whose norm falls below floor (1e-10 of
// A's trace: directions A has almost nothing along).
func orthonormal(v [][]float64, floor float64) [][]float64 {
	out := v[:0]
	for _, x := range v {
		for pass := 0; pass < 2; pass++ {
			for _, q := range out {
				vec.Axpy(-vec.Dot(q, x), q, x)
			}
		}
		n := math.Sqrt(vec.Dot(x, x))
		if !(n > floor) {
			continue
		}
		for i := range x {
			x[i] /= n
		}
		out = append(out, x)
	}
	return out
}

// mulSym returns A x for the h x h row-major A.
func mulSym(a []float64, h int, x []float64) []float64 {
	y := make([]float64, h)
	for i := 0; i < h; i++ {
		y[i] = vec.Dot(a[i*h:(i+1)*h], x)
	}
	return y
}

// mulBlock returns A v_j for every v_j, with the bits of mulSym: each
// entry is one row of A dotted with one vector, four vectors at a time
// (vec.Dot4), so A is read once for four vectors and not once for each.
func mulBlock(a []float64, h int, v [][]float64) [][]float64 {
	y := make([][]float64, len(v))
	for j := range y {
		y[j] = make([]float64, h)
	}
	for i := 0; i < h; i++ {
		row := a[i*h : (i+1)*h]
		j := 0
		for ; j+4 <= len(v); j += 4 {
			y[j][i], y[j+1][i], y[j+2][i], y[j+3][i] = vec.Dot4(row, v[j], v[j+1], v[j+2], v[j+3])
		}
		for ; j < len(v); j++ {
			y[j][i] = vec.Dot(row, v[j])
		}
	}
	return y
}

// symDots returns the r x r matrix (row-major) with entries a_i . b_j for
// j <= i, mirrored: V^T A V from V and A V (symmetric up to rounding).
func symDots(a, b [][]float64) []float64 {
	r := len(a)
	c := make([]float64, r*r)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			x := vec.Dot(a[i], b[j])
			c[i*r+j], c[j*r+i] = x, x
		}
	}
	return c
}

// cholesky returns the lower factor L (row-major) of the n x n C = L L^T,
// with a ridge of 1e-12 of C's largest diagonal entry so that a nearly
// singular C (a direction A barely has) still factors; false if C is not
// positive.
func cholesky(c []float64, n int) ([]float64, bool) {
	dmax := 0.0
	for i := 0; i < n; i++ {
		dmax = math.Max(dmax, c[i*n+i])
	}
	if !(dmax > 0) {
		return nil, false
	}
	l := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := c[i*n+j]
			if i == j {
				s += 1e-12 * dmax
			}
			for k := 0; k < j; k++ {
				s -= l[i*n+k] * l[j*n+k]
			}
			if i == j {
				if !(s > 0) {
					return nil, false
				}
				l[i*n+i] = math.Sqrt(s)
			} else {
				l[i*n+j] = s / l[j*n+j]
			}
		}
	}
	return l, true
}

// forward solves L e = b for the lower-triangular L (row-major, n x n).
func forward(l []float64, n int, b []float64) []float64 {
	e := make([]float64, n)
	for i := 0; i < n; i++ {
		s := b[i]
		for k := 0; k < i; k++ {
			s -= l[i*n+k] * e[k]
		}
		e[i] = s / l[i*n+i]
	}
	return e
}
