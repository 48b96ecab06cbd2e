package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/protocol"
)

// newFlags is a command's flag set: errors are returned, not exits, so that
// run reports them as "hyfed NAME: ..." and tests can run every command.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("hyfed "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses flags and refuses stray arguments, which are usually a
// mistyped flag.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before it; see -h)", fs.Arg(0))
	}
	return nil
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// linkFirst lets the link come before the flags (hyfed join LINK --data F).
func linkFirst(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

// dataFlags are the data flags (--data, --positive, --holdout) of every
// command that loads a data set, with one help text.
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
