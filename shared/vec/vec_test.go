package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The plain loops the kernels replace: the kernels must give their bits.
func plainDot(x, y []float64) float64 {
	s := 0.0
	for j, v := range x {
		s += v * y[j]
	}
	return s
}

func plainDotSparse(idx []int32, val, w []float64) float64 {
	s := 0.0
	for k, j := range idx {
		s += val[k] * w[j]
	}
	return s
}

// randVec draws values of mixed magnitudes, so that a change in the order
// of the additions changes the rounding.
func randVec(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(12)-6))
	}
	return v
}

func TestSameBitsAsPlainLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 63, 200, 452, 785} {
		x, y := randVec(r, n), randVec(r, n+3) // y may be longer
		if got, want := Dot(x, y), plainDot(x, y); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("Dot, n=%d: %v, plain loop %v", n, got, want)
		}
		y1, y2, y3 := randVec(r, n), randVec(r, n+1), randVec(r, n)
		s0, s1, s2, s3 := Dot4(x, y, y1, y2, y3)
		for k, p := range []struct {
			got float64
			y   []float64
		}{{s0, y}, {s1, y1}, {s2, y2}, {s3, y3}} {
			if want := plainDot(x, p.y); math.Float64bits(p.got) != math.Float64bits(want) {
				t.Errorf("Dot4, n=%d, sum %d: %v, plain loop %v", n, k, p.got, want)
			}
		}
		alpha := r.Float64() - 0.5
		got, want := append([]float64(nil), y...), append([]float64(nil), y...)
		Axpy(alpha, x, got)
		for j, v := range x {
			want[j] += alpha * v
		}
		for j := range want {
			if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
				t.Fatalf("Axpy, n=%d: entry %d is %v, plain loop %v", n, j, got[j], want[j])
			}
		}

		xs := [4][]float64{x, randVec(r, n+2), randVec(r, n), randVec(r, n+1)}
		alphas := [4]float64{alpha, r.Float64() - 0.5, 0, -(r.Float64() + 1)}
		got4, want4 := append([]float64(nil), x...), append([]float64(nil), x...)
		Axpy4(alphas, xs[0], xs[1], xs[2], xs[3], got4)
		for k := range xs {
			Axpy(alphas[k], xs[k][:n], want4)
		}
		for j := range want4 {
			if math.Float64bits(got4[j]) != math.Float64bits(want4[j]) {
				t.Fatalf("Axpy4, n=%d: entry %d is %v, four Axpys %v", n, j, got4[j], want4[j])
			}
		}

		w := randVec(r, 1000)
		idx := make([]int32, n)
		for k := range idx {
			idx[k] = int32(r.IntN(len(w)))
		}
		if got, want := DotSparse(idx, x, w), plainDotSparse(idx, x, w); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("DotSparse, n=%d: %v, plain loop %v", n, got, want)
		}
		gotW, wantW := append([]float64(nil), w...), append([]float64(nil), w...)
		AxpySparse(alpha, idx, x, gotW)
		for k, j := range idx { // repeated indexes accumulate in order
			wantW[j] += alpha * x[k]
		}
		for j := range wantW {
			if math.Float64bits(gotW[j]) != math.Float64bits(wantW[j]) {
				t.Fatalf("AxpySparse, n=%d: entry %d is %v, plain loop %v", n, j, gotW[j], wantW[j])
			}
		}
	}
}

func TestShortSecondOperandPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Dot":  func() { Dot(make([]float64, 9), make([]float64, 8)) },
		"Axpy": func() { Axpy(1, make([]float64, 9), make([]float64, 8)) },
		"Dot4": func() {
			x := make([]float64, 9)
			Dot4(x, x, x, make([]float64, 8), x)
		},
		"Axpy4": func() {
			x := make([]float64, 9)
			Axpy4([4]float64{}, x, x, make([]float64, 8), x, make([]float64, 9))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with a short second operand did not panic", name)
				}
			}()
			f()
		}()
	}
}

// The kernels against the plain loops, interleaved: run natively and under
// GOOS=js GOARCH=wasm go test -exec "$(go env GOROOT)/lib/wasm/go_js_wasm_exec"
// and compare the ratios (the sizes are a participant's: a block row of an
// MNIST quadrant, a 452-pick Gram row).
func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, y := randVec(r, 452), randVec(r, 452)
	s := 0.0
	b.Run("plain", func(b *testing.B) {
		for range b.N {
			s += plainDot(x, y)
		}
	})
	b.Run("vec", func(b *testing.B) {
		for range b.N {
			s += Dot(x, y)
		}
	})
	_ = s
}

// BenchmarkDot4: four dot products against one vector (a Gram times a
// block of vectors, gram.Split's subspace iteration), as four Dots and as
// one Dot4, at an 838-pick Gram row.
func BenchmarkDot4(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := randVec(r, 838)
	y := [4][]float64{randVec(r, 838), randVec(r, 838), randVec(r, 838), randVec(r, 838)}
	s := 0.0
	b.Run("dot", func(b *testing.B) {
		for range b.N {
			s += Dot(x, y[0]) + Dot(x, y[1]) + Dot(x, y[2]) + Dot(x, y[3])
		}
	})
	b.Run("dot4", func(b *testing.B) {
		for range b.N {
			s0, s1, s2, s3 := Dot4(x, y[0], y[1], y[2], y[3])
			s += s0 + s1 + s2 + s3
		}
	})
	_ = s
}

func BenchmarkAxpy(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, y := randVec(r, 452), randVec(r, 452)
	b.Run("plain", func(b *testing.B) {
		for range b.N {
			for j, v := range x {
				y[j] += 1e-9 * v
			}
		}
	})
	b.Run("vec", func(b *testing.B) {
		for range b.N {
			Axpy(1e-9, x, y)
		}
	})
}

// BenchmarkAxpy4: four rows of a Gram added to A d (a group solve's four
// moves), as four Axpys and as one Axpy4, at a 512-pick Gram row.
func BenchmarkAxpy4(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := [4][]float64{randVec(r, 512), randVec(r, 512), randVec(r, 512), randVec(r, 512)}
	y := randVec(r, 512)
	alpha := [4]float64{1e-9, -2e-9, 3e-9, -4e-9}
	b.Run("axpy", func(b *testing.B) {
		for range b.N {
			for k := range x {
				Axpy(alpha[k], x[k], y)
			}
		}
	})
	b.Run("axpy4", func(b *testing.B) {
		for range b.N {
			Axpy4(alpha, x[0], x[1], x[2], x[3], y)
		}
	})
}
