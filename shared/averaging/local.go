// Package averaging holds what a participant of an averaging baseline
// (FedAvg, HyFEM-Avg, HyFEM-Prox) computes on its own: the local SGD solver,
// the seeded draws of its picks, and the range its sealed weights must stay
// in. Package protocol runs the rounds. It is kept small because the
// browser participant links it.
//
//   - FedAvg for hybrid data (the HyFDCA paper, sec. 2, and its supplement,
//     sec. 2.3): every active client runs H steps of SGD with batch 1 on its
//     block, with its local model on its own features only, step
//     a/(b+sqrt(t)); the server averages each weight over the active
//     clients that hold its feature.
//   - HyFEM-Avg and HyFEM-Prox (the HyFEM paper, sec. 3, Algorithm 1, Remark
//     3) for linear models: the same local SGD, HyFEM-Prox with the penalty
//     mu ||w_k - Pi_k w_global||^2, and the global model averaged per
//     feature.
//
// For linear models HyFEM-Avg is FedAvg: the HyFEM paper has no feature
// extractor parameters to learn here (the embedding h_m is the identity on
// the client's features), the matching Pi_m of its eq. (8) is the identity
// on the client's features (features are named, there is nothing to
// permute), so the global step (8) is the per-feature average, and
// HyFEM-Avg's local problem (9) drops the penalty, leaving FedAvg's local
// SGD. It stays a name of its own so that comparisons list it as the paper
// does; a federation computes the same rounds for both (a test checks it).
//
// The server's step is a sum, so it goes through package seal: every
// participant seals its local weights into the slots of its features, the
// server only adds sealed vectors, and a participant opens the sum and
// divides by the public number of holders.
package averaging

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/mix"
	"github.com/hyfed/hyfed/shared/seal"
)

// The averaging baselines.
const (
	FedAvg    = "fedavg"
	HyFEMAvg  = "hyfem-avg"
	HyFEMProx = "hyfem-prox"
)

// Algorithms lists them.
var Algorithms = []string{FedAvg, HyFEMAvg, HyFEMProx}

// DefaultProxMu is HyFEM-Prox's penalty mu when a run does not give one.
const DefaultProxMu = 0.1

// ErrDiverged marks a run whose weights left the finite or the sealable
// range: the step size is too large for the data. A hyperparameter search
// (the HyFDCA paper's supplement, sec. 2.3 drops divergent runs) tests for it with errors.Is.
var ErrDiverged = errors.New("diverged")

// sumLimit bounds |sum| of sealed values: BGV adds exactly while the sum
// stays below 2^17 (seal.MaxAbs bounds one value, "sums of four" stay
// exact); beyond, it wraps silently. A feature's holders each keep below
// sumLimit/holders, and every value below seal.MaxAbs (SealSlots refuses
// more).
const sumLimit = 4 * seal.MaxAbs

// SealableLimit is the largest |weight| a holder may seal for a feature
// that n active holders share, so that their sum stays exact.
func SealableLimit(n int) float64 {
	return min(seal.MaxAbs, sumLimit/float64(max(n, 1)))
}

// LocalSGD is the local solver of FedAvg, HyFEM-Avg and HyFEM-Prox: SGD
// with batch 1 on one client's block, with the local model w_k on the
// client's features only (the prediction is x_{k,n}.w_k: the client sees no
// other feature), on the per-sample objective
//
//	f_n(w_k) = l(y_n, x_{k,n}.w_k) + lambda/2 ||w_k||^2 + mu ||w_k - anchor||^2
//
// whose (sub)gradient is l'(x_{k,n}.w_k) x_{k,n} + lambda w_k + 2 mu (w_k - anchor).
// FedAvg and HyFEM-Avg have mu = 0; HyFEM-Prox anchors at the global model
// restricted to the client's features, fixed during the round (the HyFEM paper
// eq. 6 with dist = ||.||^2, as in its Remark 2; FedProx writes mu/2).
type LocalSGD struct {
	Loss   loss.Loss
	Lambda float64
	// A and B give the step a/(b+sqrt(t)) of the client's t-th local step.
	A, B float64
	// Mu weighs the proximal term; 0 means none.
	Mu float64
}

