package central

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
)

// passChecksFirst is how often the first pass is priced: small data sets
// reach a loose target within one pass, and "1 pass" would hide by how much.
const passChecksFirst = 10

// Passes measures plain sequential SDCA, the yardstick of the federation's
// progress per sample update: coordinate steps in a fresh random order each
// pass over the training samples, no shrinking, no exact finish (Solve has
// both, so its epochs are not comparable). It returns, for each target, the
// number of passes after which the relative loss (P(w) - pstar)/pstar first
// fell below it, at about every tenth during the first pass and whole passes after;
// -1 when not within maxPasses. cfg.Tol and cfg.MaxEpochs are not used.
func Passes(ctx context.Context, d *dataset.Dataset, cfg Config, pstar float64, targets []float64, maxPasses int) ([]float64, error) {
	if cfg.Lambda <= 0 {
		return nil, fmt.Errorf("central: lambda must be positive, got %v", cfg.Lambda)
	}
	if pstar <= 0 {
		return nil, fmt.Errorf("central: P* must be positive, got %v", pstar)
	}
	if cfg.Loss == nil {
		cfg.Loss = loss.Hinge{}
	}
	var train []int
	for i := 0; i < d.N(); i++ {
		if !d.Heldout[i] {
			train = append(train, i)
		}
	}
	if len(train) == 0 {
		return nil, fmt.Errorf("central: data set %s has no training samples", d.Name)
	}
	lambdaN := cfg.Lambda * float64(len(train))
	q := make([]float64, d.N())
	for _, i := range train {
		q[i] = d.X.RowNormSq(i)
	}
	w := make([]float64, d.M())
	alpha := make([]float64, d.N())
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5dca))
	out := make([]float64, len(targets))
	for k := range out {
		out[k] = -1
	}
	left := len(targets)
	check := func(passes float64) {
		p, _, _, _ := Objectives(d, cfg.Loss, cfg.Lambda, w, nil)
		rel := (p - pstar) / pstar
		for k, t := range targets {
			if out[k] < 0 && rel < t {
				out[k] = passes
				left--
			}
		}
	}
	order := append([]int(nil), train...)
	for pass := 0; pass < maxPasses && left > 0; pass++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("central: %w", err)
		}
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		next := 1
		for s, i := range order {
			delta := cfg.Loss.Step(alpha[i], d.Y[i], d.X.Dot(i, w), q[i], lambdaN)
			if delta != 0 {
				alpha[i] += delta
				d.X.AddRowTo(i, delta/lambdaN, w)
			}
			if pass == 0 && next < passChecksFirst && (s+1)*passChecksFirst >= next*len(order) {
				check(float64(s+1) / float64(len(order)))
				for next < passChecksFirst && (s+1)*passChecksFirst >= next*len(order) {
					next++
				}
			}
		}
		check(float64(pass + 1))
	}
	return out, nil
}
