package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/table"
)

// namesFlags are hyfed partition's flags for named files: trial files
// that look like the parties' own spreadsheet exports, for the own-file
// path (hyfed create --schema) without pooled data of one's own.
type namesFlags struct {
	names             bool
	labels, delimiter string
}

func (n *namesFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&n.names, "names", false, "with --format csv: write each block as a party's own CSV export would be (a header id,label,<feature names>, own ids, "+
		"labels yes/no, the data set's raw values, rows shuffled, no block magic) and schema.json, the federation's schema for them (hyfed create --schema)")
	fs.StringVar(&n.labels, "labels", "", "with --names: the blocks whose files have the label column, e.g. 0,2 (default: every block; naming fewer makes the schema share labels with co-holders)")
	fs.StringVar(&n.delimiter, "delimiter", "comma", "with --names: the files' delimiter: comma, semicolon or tab")
}

// check refuses the flags that --names alone gives a meaning to, and
// --names with another format, before any data is loaded.
func (n *namesFlags) check(fs *flag.FlagSet, format string) error {
	if !n.names {
		for _, f := range []string{"labels", "delimiter"} {
			if flagSet(fs, f) {
				return fmt.Errorf("--%s is for the named files of --names --format csv; the block files of --format %s have neither", f, format)
			}
		}
		return nil
	}
	if format != partition.FormatCSV {
		return fmt.Errorf("--names writes CSV files as a party's spreadsheet would: use it with --format csv (not %s)", format)
	}
	return nil
}

// parseLabels reads --labels: block numbers of a partition of n blocks.
func parseLabels(text string, n int) ([]bool, error) {
	if text == "" {
		return nil, nil
	}
	labels := make([]bool, n)
	for _, f := range strings.Split(text, ",") {
		f = strings.TrimSpace(f)
		k, err := strconv.Atoi(f)
		switch {
		case err != nil:
			return nil, fmt.Errorf("--labels %q: %q is not a block number", text, f)
		case k < 0 || k >= n:
			return nil, fmt.Errorf("--labels %q: there is no block %d: the partition makes %d blocks, 0 to %d (block k is client-k.csv)", text, k, n, n-1)
		}
		labels[k] = true
	}
	return labels, nil
}

// runPartitionNamed is hyfed partition --names: the raw data set split as
// spec says, each block a named file, schema.json beside them.
func runPartitionNamed(df *dataFlags, spec string, seed int64, out string, n *namesFlags, stdout, stderr io.Writer) error {
	sp, err := partition.Parse(spec)
	if err != nil {
		return fmt.Errorf("--partition: %w", err)
	}
	sp = sp.WithSeed(seed)
	labels, err := parseLabels(n.labels, sp.Clients())
	if err != nil {
		return err
	}
	delim, err := table.ParseDelimiter(n.delimiter)
	if err != nil || delim == 0 {
		return fmt.Errorf("--delimiter %q: want comma, semicolon or tab", n.delimiter)
	}
	// Raw: the values a party's own export would hold (no scaling, no
	// bias: the schema's intercept is the bias). Dense: a file holds whole
	// columns, so grid cuts feature ranges even of sparse data.
	opt := dataset.Options{Holdout: df.holdout, Raw: true, Dense: true}
	if df.positive != "" {
		if opt.Positive, err = dataset.ParsePositive(df.positive); err != nil {
			return fmt.Errorf("--positive: %w", err)
		}
	}
	d, err := dataset.Load(df.data, opt)
	if err != nil {
		return err
	}
	blocks, err := sp.Split(d)
	if err != nil {
		return err
	}
	if err := partition.Check(d, blocks); err != nil {
		return fmt.Errorf("partition check: %w", err)
	}
	files, schemaPath, err := partition.WriteNamed(out, d, blocks, partition.NamedOptions{Labels: labels, Delimiter: delim, Seed: seed})
	if err != nil {
		return err
	}
	for k, f := range files {
		fmt.Fprintf(stdout, "%s\t%d samples\t%d features\n", f.Path, f.Rows, len(blocks[k].Features))
	}
	printNamed(stderr, d, blocks, files, schemaPath)
	return nil
}

// printNamed says what was written and what to run next.
func printNamed(w io.Writer, d *dataset.Dataset, blocks []partition.Block, files []partition.NamedFile, schemaPath string) {
	fmt.Fprintf(w, "%s, raw values, as %d files a party might export:\n", d.Name, len(files))
	for _, f := range files {
		cols := "id"
		if f.HasLabels {
			cols += ", label"
		}
		fmt.Fprintf(w, "  %s: %d rows; columns %s, %s\n", f.Path, f.Rows, cols, listNames(f.Features))
	}
	shared := false
	for _, g := range partition.Groups(blocks) {
		var names []string
		has := false
		for _, k := range g {
			names = append(names, files[k].Path)
			has = has || files[k].HasLabels
			shared = shared || !files[k].HasLabels
		}
		if !has {
			fmt.Fprintf(w, "warning: the samples of %s have a label in no file: the federation leaves them out\n", strings.Join(names, ", "))
		}
	}
	policy := "every file has the labels"
	if shared {
		policy = "labels shared with co-holders (a file without the label column takes part)"
	}
	fmt.Fprintf(w, "schema: %s (id \"id\", label \"label\" yes/no, %d features, an intercept; %s)\n", schemaPath, d.M(), policy)
	fmt.Fprintf(w, "next, the organizer:\n  hyfed create --server http://SERVER:8080 --schema %s --min-participants %d\n", schemaPath, len(files))
	fmt.Fprintf(w, "and each participant, with one file:\n")
	for i, f := range files {
		if len(files) > 6 && i == 3 {
			fmt.Fprintf(w, "  ... (%d more)\n", len(files)-4)
		}
		if len(files) <= 6 || i < 3 || i == len(files)-1 {
			fmt.Fprintf(w, "  hyfed join 'JOIN LINK' --data %s\n", f.Path)
		}
	}
}

// listNames lists a file's feature columns, a wide file's first and last.
func listNames(names []string) string {
	if len(names) <= 8 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ..., %s (%d features)", strings.Join(names[:3], ", "), names[len(names)-1], len(names))
}
