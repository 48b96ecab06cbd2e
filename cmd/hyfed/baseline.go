package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/hyfed/hyfed/shared/baseline"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/protocol"
)

// baselineFlags are hyfed experiment's flags for the baselines (--algo).
type baselineFlags struct {
	algo         string
	stepA, stepB float64
	mu           float64
	mode         string
}

func (b *baselineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.algo, "algo", "hyfdca", "algorithm: hyfdca, or a baseline run in process: fedavg, hyfem-avg, hyfem-prox, fedhybrid (horizontal partitions, logistic or squared_hinge loss)")
	fs.Float64Var(&b.stepA, "step-a", 0.1, "baselines' local SGD step a/(b+sqrt(t)): a")
	fs.Float64Var(&b.stepB, "step-b", 1, "baselines' local SGD step a/(b+sqrt(t)): b")
	fs.Float64Var(&b.mu, "mu", 0, "HyFEM-Prox's penalty (default 0.1), FedHybrid's (default: from the data)")
	fs.StringVar(&b.mode, "mode", "newton", "FedHybrid's participants: newton, gradient or mixed")
}

// runBaselineExperiment runs a baseline in one process on the partition of
// o and prints the same JSON summary as a HyFDCA experiment (without the
// dual, which the baselines do not have).
func runBaselineExperiment(ctx context.Context, o experiment.Options, bf baselineFlags, stdout, stderr io.Writer) error {
	switch bf.algo {
	case baseline.FedAvg, baseline.HyFEMAvg, baseline.HyFEMProx, "fedhybrid":
	default:
		return fmt.Errorf("--algo %q: want hyfdca, fedavg, hyfem-avg, hyfem-prox or fedhybrid", bf.algo)
	}
	p, err := experiment.Prepare(o)
	if err != nil {
		return err
	}
	s := &experiment.Summary{Data: p.Data.Name, Partition: o.Partition, Clients: len(p.Blocks), Step: bf.algo, Loss: o.Loss,
		Lambda: o.Lambda, Fraction: o.Fraction, Rounds: o.Rounds, PStar: o.PStar, Scheme: "bgv"}
	if o.Plaintext {
		s.Scheme = "plaintext"
	}
	if s.PStar == 0 {
		lf, err := loss.Parse(o.Loss)
		if err != nil {
			return fmt.Errorf("--loss: %w", err)
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "central: solving for P* on %d samples x %d features\n", p.Data.NumTrain(), p.Data.M())
		}
		r, err := central.Solve(ctx, p.Data, central.Config{Lambda: o.Lambda, Loss: lf, Tol: 1e-9, Seed: 1})
		if err != nil {
			return err
		}
		s.PStar, s.CentralSecs = r.Primal, r.Seconds
	}
	var hist []protocol.RoundMetrics
	start := time.Now()
	last := time.Time{}
	add := func(round int, primal, trainAcc, heldAcc, secs float64) {
		r := protocol.RoundMetrics{Round: round, Primal: primal, Dual: math.NaN(), Gap: math.NaN(), TrainAcc: trainAcc, HeldAcc: heldAcc}
		rel := s.AddRound(nil, r, secs)
		hist = append(hist, r)
		if o.Progress != nil && (time.Since(last) > 2*time.Second || round == o.Rounds) {
			last = time.Now()
			fmt.Fprintf(o.Progress, "round %d/%d  P=%.6g  rel=%.3g  acc=%.4f  %.1fs\n", round, o.Rounds, primal, rel, heldAcc, secs)
		}
	}
	inner := o.Inner
	if inner <= 0 {
		inner = experiment.InnerFor(o.IIC, p.Data.NumTrain(), len(p.Blocks))
	}
	mu := bf.mu
	if bf.algo == baseline.HyFEMProx && mu == 0 {
		mu = 0.1
	}
	if bf.algo != "fedhybrid" {
		s.Inner = inner
	}
	spec := baselineSpec{algo: bf.algo, loss: o.Loss, mode: bf.mode, scheme: s.Scheme, lambda: o.Lambda, a: bf.stepA, b: bf.stepB,
		mu: mu, fraction: o.Fraction, rounds: o.Rounds, inner: inner, seed: o.Seed}
	err = runBaseline(ctx, p, spec, func(m baseline.RoundMetrics, secs float64) {
		s.BytesIn += m.BytesToServer
		s.BytesOut += m.BytesFromServer
		add(m.Round, m.Primal, m.TrainAcc, m.HeldAcc, secs)
	})
	if err != nil {
		return err
	}
	if len(hist) == 0 {
		return fmt.Errorf("%s: no rounds ran", bf.algo)
	}
	s.Finish(hist[len(hist)-1], time.Since(start).Seconds())
	// The baselines have no dual: the summary drops dual, gap and the
	// dual's counters rather than print zeros.
	s.Dual, s.Gap = 0, 0
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, k := range []string{"dual", "gap", "dual_decreases", "step"} {
		delete(m, k)
	}
	m["algo"] = bf.algo
	return printJSON(stdout, m)
}

// baselineSpec is one baseline run's settings (hyfed experiment --algo and
// hyfed compare).
type baselineSpec struct {
	algo, loss, mode, scheme   string
	lambda, a, b, mu, fraction float64
	rounds, inner              int
	seed                       int64
}

// runBaseline runs a baseline on p and calls round with every round's
// metrics and the training seconds since the start. The errors of a run
// that stopped early come after the rounds it completed.
func runBaseline(ctx context.Context, p *experiment.Prepared, s baselineSpec, round func(m baseline.RoundMetrics, seconds float64)) error {
	switch s.algo {
	case baseline.FedAvg, baseline.HyFEMAvg, baseline.HyFEMProx:
		mu := s.mu
		if s.algo != baseline.HyFEMProx {
			mu = 0 // only Prox has the penalty
		}
		cum := 0.0
		o := baseline.Options{Algo: s.algo, Loss: s.loss, Lambda: s.lambda, Rounds: s.rounds, Inner: s.inner, StepA: s.a, StepB: s.b,
			Mu: mu, Fraction: s.fraction, Seed: s.seed, Scheme: s.scheme,
			OnRound: func(m baseline.RoundMetrics, _ []float64) {
				cum += m.Seconds // per round, without the metrics
				round(m, cum)
			}}
		_, err := baseline.Run(ctx, p.Data, p.Blocks, o)
		return err
	case "fedhybrid":
		o := baseline.FedHybridOptions{Loss: s.loss, Lambda: s.lambda, Rounds: s.rounds, Mode: s.mode, Mu: s.mu,
			Fraction: s.fraction, Seed: s.seed, Scheme: s.scheme}
		rs, err := baseline.RunFedHybrid(ctx, p.Data, p.Blocks, o)
		for _, r := range rs {
			round(baseline.RoundMetrics{Round: r.Round, Primal: r.Primal, TrainAcc: r.TrainAcc, HeldAcc: r.HeldAcc, Active: r.Active}, r.Seconds)
		}
		return err
	}
	return fmt.Errorf("--algo %q: want hyfdca, fedavg, hyfem-avg, hyfem-prox or fedhybrid", s.algo)
}
