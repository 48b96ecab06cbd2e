package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/loss"
)

func runCentral(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("central", stderr)
	var df dataFlags
	df.register(fs, "fashion-mnist")
	lambda := fs.Float64("lambda", 1e-3, "L2 regularization lambda")
	lossName := fs.String("loss", "hinge", "loss: hinge or logistic")
	tol := fs.Float64("tol", 1e-9, "stop at this relative duality gap")
	epochs := fs.Int("max-epochs", 3000, "stop after this many passes")
	seed := fs.Uint64("seed", 1, "seed of the sample order")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	modelPath := fs.String("model", "", modelUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	l, err := loss.Parse(*lossName)
	if err != nil {
		return err
	}
	d, err := df.load()
	if err != nil {
		return err
	}
	cfg := central.Config{Lambda: *lambda, Loss: l, Tol: *tol, MaxEpochs: *epochs, Seed: *seed}
	if !*quiet {
		cfg.Progress = func(epoch int, p, dd float64) {
			if epoch%10 == 0 {
				fmt.Fprintf(stderr, "epoch %d  P=%.10g  D=%.10g  gap=%.3g\n", epoch, p, dd, p-dd)
			}
		}
	}
	r, err := central.Solve(ctx, d, cfg)
	if err != nil {
		return err
	}
	if *modelPath != "" {
		if err := writeModel(*modelPath, l.Name(), d.UnscaleWeights(r.W), centralInfo(r, d, df.data, df.positive, *seed), stderr); err != nil {
			return err
		}
	}
	return printJSON(stdout, r)
}
