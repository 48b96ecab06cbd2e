package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/experiment"
)

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
