package dataset

import (
	"fmt"
	"math/rand/v2"
)

// SyntheticConfig describes a seeded synthetic data set.
type SyntheticConfig struct {
	N, M       int
	Density    float64 // share of non-zero features; 1 (or 0) is dense
	LabelNoise float64 // probability that a label is flipped
	Seed       uint64
	Holdout    float64
}

// Synthetic generates a linearly separable problem with label noise:
// features Gaussian (dense) or a random sparse set of them, a last constant
// feature as the bias, y = sign(x.w) for a random w, then flipped with
// probability LabelNoise. Dense data is stored dense, sparse data sparse.
func Synthetic(c SyntheticConfig) (*Dataset, error) {
	if c.N < 1 || c.M < 2 {
		return nil, fmt.Errorf("synthetic: need N >= 1 and M >= 2, got %d x %d", c.N, c.M)
	}
	if c.Density == 0 {
		c.Density = 1
	}
	if !(c.Density > 0 && c.Density <= 1) || !(c.LabelNoise >= 0 && c.LabelNoise < 1) {
		return nil, fmt.Errorf("synthetic: density %v must be in (0,1], noise %v in [0,1)", c.Density, c.LabelNoise)
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	truth := make([]float64, c.M)
	for j := range truth {
		truth[j] = rng.NormFloat64()
	}
	dense := c.Density >= 1
	var x *Matrix
	if dense {
		x = NewDense(c.N, c.M)
	} else {
		x = NewSparseBuilder(c.M)
	}
	d := &Dataset{Name: fmt.Sprintf("synthetic:%d,%d", c.N, c.M)}
	var idx []int32
	var val []float64
	for i := 0; i < c.N; i++ {
		z := 0.0
		if dense {
			r := x.Data[i*c.M : (i+1)*c.M]
			for j := 0; j < c.M-1; j++ {
				r[j] = rng.NormFloat64()
			}
			r[c.M-1] = 1
			for j, v := range r {
				z += v * truth[j]
			}
		} else {
			idx, val = idx[:0], val[:0]
			for j := 0; j < c.M-1; j++ {
				if rng.Float64() < c.Density {
					idx = append(idx, int32(j))
					val = append(val, 1+rng.Float64())
				}
			}
			if len(idx) == 0 { // every row holds at least one feature
				j := rng.IntN(c.M - 1)
				idx = append(idx, int32(j))
				val = append(val, 1)
			}
			idx = append(idx, int32(c.M-1))
			val = append(val, 1)
			for k, j := range idx {
				z += val[k] * truth[j]
			}
			z -= truth[c.M-1] // the bias alone would give most rows one class
			x.AppendRow(idx, val)
		}
		y := 1.0
		if z < 0 {
			y = -1
		}
		if rng.Float64() < c.LabelNoise {
			y = -y
		}
		d.Y = append(d.Y, y)
		d.IDs = append(d.IDs, fmt.Sprintf("syn-%d", i))
	}
	d.X = x
	applyHoldout(d, c.Holdout)
	return d, d.Validate()
}
