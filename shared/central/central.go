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
		cfg.MaxEpochs = 3000
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
	var err error
	q := make([]float64, d.N())
	for _, i := range train {
		q[i] = d.X.RowNormSq(i)
	}
	w := make([]float64, d.M())
	alpha := make([]float64, d.N())
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5dca))
	res := &Result{NumTrain: len(train), NumHeldout: d.N() - len(train), NumFeatures: d.M(), Lambda: cfg.Lambda, LossFunction: cfg.Loss.Name()}
	_, hinge := cfg.Loss.(loss.Hinge)
	// For the hinge loss P(w(alpha)) jumps about near the optimum while D
	// rises steadily: keep the best primal point seen and the latest dual.
	primal, dual := math.Inf(1), math.Inf(-1)
	var bestW []float64
	check := func(epoch int) bool {
		// Recompute w from alpha: the running sum drifts.
		copy(w, PrimalFromDual(d, alpha, cfg.Lambda, len(train)))
		p, dd, trainAcc, heldAcc := Objectives(d, cfg.Loss, cfg.Lambda, w, alpha)
		dual = dd
		if p < primal {
			primal, res.TrainAcc, res.Accuracy = p, trainAcc, heldAcc
			bestW = append(bestW[:0], w...)
		}
		if cfg.Progress != nil {
			cfg.Progress(epoch, primal, dual)
		}
		return (primal-dual)/math.Abs(primal) <= cfg.Tol
	}
	if hinge {
		// Coordinate ascent until the gap is small enough that the margin
		// samples are known, then the exact finish; more ascent if that
		// was too early.
		for _, handoff := range []float64{1e-6, 1e-8, cfg.Tol} {
			_, err = hingeSDCA(ctx, d, train, q, lambdaN, w, alpha, rng, cfg.MaxEpochs-res.Epochs, res,
				func(epoch int) bool {
					check(epoch)
					return (primal-dual)/math.Abs(primal) <= math.Max(handoff, cfg.Tol)
				})
			if err != nil {
				break
			}
			if res.Converged = (primal-dual)/math.Abs(primal) <= cfg.Tol; res.Converged {
				break
			}
			err = finishHinge(ctx, d, train, lambdaN, w, alpha, func() bool {
				res.Converged = check(res.Epochs)
				return res.Converged
			})
			if err != nil || res.Converged || res.Epochs >= cfg.MaxEpochs {
				break
			}
		}
	} else {
		res.Converged, err = plainSDCA(ctx, d, cfg.Loss, train, q, lambdaN, w, alpha, rng, cfg.MaxEpochs, res, check)
	}
	if err != nil {
		return nil, err
	}
	res.Primal, res.Dual, res.Gap = primal, dual, primal-dual
	res.RelativeGap = res.Gap / math.Abs(primal)
	res.W, res.Alpha = bestW, alpha
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

// plainSDCA runs epochs of sequential coordinate steps in random order.
func plainSDCA(ctx context.Context, d *dataset.Dataset, l loss.Loss, train []int, q []float64, lambdaN float64,
	w, alpha []float64, rng *rand.Rand, maxEpochs int, res *Result, check func(int) bool) (bool, error) {
	order := append([]int(nil), train...)
	for epoch := 1; epoch <= maxEpochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("central: %w", err)
		}
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			delta := l.Step(alpha[i], d.Y[i], d.X.Dot(i, w), q[i], lambdaN)
			if delta != 0 {
				alpha[i] += delta
				d.X.AddRowTo(i, delta/lambdaN, w)
			}
		}
		res.Iterations += len(order)
		res.Epochs++
		if check(res.Epochs) {
			return true, nil
		}
	}
	return false, nil
}

// hingeSDCA is dual coordinate descent with shrinking (Hsieh et al. 2008,
// as in LIBLINEAR): samples stuck at a bound of [0,1] leave the active set
// until the active set has converged, so that late epochs cost little and
// the gap can be closed to 1e-9. With b = a y the SVM dual gradient of
// coordinate i is G = y x.w - 1 and its step is b - lambda N G / q.
func hingeSDCA(ctx context.Context, d *dataset.Dataset, train []int, q []float64, lambdaN float64,
	w, alpha []float64, rng *rand.Rand, maxEpochs int, res *Result, check func(int) bool) (bool, error) {
	active := append([]int(nil), train...)
	mBar, lBar := math.Inf(1), math.Inf(-1)
	eps := 1e-3
	for epoch := 1; epoch <= maxEpochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("central: %w", err)
		}
		rng.Shuffle(len(active), func(a, b int) { active[a], active[b] = active[b], active[a] })
		hi, lo := math.Inf(-1), math.Inf(1)
		for s := 0; s < len(active); s++ {
			i := active[s]
			y := d.Y[i]
			g := y*d.X.Dot(i, w) - 1
			b := alpha[i] * y
			pg := 0.0
			switch {
			case b <= 0:
				if g > mBar {
					active[s] = active[len(active)-1]
					active = active[:len(active)-1]
					s--
					continue
				}
				pg = math.Min(g, 0)
			case b >= 1:
				if g < lBar {
					active[s] = active[len(active)-1]
					active = active[:len(active)-1]
					s--
					continue
				}
				pg = math.Max(g, 0)
			default:
				pg = g
			}
			hi, lo = math.Max(hi, pg), math.Min(lo, pg)
			res.Iterations++
			if pg == 0 || q[i] == 0 {
				continue
			}
			nb := math.Max(0, math.Min(1, b-lambdaN*g/q[i]))
			if delta := y*nb - alpha[i]; delta != 0 {
				alpha[i] += delta
				d.X.AddRowTo(i, delta/lambdaN, w)
			}
		}
		res.Epochs++
		if hi-lo <= eps {
			full := len(active) == len(train)
			if full || epoch%10 == 0 {
				if check(res.Epochs) {
					return true, nil
				}
			}
			if full {
				eps /= 10 // the gap is not closed yet: ask the active set for more
			}
			active = append(active[:0], train...)
			mBar, lBar = math.Inf(1), math.Inf(-1)
			continue
		}
		if hi <= 0 {
			hi = math.Inf(1)
		}
		if lo >= 0 {
			lo = math.Inf(-1)
		}
		mBar, lBar = hi, lo
		if epoch%10 == 0 && check(res.Epochs) {
			return true, nil
		}
	}
	check(res.Epochs)
	return false, nil
}
