package gram

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// picks returns the Gram of h rows of m features: every row c e_0 (a
// shared direction, like the bias) plus noise of scale s.
func picks(h, m int, c, s float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([][]float64, h)
	for i := range x {
		x[i] = make([]float64, m)
		x[i][0] = c
		for j := range x[i] {
			x[i][j] += s * rng.NormFloat64()
		}
	}
	a := make([]float64, h*h)
	for i := range x {
		for j := range x {
			for k := range x[i] {
				a[i*h+j] += x[i][k] * x[j][k]
			}
		}
	}
	return a
}

func quad(a []float64, h int, d []float64) float64 {
	s := 0.0
	for x := 0; x < h; x++ {
		for y := 0; y < h; y++ {
			s += d[x] * a[x*h+y] * d[y]
		}
	}
	return s
}

func TestSplitEdges(t *testing.T) {
	const h = 12
	a := picks(h, 30, 3, 1, 1)
	for _, tc := range []struct {
		name   string
		r      int
		sr, sm float64
		scale  float64 // want scale*A
	}{
		{"no shared directions", 0, 2, 50, 2},
		{"every direction shared", h, 2, 50, 50},
		{"more than the picks", h + 5, 2, 50, 50},
		{"one group", 4, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(a, h, tc.r, tc.sr, tc.sm)
			for k := range a {
				if want := tc.scale * a[k]; math.Abs(got[k]-want) > 1e-12*math.Abs(want)+1e-12 {
					t.Fatalf("entry %d: %v, want %v", k, got[k], want)
				}
			}
		})
	}
}

// TestSplitBounds checks the model lies between the two scales' Grams for
// any direction, sr A <= Split <= sm A, and that the r shared directions
// take the whole of the extra: with noise-free rank-r data every direction
// is priced at sm.
func TestSplitBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		h, m, r int
		noise   float64
	}{{20, 50, 4, 1}, {48, 785, 16, 0.3}, {90, 10, 16, 1}, {30, 3, 8, 0}} {
		a := picks(tc.h, tc.m, 4, tc.noise, uint64(tc.h))
		const sr, sm = 3.0, 125.0
		s := Split(a, tc.h, tc.r, sr, sm)
		for trial := 0; trial < 50; trial++ {
			d := make([]float64, tc.h)
			for i := range d {
				d[i] = rng.NormFloat64()
			}
			q, qa := quad(s, tc.h, d), quad(a, tc.h, d)
			tol := 1e-9 * sm * qa
			if q < sr*qa-tol || q > sm*qa+tol {
				t.Fatalf("h %d r %d: d^T Split d = %v outside [%v, %v]", tc.h, tc.r, q, sr*qa, sm*qa)
			}
			if tc.m <= tc.r && math.Abs(q-sm*qa) > 1e-6*sm*qa {
				t.Fatalf("h %d, rank %d <= r %d: %v, want sm d^T A d = %v", tc.h, tc.m, tc.r, q, sm*qa)
			}
		}
	}
}

// TestSplitPricesTheSharedDirection: moving every pick alike moves the
// shared feature, which Split prices at sm; a move that leaves it where it
// is (half the picks up, half down) is priced near sr.
func TestSplitPricesTheSharedDirection(t *testing.T) {
	const h, sr, sm = 40, 1.0, 1000.0
	a := picks(h, 400, 5, 0.2, 3)
	s := Split(a, h, 1, sr, sm)
	alike := make([]float64, h)
	apart := make([]float64, h)
	for i := range alike {
		alike[i] = 1
		apart[i] = float64(1 - 2*(i%2))
	}
	if q, want := quad(s, h, alike), sm*quad(a, h, alike); math.Abs(q-want) > 0.01*want {
		t.Errorf("all picks alike: priced %v, want about sm d^T A d = %v", q, want)
	}
	if q, lo := quad(s, h, apart), sr*quad(a, h, apart); q > 1.5*lo {
		t.Errorf("picks apart: priced %v, want near sr d^T A d = %v", q, lo)
	}
}

// TestSplitSameBits: every holder of a group must get the same model from
// the same Gram; Split must not depend on anything but its arguments.
func TestSplitSameBits(t *testing.T) {
	a := picks(64, 100, 2, 1, 9)
	x, y := Split(a, 64, 16, 2, 300), Split(append([]float64(nil), a...), 64, 16, 2, 300)
	for k := range x {
		if math.Float64bits(x[k]) != math.Float64bits(y[k]) {
			t.Fatalf("entry %d: %v then %v", k, x[k], y[k])
		}
	}
}

// TestMulBlockSameBits: the blocked product gives the bits of one
// matrix-vector product at a time, for any number of vectors.
func TestMulBlockSameBits(t *testing.T) {
	const h = 37
	a := picks(h, 50, 2, 1, 3)
	for n := 0; n <= 9; n++ {
		v := make([][]float64, n)
		for j := range v {
			v[j] = append([]float64(nil), a[(j%h)*h:(j%h+1)*h]...)
		}
		got := mulBlock(a, h, v)
		for j := range v {
			want := mulSym(a, h, v[j])
			for i := range want {
				if math.Float64bits(got[j][i]) != math.Float64bits(want[i]) {
					t.Fatalf("%d vectors: entry %d of vector %d is %v, one at a time %v", n, i, j, got[j][i], want[i])
				}
			}
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	for _, h := range []int{48, 238, 452, 838} {
		a := picks(h, 785, 3, 1, uint64(h))
		b.Run("h="+strconv.Itoa(h), func(b *testing.B) {
			for b.Loop() {
				Split(a, h, SharedDirections, 4, 500)
			}
		})
	}
}
