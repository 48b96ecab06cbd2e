package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// SyntheticConfig describes a seeded synthetic data set.
type SyntheticConfig struct {
	N, M       int     // samples and features (the last feature is the bias)
	Density    float64 // share of non-zero features; 1 (or 0) is dense
	LabelNoise float64 // probability that a label is flipped
	Seed       int64
	Holdout    float64 // fraction held out by HoldoutByID
}

// Synthetic generates a linear problem with label noise: a random
// ground-truth w, features Gaussian (dense) or a random share Density of
// them in [1,2) (sparse, each row at least one), a constant last feature
// 1 as the bias, y = sign(x.w) flipped with probability LabelNoise. Dense
// data is stored dense, sparse data sparse; ids are "syn-<i>". The same
// config always gives the same data.
func Synthetic(c SyntheticConfig) (*Dataset, error) {
	if c.N < 1 || c.M < 2 || c.M > math.MaxInt32 {
		return nil, fmt.Errorf("synthetic: need N >= 1 and 2 <= M < 2^31, got %d x %d", c.N, c.M)
	}
	if c.Density == 0 {
		c.Density = 1
	}
	if !(c.Density > 0 && c.Density <= 1) || !(c.LabelNoise >= 0 && c.LabelNoise < 1) {
		return nil, fmt.Errorf("synthetic: density %v must be in (0,1], noise %v in [0,1)", c.Density, c.LabelNoise)
	}
	dense := c.Density >= 1
	// Expected stored values; the cap keeps a typo from exhausting memory.
	if vals := float64(c.N) * (c.Density*float64(c.M-1) + 2); vals > float64(maxDenseValues) {
		return nil, fmt.Errorf("synthetic: %d x %d at density %v is about %.3g values, more than %d", c.N, c.M, c.Density, vals, maxDenseValues)
	}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x5eed))
	truth := make([]float64, c.M)
	for j := range truth {
		truth[j] = rng.NormFloat64()
	}
	var x *Matrix
	if dense {
		x = NewDense(c.N, c.M)
	} else {
		x = NewSparseBuilder(c.M)
		// Sparse features are all positive, so a bias weight would push
		// most rows to one class: the truth has none.
		truth[c.M-1] = 0
	}
	d := &Dataset{Name: fmt.Sprintf("synthetic:%d,%d", c.N, c.M)}
	d.Y = make([]float64, 0, c.N)
	d.IDs = make([]string, 0, c.N)
	logKeep := math.Log1p(-c.Density)
	var idx []int32
	var val []float64
	for i := 0; i < c.N; i++ {
		if dense {
			r := x.Data[i*c.M : (i+1)*c.M]
			for j := 0; j < c.M-1; j++ {
				r[j] = rng.NormFloat64()
			}
			r[c.M-1] = 1
		} else {
			// Geometric gaps between chosen features: O(non-zeros) work
			// per row instead of one draw per feature.
			idx, val = idx[:0], val[:0]
			for j := -1; ; {
				gap := math.Floor(math.Log(1-rng.Float64()) / logKeep)
				if gap >= float64(c.M-2-j) {
					break
				}
				j += 1 + int(gap)
				idx = append(idx, int32(j))
				val = append(val, 1+rng.Float64())
			}
			if len(idx) == 0 { // every row holds at least one feature
				idx = append(idx, int32(rng.IntN(c.M-1)))
				val = append(val, 1)
			}
			idx = append(idx, int32(c.M-1))
			val = append(val, 1)
			x.AppendRow(idx, val)
		}
		y := 1.0
		if x.Dot(i, truth) < 0 {
			y = -1
		}
		if rng.Float64() < c.LabelNoise {
			y = -y
		}
		d.Y = append(d.Y, y)
		d.IDs = append(d.IDs, "syn-"+strconv.Itoa(i))
	}
	d.X = x
	applyHoldout(d, c.Holdout)
	return d, d.Validate()
}
