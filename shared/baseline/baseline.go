package baseline

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// The algorithms Run knows (Options.Algo).
//
// For linear models HyFEM-Avg is FedAvg: the HyFEM paper has no feature extractor
// parameters to learn here (the embedding h_m is the identity on the
// client's features), the matching Pi_m of its eq. (8) is the identity on
// the client's features (features are named, there is nothing to permute),
// so the global step (8) is the per-feature average, and HyFEM-Avg's local
// problem (9) drops the penalty, leaving FedAvg's local SGD. It stays a name
// of its own so that comparisons list it as the paper does; Run computes
// the same rounds for both (a test checks it). (004's eq. (6) sums the local
// losses where we average them: that scales the step by the block size,
// which StepA absorbs.)
const (
	FedAvg    = averaging.FedAvg
	HyFEMAvg  = averaging.HyFEMAvg
	HyFEMProx = averaging.HyFEMProx
)

// Algorithms lists the values of Options.Algo that Run accepts.
var Algorithms = averaging.Algorithms

// ErrDiverged marks a run whose weights left the finite or the sealable
// range (averaging.ErrDiverged).
var ErrDiverged = averaging.ErrDiverged

// Options configure one run.
type Options struct {
	Algo   string  // fedavg, hyfem-avg or hyfem-prox
	Loss   string  // hinge (default) or logistic
	Lambda float64 // regularization of P(w), >= 0
	Rounds int     // communication rounds, >= 1
	Inner  int     // H: local SGD steps per active client and round, >= 1
	// StepA and StepB give the local step a/(b+sqrt(t)), t the client's
	// local step count (the HyFDCA paper, sec. 5.1): a > 0, b >= 0.
	StepA, StepB float64
	// Mu weighs HyFEM-Prox's penalty mu ||w_k - w_global on M_k||^2; it
	// must be positive for hyfem-prox and 0 for the others.
	Mu float64
	// Fraction is the probability that a client is active in a round, in
	// (0, 1]; 0 means 1.
	Fraction float64
	Seed     int64
	Scheme   string // bgv (default) or plaintext
	// OnRound, if set, sees every round's metrics and the global model
	// (read-only, valid during the call) as soon as the round is done.
	OnRound func(m RoundMetrics, w []float64)
}

// RoundMetrics are one round's measurements. Primal and the accuracies are
// computed centrally from the whole data set: measurement, not protocol.
type RoundMetrics struct {
	Round    int
	Primal   float64 // P(w) over the training samples
	TrainAcc float64
	HeldAcc  float64 // held-out accuracy (TrainAcc when nothing is held out)
	Active   int     // clients active in the round
	// Seconds is the round's wall time: local steps, sealing, the server's
	// sum and opening, not the metrics.
	Seconds         float64
	BytesToServer   int // sealed local weights
	BytesFromServer int // sealed sums sent back
}

// Validate checks the options and names the field at fault.
func (o Options) Validate() error {
	known := false
	for _, a := range Algorithms {
		known = known || o.Algo == a
	}
	if !known {
		return fmt.Errorf("baseline: Algo %q: want one of %v", o.Algo, Algorithms)
	}
	if _, err := loss.Parse(o.Loss); err != nil {
		return fmt.Errorf("baseline: Loss: %w", err)
	}
	if !(o.Lambda >= 0) || math.IsInf(o.Lambda, 0) {
		return fmt.Errorf("baseline: Lambda %v must be a finite number >= 0", o.Lambda)
	}
	if o.Rounds < 1 {
		return fmt.Errorf("baseline: Rounds %d must be at least 1", o.Rounds)
	}
	if o.Inner < 1 {
		return fmt.Errorf("baseline: Inner (H) %d must be at least 1", o.Inner)
	}
	if !(o.StepA > 0) || math.IsInf(o.StepA, 0) {
		return fmt.Errorf("baseline: StepA %v must be a finite number > 0", o.StepA)
	}
	if !(o.StepB >= 0) || math.IsInf(o.StepB, 0) {
		return fmt.Errorf("baseline: StepB %v must be a finite number >= 0", o.StepB)
	}
	if o.Algo == HyFEMProx {
		if !(o.Mu > 0) || math.IsInf(o.Mu, 0) {
			return fmt.Errorf("baseline: Mu %v must be a finite number > 0 for %s (Mu 0 is %s)", o.Mu, HyFEMProx, HyFEMAvg)
		}
	} else if o.Mu != 0 {
		return fmt.Errorf("baseline: Mu %v applies to %s only, %s has none", o.Mu, HyFEMProx, o.Algo)
	}
	if o.Fraction != 0 && !(o.Fraction > 0 && o.Fraction <= 1) {
		return fmt.Errorf("baseline: Fraction %v must be in (0, 1] (0 means 1)", o.Fraction)
	}
	if _, err := schemeByName(o.Scheme); err != nil {
		return fmt.Errorf("baseline: Scheme: %w", err)
	}
	return nil
}

