package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
)

type dataFlags struct {
	data, positive string
	holdout        float64
}

func (d *dataFlags) register(fs *flag.FlagSet, def string) {
	fs.StringVar(&d.data, "data", def, "data: fashion-mnist, mnist, breast-cancer, digits, diabetes, synthetic:N,M[,density[,noise[,seed]]], or a LIBSVM/CSV file")
	fs.StringVar(&d.positive, "positive", "", "labels mapped to +1, e.g. 0,1,2,3,4 (default: the data set's rule)")
	fs.Float64Var(&d.holdout, "holdout", 0, "fraction of samples held out for evaluation when the data has no split (the built-ins mnist, breast-cancer, digits, diabetes and synthetic default to 0.1)")
}

// load loads the data for training (experiment.LoadData: scaled when its
// rows are too long to seal).
func (d *dataFlags) load() (*dataset.Dataset, error) {
	return experiment.LoadData(d.data, d.positive, d.holdout)
}

// loadRaw loads the data as it is, for scoring and export.
func (d *dataFlags) loadRaw() (*dataset.Dataset, error) {
	return experiment.LoadRawData(d.data, d.positive, d.holdout)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

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

func runPartition(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("partition", stderr)
	var df dataFlags
	df.register(fs, "mnist")
	spec := fs.String("partition", "quadrants:2", "partition: quadrants:K, grid:K,Q, horizontal:K or vertical:Q")
	out := fs.String("out", "blocks", "directory for the client files")
	format := fs.String("format", "libsvm", "file format: libsvm or csv")
	seed := fs.Int64("seed", 1, "seed of the sample shuffle before grouping (and, with --names, of each file's row order)")
	var nf namesFlags
	nf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *format != "libsvm" && *format != "csv" {
		return fmt.Errorf("--format %q: want libsvm or csv", *format)
	}
	if err := nf.check(fs, *format); err != nil {
		return err
	}
	if nf.names {
		return runPartitionNamed(&df, *spec, *seed, *out, &nf, stdout, stderr)
	}
	d, err := df.load()
	if err != nil {
		return err
	}
	sp, err := partition.Parse(*spec)
	if err != nil {
		return fmt.Errorf("--partition: %w", err)
	}
	sp = sp.WithSeed(*seed)
	blocks, err := sp.Split(d)
	if err != nil {
		return err
	}
	if err := partition.Check(d, blocks); err != nil {
		return fmt.Errorf("partition check: %w", err)
	}
	paths, err := partition.WriteFiles(*out, *format, blocks)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "checked: every (sample, feature) entry of %s is held exactly once\n", d.Name)
	if d.Scale != nil {
		path, err := writeScale(*out, d.Scale)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "the blocks hold scaled features; a federation's model scores raw data after its weight of feature f is divided by line f of %s\n", path)
	}
	for i, p := range paths {
		fmt.Fprintf(stdout, "%s\t%d samples\t%d features\n", p, blocks[i].N(), len(blocks[i].Features))
	}
	return nil
}

// writeScale writes the divisors the features were scaled by, one line a
// feature (1-based feature f on line f), next to the block files.
func writeScale(dir string, scale []float64) (string, error) {
	var b strings.Builder
	for _, s := range scale {
		b.WriteString(strconv.FormatFloat(s, 'g', -1, 64))
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, "scale.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write feature scale: %w", err)
	}
	return path, nil
}
