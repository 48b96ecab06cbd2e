// Package central trains the same model on pooled data with sequential
// stochastic dual coordinate ascent (SDCA). Federated runs are measured
// against its optimum P*: relative loss (P - P*)/P*.
package central

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
)

// Config sets up a centralized solve.
type Config struct {
	Lambda float64
	Loss   loss.Loss
	// Tol is the relative duality gap (P-D)/|P| at which the solver stops.
	Tol       float64
	MaxEpochs int
	Seed      uint64
	// Progress, if set, is called after every epoch.
	Progress func(epoch int, primal, dual float64)
}

// Result is what `hyfed central` prints.
type Result struct {
	Primal       float64   `json:"primal"`
	Dual         float64   `json:"dual"`
	Gap          float64   `json:"gap"`
	RelativeGap  float64   `json:"relative_gap"`
	Accuracy     float64   `json:"accuracy"`       // held-out accuracy (train if nothing is held out)
	TrainAcc     float64   `json:"train_accuracy"` // training accuracy
	Iterations   int       `json:"iterations"`     // coordinate steps
	Epochs       int       `json:"epochs"`
	Seconds      float64   `json:"seconds"`
	Converged    bool      `json:"converged"`
	W            []float64 `json:"-"`
	Alpha        []float64 `json:"-"`
	NumTrain     int       `json:"n_train"`
	NumHeldout   int       `json:"n_heldout"`
	NumFeatures  int       `json:"features"`
	Lambda       float64   `json:"lambda"`
	LossFunction string    `json:"loss"`
}

// Objectives evaluates P(w), D(alpha) and accuracies on the training and
// held-out samples of d. alpha is indexed like d's samples (held-out
// entries are ignored).
func Objectives(d *dataset.Dataset, l loss.Loss, lambda float64, w, alpha []float64) (primal, dual, trainAcc, heldAcc float64) {
	var lsum, csum float64
	var nTrain, okTrain, nHeld, okHeld int
	for i := 0; i < d.N(); i++ {
		z := d.X.Dot(i, w)
		y := d.Y[i]
		correct := z*y > 0
		if d.Heldout[i] {
			nHeld++
			if correct {
				okHeld++
			}
			continue
		}
		nTrain++
		if correct {
			okTrain++
		}
		lsum += l.Value(z, y)
		if alpha != nil {
			csum += l.Conj(alpha[i], y)
		}
	}
	ww := 0.0
	for _, v := range w {
		ww += v * v
	}
	n := float64(nTrain)
	primal = lambda/2*ww + lsum/n
	dual = csum/n - lambda/2*ww
	trainAcc = float64(okTrain) / math.Max(1, float64(nTrain))
	heldAcc = trainAcc
	if nHeld > 0 {
		heldAcc = float64(okHeld) / float64(nHeld)
	}
	return
}

// Solve runs SDCA on the training samples of d until the relative duality
// gap reaches cfg.Tol or MaxEpochs passes are done.
func Solve(ctx context.Context, d *dataset.Dataset, cfg Config) (*Result, error) {
	if cfg.Lambda <= 0 {
		return nil, fmt.Errorf("central: lambda must be positive, got %v", cfg.Lambda)
	}
	if cfg.Loss == nil {
		cfg.Loss = loss.Hinge{}
	}
	if cfg.Tol <= 0 {
		cfg.Tol = 1e-9
	}
	if cfg.MaxEpochs <= 0 {
		cfg.MaxEpochs = 2000
	}
	start := time.Now()
	var train []int
	for i := 0; i < d.N(); i++ {
		if !d.Heldout[i] {
			train = append(train, i)
		}
	}
	if len(train) == 0 {
		return nil, fmt.Errorf("central: data set %s has no training samples", d.Name)
	}
	n := float64(len(train))
	lambdaN := cfg.Lambda * n
	q := make([]float64, d.N())
	for _, i := range train {
		q[i] = d.X.RowNormSq(i)
	}
	w := make([]float64, d.M())
	alpha := make([]float64, d.N())
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5dca))
	res := &Result{NumTrain: len(train), NumHeldout: d.N() - len(train), NumFeatures: d.M(), Lambda: cfg.Lambda, LossFunction: cfg.Loss.Name()}
	order := append([]int(nil), train...)
	var primal, dual float64
	for epoch := 1; epoch <= cfg.MaxEpochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("central: %w", err)
		}
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			z := d.X.Dot(i, w)
			delta := cfg.Loss.Step(alpha[i], d.Y[i], z, q[i], lambdaN)
			if delta != 0 {
				alpha[i] += delta
				d.X.AddRowTo(i, delta/lambdaN, w)
			}
		}
		res.Iterations += len(order)
		res.Epochs = epoch
		// Recompute w from alpha now and then: the running sum drifts.
		if epoch%10 == 0 {
			w = PrimalFromDual(d, alpha, cfg.Lambda, len(train))
		}
		primal, dual, res.TrainAcc, res.Accuracy = Objectives(d, cfg.Loss, cfg.Lambda, w, alpha)
		if cfg.Progress != nil {
			cfg.Progress(epoch, primal, dual)
		}
		if (primal-dual)/math.Abs(primal) <= cfg.Tol {
			res.Converged = true
			break
		}
	}
	res.Primal, res.Dual, res.Gap = primal, dual, primal-dual
	res.RelativeGap = res.Gap / math.Abs(primal)
	res.W, res.Alpha = w, alpha
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// PrimalFromDual returns w(alpha) = 1/(lambda N) sum over training samples of alpha_n x_n.
func PrimalFromDual(d *dataset.Dataset, alpha []float64, lambda float64, nTrain int) []float64 {
	w := make([]float64, d.M())
	s := 1 / (lambda * float64(nTrain))
	for i := 0; i < d.N(); i++ {
		if !d.Heldout[i] {
			d.X.AddRowTo(i, alpha[i]*s, w)
		}
	}
	return w
}