// schemeByName accepts only the names seal.ByName knows without building
// a scheme (BGV parameters cost a little).
func schemeByName(name string) (string, error) {
	switch name {
	case "", "bgv":
		return "bgv", nil
	case "plaintext":
		return name, nil
	}
	return "", fmt.Errorf("unknown scheme %q (want bgv or plaintext)", name)
}

// client is one participant's state between rounds.
type client struct {
	block *partition.Block
	train []int    // rows not held out
	key   seal.Key // its own key object
	steps int      // local SGD steps taken so far (t of the step size)
}

// Run trains on the blocks (cut from d; d serves only the metrics) with the
// algorithm of o and returns one RoundMetrics per round done. On an error
// (a cancelled ctx, divergence) it returns the rounds done before it.
//
// A round: every client is active with probability Fraction (one seeded draw
// per client, in client order); every active client starts from the global
// model on its features and takes H local SGD steps; the global model becomes,
// per feature, the average over the active holders of their local weights
// (Average). Inactive clients take no part: the local weights they had are
// in no later average, and a feature with no active holder keeps its value.
// A client whose samples are all held out never trains and counts as
// inactive. The global model starts at 0.
func Run(ctx context.Context, d *dataset.Dataset, blocks []partition.Block, o Options) ([]RoundMetrics, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if d == nil || d.X == nil {
		return nil, fmt.Errorf("baseline: no data set")
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("baseline: no blocks")
	}
	l, _ := loss.Parse(o.Loss)
	name, _ := schemeByName(o.Scheme)
	scheme, err := seal.ByName(name)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	fraction := o.Fraction
	if fraction == 0 {
		fraction = 1
	}
	sgd := averaging.LocalSGD{Loss: l, Lambda: o.Lambda, A: o.StepA, B: o.StepB, Mu: o.Mu}

	sec := secret.FromSeed(o.Seed)
	clients := make([]client, len(blocks))
	for k := range blocks {
		b := &blocks[k]
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("baseline: client %d: %w", k, err)
		}
		if b.NumFeatures != d.M() {
			return nil, fmt.Errorf("baseline: client %d: block of %d features in all, %s has %d", k, b.NumFeatures, d.Name, d.M())
		}
		key, err := seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose))
		if err != nil {
			return nil, fmt.Errorf("baseline: client %d key: %w", k, err)
		}
		c := client{block: b, key: key}
		for r, h := range b.Heldout {
			if !h {
				c.train = append(c.train, r)
			}
		}
		clients[k] = c
	}

	global := make([]float64, d.M())
	var hist []RoundMetrics
	for round := 1; round <= o.Rounds; round++ {
		if err := ctx.Err(); err != nil {
			return hist, fmt.Errorf("baseline: before round %d: %w", round, err)
		}
		start := time.Now()
		activity := averaging.ActivityDraws(o.Seed, round)
		var shares []Share
		for k := range clients {
			// Draw for every client, active or not, so that one
			// client's draw does not depend on another's.
			if activity.Float64() >= fraction || len(clients[k].train) == 0 {
				continue
			}
			c := &clients[k]
			w := make([]float64, len(c.block.Features))
			for j, f := range c.block.Features {
				w[j] = global[f]
			}
			var anchor []float64
			if o.Algo == HyFEMProx {
				// Pi_k w_global: for linear models the matching of
				// the HyFEM paper (8) is the identity on the client's
				// features, so this is the restriction.
				anchor = append([]float64(nil), w...)
			}
			picks := averaging.RoundPicks(o.Seed, round, k, c.train, o.Inner)
			if c.steps, err = sgd.Run(c.block.X, c.block.Y, picks, w, anchor, c.steps); err != nil {
				return hist, fmt.Errorf("baseline: round %d, client %d: %w", round, k, err)
			}
			shares = append(shares, Share{Key: c.key, Features: c.block.Features, Weights: w})
		}
		tr, err := Average(scheme, shares, global)
		if err != nil {
			return hist, fmt.Errorf("baseline: round %d: %w", round, err)
		}
		m := RoundMetrics{Round: round, Active: len(shares), Seconds: time.Since(start).Seconds(),
			BytesToServer: tr.ToServer, BytesFromServer: tr.FromServer}
		m.Primal, _, m.TrainAcc, m.HeldAcc = central.Objectives(d, l, o.Lambda, global, nil)
		hist = append(hist, m)
		if o.OnRound != nil {
			o.OnRound(m, global)
		}
	}
	return hist, nil
}