// StepSize returns a/(b+sqrt(t)) for the client's t-th local step (t >= 1).
//
// t counts the steps the client has taken over the whole run, not the round:
// the HyFDCA paper, sec. 5.1 and its supplement, sec. 2.3 write gamma_t = a/(b+sqrt(t)) without
// saying which t, and counting steps makes the H steps of one round use
// decreasing steps too. t starts at 1 so that a tiny b (the random search of
// 001 sec. 2.3 goes down to 1e-5) does not make the first step a/b.
func (s LocalSGD) StepSize(t int) float64 {
	return s.A / (s.B + math.Sqrt(float64(t)))
}

// Run takes one SGD step per entry of picks (rows of x, labels y) on w, in
// place. anchor is the proximal centre (used only when Mu != 0; then it must
// have len(w) values). t is the number of local steps the client took
// before; Run returns the count after. It fails on mismatched shapes, an
// unsupported loss or a weight that is no longer finite (divergence).
func (s LocalSGD) Run(x *dataset.Matrix, y []float64, picks []int, w, anchor []float64, t int) (int, error) {
	deriv, err := lossDerivative(s.Loss)
	if err != nil {
		return t, err
	}
	if x.Cols != len(w) || x.Rows != len(y) {
		return t, fmt.Errorf("local sgd: block of %dx%d with %d labels for %d weights", x.Rows, x.Cols, len(y), len(w))
	}
	if s.Mu != 0 && len(anchor) != len(w) {
		return t, fmt.Errorf("local sgd: proximal anchor of %d values for %d weights", len(anchor), len(w))
	}
	for _, n := range picks {
		if n < 0 || n >= x.Rows {
			return t, fmt.Errorf("local sgd: pick %d outside the block's %d rows", n, x.Rows)
		}
		t++
		eta := s.StepSize(t)
		// Everything is evaluated at the current w before w moves.
		g := deriv(x.Dot(n, w), y[n])
		for j := range w {
			r := s.Lambda * w[j]
			if s.Mu != 0 {
				r += 2 * s.Mu * (w[j] - anchor[j])
			}
			w[j] -= eta * r
		}
		x.AddRowTo(n, -eta*g, w)
	}
	for j, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return t, fmt.Errorf("local sgd: weight %d is %v after %d steps: %w", j, v, t, ErrDiverged)
		}
	}
	return t, nil
}

// lossDerivative returns dl/dz for the losses of package loss. The hinge
// loss is not differentiable at y z = 1: its subgradient there is taken as
// 0 (the right-hand one), as the loss is flat beyond.
func lossDerivative(l loss.Loss) (func(z, y float64) float64, error) {
	switch l.(type) {
	case loss.Hinge:
		return func(z, y float64) float64 {
			if y*z < 1 {
				return -y
			}
			return 0
		}, nil
	case loss.Logistic:
		// d/dz log(1+exp(-y z)) = -y sigmoid(-y z), in the form that
		// never overflows.
		return func(z, y float64) float64 {
			m := -y * z
			if m >= 0 {
				return -y / (1 + math.Exp(-m))
			}
			e := math.Exp(m)
			return -y * e / (1 + e)
		}, nil
	case nil:
		return nil, fmt.Errorf("local sgd: no loss")
	}
	return nil, fmt.Errorf("local sgd: no gradient for loss %q (want hinge or logistic)", l.Name())
}

// Picks draws h rows uniformly at random, with replacement, from train (the
// block's training rows; held-out rows never train). It returns nil when
// train is empty.
func Picks(rng *rand.Rand, train []int, h int) []int {
	if len(train) == 0 {
		return nil
	}
	out := make([]int, h)
	for i := range out {
		out[i] = train[rng.IntN(len(train))]
	}
	return out
}

// RoundPicks returns the rows a client takes its local steps on in a
// round: H draws from the client's stream of the round, seeded by the
// federation's seed and the client's index, so a run is deterministic
// whatever order the participants answer in.
func RoundPicks(seed int64, round, client int, train []int, h int) []int {
	return Picks(roundRNG(seed, streamPicks, round, client), train, h)
}

// Purposes of the seeded random streams, so that the draws of one purpose
// never depend on another's.
const streamPicks = 1

// roundRNG returns the generator of one purpose, round and client: a PCG
// seeded from the run seed and a mix of the three, so that a run is
// deterministic and no draw depends on the order the clients run in.
func roundRNG(seed int64, purpose, round, client int) *rand.Rand {
	h := mix.SplitMix64(uint64(purpose))
	h = mix.SplitMix64(h ^ uint64(round))
	h = mix.SplitMix64(h ^ uint64(client))
	return rand.New(rand.NewPCG(uint64(seed), h))
}
