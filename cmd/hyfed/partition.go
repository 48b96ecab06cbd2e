package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/partition"
)

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
