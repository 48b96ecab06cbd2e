package fedhybrid

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// TestNewtonSolveIsMatCholesky: the Newton system solved on LAPACK directly
// gives gonum's mat.Cholesky's numbers bit for bit, and refuses what it
// refuses (not positive definite; too badly conditioned), so that leaving
// the mat package out of the browser's participant changed no run.
func TestNewtonSolveIsMatCholesky(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name  string
		n     int
		shift float64 // added to the diagonal of B^T B
	}{
		{"1x1", 1, 0.5},
		{"well conditioned", 7, 1},
		{"larger than a LAPACK block", 70, 0.1},
		{"nearly singular", 6, 1e-18},
		{"badly conditioned", 4, 0},
		{"indefinite", 5, -100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			b := make([]float64, 3*n*n)
			for i := range b {
				b[i] = rng.NormFloat64()
			}
			if tc.name == "nearly singular" {
				for i := 0; i < 3*n; i++ { // rank 1
					for j := 1; j < n; j++ {
						b[i*n+j] = b[i*n] * float64(j)
					}
				}
			}
			sym := mat.NewSymDense(n, nil)
			sym.SymOuterK(1, mat.NewDense(3*n, n, b).T())
			if tc.name == "badly conditioned" { // positive definite, condition 1e17
				sym = mat.NewSymDense(n, nil)
				for i := 0; i < n; i++ {
					sym.SetSym(i, i, 1)
				}
				sym.SetSym(n-1, n-1, 1e-17)
			}
			for i := 0; i < n; i++ {
				sym.SetSym(i, i, sym.At(i, i)+tc.shift)
			}
			g := make([]float64, n)
			for i := range g {
				g[i] = rng.NormFloat64()
			}

			var chol mat.Cholesky
			var want mat.VecDense
			var wantErr error
			ok := chol.Factorize(sym)
			if ok {
				wantErr = chol.SolveVecTo(&want, mat.NewVecDense(n, g))
			}

			raw := sym.RawSymmetric()
			p := &Node{hess: blas64.Symmetric{N: n, Stride: raw.Stride, Uplo: blas.Upper, Data: raw.Data}}
			got, err := p.newtonSolve(g)
			if (err != nil) != (!ok || wantErr != nil) {
				t.Fatalf("newtonSolve error %v; mat.Cholesky: factorized %v, solve error %v", err, ok, wantErr)
			}
			if err != nil {
				t.Logf("both refuse: %v", err)
				return
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want.AtVec(i)) {
					t.Fatalf("entry %d: %v, mat.Cholesky %v", i, got[i], want.AtVec(i))
				}
			}
		})
	}
}
