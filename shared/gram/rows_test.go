package gram

import (
	"math"
	"math/rand/v2"
	"testing"
)

// denseRows is a block of rows for the tests.
type denseRows [][]float64

func (x denseRows) Dot(i int, w []float64) float64 {
	s := 0.0
	for j, v := range x[i] {
		s += v * w[j]
	}
	return s
}

func (x denseRows) AddRowTo(i int, a float64, w []float64) {
	for j, v := range x[i] {
		w[j] += a * v
	}
}

func (x denseRows) RowNormSq(i int) float64 { return x.Dot(i, x[i]) }

// sparseRows draws n rows of m features with about k non-zeros each, a
// shared first feature (a bias) of value c.
func sparseRows(n, m, k int, c float64, seed uint64) denseRows {
	rng := rand.New(rand.NewPCG(seed, 3))
	x := make(denseRows, n)
	for i := range x {
		x[i] = make([]float64, m)
		x[i][0] = c
		for range k {
			x[i][1+rng.IntN(m-1)] = rng.NormFloat64()
		}
	}
	return x
}

// entry returns the model's entry (x, y) for the picks.
func (md RowModel) entry(rows denseRows, picks []int, x, y int) float64 {
	v := md.Sr * rows.Dot(picks[x], rows[picks[y]])
	if md.F != 0 {
		s := 0.0
		for j := range md.P[x] {
			s += md.P[x][j] * md.P[y][j]
		}
		v += md.F * s
	}
	return v
}

// TestSplitRowsIsSplit: the model in feature form has Split's entries on
// the Gram of the same picks, for picks spread over the rows (not all of
// them, out of order), in the edge cases too.
func TestSplitRowsIsSplit(t *testing.T) {
	rows := sparseRows(120, 60, 6, 3, 1)
	picks := []int{7, 3, 90, 44, 12, 101, 0, 55, 63, 18, 77, 29, 115, 36, 84, 9, 50, 71, 2, 99, 60, 41, 23, 88}
	h := len(picks)
	a := make([]float64, h*h)
	for x := range picks {
		for y := range picks {
			a[x*h+y] = rows.Dot(picks[x], rows[picks[y]])
		}
	}
	for _, tc := range []struct {
		name   string
		r      int
		sr, sm float64
	}{
		{"shared directions", 4, 1.5, 20},
		{"sixteen", 16, 1, 8},
		{"r >= h", h, 1.5, 20},
		{"sr >= sm", 4, 20, 20},
		{"r = 0", 0, 1.5, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := Split(a, h, tc.r, tc.sr, tc.sm)
			md := SplitRows(rows, picks, 60, tc.r, tc.sr, tc.sm)
			scale := 0.0
			for _, v := range want {
				scale = math.Max(scale, math.Abs(v))
			}
			for x := 0; x < h; x++ {
				for y := 0; y < h; y++ {
					if got := md.entry(rows, picks, x, y); math.Abs(got-want[x*h+y]) > 1e-9*scale {
						t.Fatalf("entry (%d, %d): %v, Split %v", x, y, got, want[x*h+y])
					}
				}
			}
		})
	}
}
