package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
)

func runExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("experiment", stderr)
	var df dataFlags
	df.register(fs, "fashion-mnist")
	var o experiment.Options
	fs.StringVar(&o.Partition, "partition", "quadrants:2", "partition: quadrants:K, grid:K,Q, horizontal:K or vertical:Q")
	configFlags(fs, &o.Config)
	fs.Int64Var(&o.Seed, "seed", 1, "seed of participation draws, picks and the experiment's secret")
	fs.Float64Var(&o.PStar, "pstar", 0, "centralized optimum P* (default: computed with the central solver)")
	fs.StringVar(&o.Metrics, "metrics", "", "write one CSV row per round to this file")
	fs.BoolVar(&o.Plaintext, "plaintext", false, "seal nothing: dual values and inner products travel in plaintext (for comparison; the default encrypts with BGV)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	modelPath := fs.String("model", "", modelUsage)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the whole run, data loading and central solve included, to FILE")
	var bf baselineFlags
	bf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	prof, err := startProfiles(*cpuProfile, "", stderr)
	if err != nil {
		return err
	}
	defer prof.stop()
	o.Data, o.Positive, o.Holdout = df.data, df.positive, df.holdout
	if !*quiet {
		o.Progress = stderr
	}
	bf.apply(&o.Config)
	p, err := experiment.Prepare(o)
	if err != nil {
		return err
	}
	var hist []protocol.RoundMetrics
	s, err := experiment.RunPreparedWithHistory(ctx, p, o, &hist)
	if err != nil {
		return err
	}
	if *modelPath != "" {
		if err := writeModel(*modelPath, s.Loss, p.Data.UnscaleWeights(s.Model.W), experimentInfo(s, o, p.Data, hist), stderr); err != nil {
			return err
		}
	}
	if o.Baseline() {
		return printBaselineSummary(stdout, s, o.Algo)
	}
	return printJSON(stdout, s)
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
