package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/protocol"
)

// baselineFlags are the algorithm flags of hyfed experiment and hyfed
// create (--algo and the baselines' settings): one registration, one set of
// defaults for both.
type baselineFlags struct {
	fs           *flag.FlagSet
	algo         string
	stepA, stepB float64
	mu           float64
	mode         string
}

func (b *baselineFlags) register(fs *flag.FlagSet) {
	b.fs = fs
	fs.StringVar(&b.algo, "algo", protocol.AlgoHyFDCA, "algorithm: hyfdca, or a baseline run through the same federation: fedavg, hyfem-avg, hyfem-prox (local SGD steps, weights averaged per feature under sealing), fedhybrid (horizontal partitions, --loss logistic; consensus summed under sealing)")
	fs.Float64Var(&b.stepA, "step-a", 0.1, "fedavg/hyfem: the local SGD step is a/(b+sqrt(t)): a. fedhybrid: every a_i (default: its own rule)")
	fs.Float64Var(&b.stepB, "step-b", 1, "fedavg/hyfem: b of the local step a/(b+sqrt(t)). fedhybrid: every b_i (default: its own rule)")
	fs.Float64Var(&b.mu, "mu", 0, "hyfem-prox: weight of the proximal term mu ||w_k - w||^2 (default 0.1); fedhybrid: the augmented Lagrangian's penalty (experiment: from the data; create: required)")
	fs.StringVar(&b.mode, "mode", "newton", "fedhybrid: newton, gradient or mixed updates")
}

// apply sets the algorithm and its settings in cfg; hyfdca takes none of
// the baselines' settings.
func (b *baselineFlags) apply(cfg *protocol.Config) {
	cfg.Algo = b.algo
	if b.algo == protocol.AlgoHyFDCA {
		return
	}
	cfg.Mu = b.mu
	switch b.algo {
	case fedhybrid.Name:
		cfg.Mode = b.mode
		// FedHybrid's a_i and b_i default to its own rule, not to
		// the averaging baselines' SGD step.
		cfg.StepA, cfg.StepB = 0, 0
		if flagSet(b.fs, "step-a") {
			cfg.StepA = b.stepA
		}
		if flagSet(b.fs, "step-b") {
			cfg.StepB = b.stepB
		}
	default:
		cfg.StepA, cfg.StepB = b.stepA, b.stepB
		if b.algo == averaging.HyFEMProx && !flagSet(b.fs, "mu") {
			cfg.Mu = averaging.DefaultProxMu
		}
	}
}

// printBaselineSummary prints a baseline run's summary: that of a HyFDCA
// experiment without the dual, which the baselines do not have (the
// fields are dropped rather than printed as zeros), and with "algo".
func printBaselineSummary(w io.Writer, s *experiment.Summary, algo string) error {
	c := *s
	c.Dual, c.Gap = 0, 0 // NaN: no dual
	b, err := json.Marshal(c)
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
	m["algo"] = algo
	return printJSON(w, m)
}

// runPoints runs o on p through the in-memory federation and returns its
// rounds as points (those completed, with the error of a run that stopped
// early). A point's seconds are the phases' seconds scaled to the measured
// wall time (the phase timings omit the transport's own overhead): Seconds
// every phase, IterSeconds without a baseline's metrics phases (inner
// products and metrics), which its iterates do not need but its handed-out
// model does (they find its best round); HyFDCA's step uses them.
func runPoints(ctx context.Context, p *experiment.Prepared, o experiment.Options) ([]cmpPoint, error) {
	o.PStar = 1 // not needed here: the report computes relative losses
	start := time.Now()
	var h []protocol.RoundMetrics
	_, err := experiment.RunPreparedWithHistory(ctx, p, o, &h)
	total := time.Since(start).Seconds()
	baseline := o.Algo != "" && o.Algo != protocol.AlgoHyFDCA
	all, lean := 0.0, 0.0
	pts := make([]cmpPoint, 0, len(h))
	best, bestAcc := math.Inf(1), math.NaN() // the handed-out model (Coordinator.keepIfBest)
	for _, r := range h {
		if r.Round == 0 {
			continue
		}
		if !r.Partial && r.Primal < best {
			best, bestAcc = r.Primal, r.HeldAcc
		}
		model, acc := best, bestAcc
		if math.IsInf(best, 1) { // no certified round yet: the current iterate
			model, acc = r.Primal, r.HeldAcc
		}
		for phase, sec := range r.Seconds {
			all += sec
			if !baseline || (phase != protocol.PhaseMargins && phase != protocol.PhaseScore) {
				lean += sec
			}
		}
		pts = append(pts, cmpPoint{Round: r.Round, Seconds: all, IterSeconds: lean, Primal: model, HeldAcc: acc, IterPrimal: r.Primal})
	}
	if all > 0 {
		for i := range pts {
			pts[i].Seconds *= total / all
			pts[i].IterSeconds *= total / all
		}
	}
	if err != nil {
		return pts, fmt.Errorf("%s: %w", o.Algo, err)
	}
	return pts, nil
}
