package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
)

// runBench times whole rounds, split by phase, on an in-process federation.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	var df dataFlags
	df.register(fs, "fashion-mnist")
	var o experiment.Options
	fs.StringVar(&o.Partition, "partition", "quadrants:2", "partition")
	fs.StringVar(&o.Step, "step", "hyfed", "step rule: hyfed or paper")
	fs.Float64Var(&o.Lambda, "lambda", 1e-3, "lambda")
	fs.Float64Var(&o.IIC, "iic", 0.2, "inner iterations constant")
	fs.Float64Var(&o.Fraction, "fraction", 1, "fraction")
	fs.IntVar(&o.Rounds, "rounds", 5, "rounds to time")
	if err := parse(fs, args); err != nil {
		return err
	}
	o.Data, o.Positive, o.Holdout = df.data, df.positive, df.holdout
	o.PStar = 1 // not needed: only time is measured
	o.Seed = 1
	t0 := time.Now()
	p, err := experiment.Prepare(o)
	if err != nil {
		return err
	}
	load := time.Since(t0)
	var rounds []protocol.RoundMetrics
	o.Script = nil
	s, err := experiment.RunPreparedWithHistory(ctx, p, o, &rounds)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "data %s (%d x %d), partition %s, %d clients, step %s, H=%d, load+partition %.2fs\n",
		p.Data.Name, p.Data.N(), p.Data.M(), o.Partition, s.Clients, s.Step, s.Inner, load.Seconds())
	totals := map[string]float64{}
	n := 0
	for _, r := range rounds {
		if r.Round == 0 {
			continue
		}
		n++
		for ph, v := range r.Seconds {
			totals[ph] += v
		}
	}
	if n == 0 {
		return fmt.Errorf("no rounds ran")
	}
	phases := protocol.Phases
	sum := 0.0
	fmt.Fprintf(stdout, "%-10s %12s\n", "phase", "ms/round")
	for _, ph := range phases {
		fmt.Fprintf(stdout, "%-10s %12.2f\n", ph, 1000*totals[ph]/float64(n))
		sum += totals[ph]
	}
	fmt.Fprintf(stdout, "%-10s %12.2f\n", "total", 1000*sum/float64(n))
	fmt.Fprintf(stdout, "bytes/round: %d to server, %d from server\n", s.BytesIn/(n+1), s.BytesOut/(n+1))
	return nil
}
