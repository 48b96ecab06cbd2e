package partition

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/schema"
)

// Named files are trial files for the own-file path (schema and table):
// blocks written as a party's own spreadsheet export would be, with
// column names, its own ids, label words and raw values, and no block
// magic, next to the schema the federation reads them against.
const (
	NamedID       = "id"          // the id column
	NamedLabel    = "label"       // the label column
	NamedPositive = "yes"         // the label of +1
	NamedNegative = "no"          // the label of -1
	SchemaFile    = "schema.json" // the schema beside the files
)

// NamedOptions tune WriteNamed.
type NamedOptions struct {
	// Labels[k] says whether block k's file has the label column; nil:
	// every file has it.
	Labels []bool
	// Delimiter is ',' (0 too), ';' or '\t'.
	Delimiter rune
	// Seed shuffles the rows of each file, so that no file keeps the
	// order of the data set or of another file.
	Seed int64
}

// NamedFile is one file WriteNamed wrote.
type NamedFile struct {
	Path      string
	Rows      int
	Features  []string // the feature columns' names, in the file's order
	HasLabels bool
}

// FeatureNames returns d's feature names: d.Names, else x1..xM.
func FeatureNames(d *dataset.Dataset) []string {
	if d.Names != nil {
		return d.Names
	}
	names := make([]string, d.M())
	for j := range names {
		names[j] = "x" + strconv.Itoa(j+1)
	}
	return names
}

// NamedSchema returns the schema of the named files of d: the id, the
// label words, d's features by name in d's order (categorical ones with
// their categories) and an intercept; labels shared with co-holders when
// some file lacks them, else the default (every holder). An image's
// pixels have their full scale declared (255, or 16 for digits: the
// largest pixel value), so they are divided by it, as the built-in sets
// are, rather than standardized one by one.
func NamedSchema(d *dataset.Dataset, sharedLabels bool) (*schema.Schema, error) {
	yes := true
	s := &schema.Schema{ID: NamedID, Intercept: &yes,
		Label: schema.Label{Column: NamedLabel, Positive: []string{NamedPositive}, Negative: []string{NamedNegative}}}
	full := 0.0
	if img := d.Image; img != nil {
		for i := range d.N() {
			for j := 0; j < img.Width*img.Height; j++ {
				full = max(full, math.Abs(d.X.At(i, j)))
			}
		}
	}
	for j, name := range FeatureNames(d) {
		f := schema.Feature{Name: name, Categories: slices.Clone(d.Categories[j])}
		if img := d.Image; img != nil && j < img.Width*img.Height && full > 0 {
			f.Scale = full
		}
		s.Features = append(s.Features, f)
	}
	if sharedLabels {
		s.Labels = schema.LabelsShared
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("the names of %s: %w", d.Name, err)
	}
	return s, nil
}

// MarshalSchema writes s as JSON that a person reads and edits: one
// feature a line. schema.Parse reads it back.
func MarshalSchema(s *schema.Schema) []byte {
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	list := func(vs []string) string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = q(v)
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{\n  \"id\": %s,\n  \"label\": {\"column\": %s, \"positive\": %s", q(s.ID), q(s.Label.Column), list(s.Label.Positive))
	if len(s.Label.Negative) > 0 {
		fmt.Fprintf(&b, ", \"negative\": %s", list(s.Label.Negative))
	}
	b.WriteString("},\n  \"features\": [\n")
	for i, f := range s.Features {
		fmt.Fprintf(&b, "    {\"name\": %s", q(f.Name))
		if f.Categories != nil {
			fmt.Fprintf(&b, ", \"categories\": %s", list(f.Categories))
		}
		if f.Scale != 0 {
			fmt.Fprintf(&b, ", \"scale\": %s", strconv.FormatFloat(f.Scale, 'g', -1, 64))
		}
		b.WriteString("}")
		if i < len(s.Features)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  ]")
	if s.Intercept != nil {
		fmt.Fprintf(&b, ",\n  \"intercept\": %t", *s.Intercept)
	}
	for _, kv := range [][2]string{{"labels", s.Labels}, {"missing", s.Missing}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, ",\n  %s: %s", q(kv[0]), q(kv[1]))
		}
	}
	if s.Heldout != 0 {
		fmt.Fprintf(&b, ",\n  \"heldout\": %s", strconv.FormatFloat(s.Heldout, 'g', -1, 64))
	}
	b.WriteString("\n}\n")
	return []byte(b.String())
}

// WriteNamed writes the blocks of d, a raw data set (dataset.Options.Raw:
// the bias is not a column, the schema's intercept is), as named files
// client-<k>.csv in dir, and SchemaFile beside them. A file's header is
// the id, the label (where o.Labels says so) and the block's features by
// name; ids are "p" and the sample's number in d, alike in every file; a
// categorical feature is written as its category. It returns the files in
// block order and the schema's path.
func WriteNamed(dir string, d *dataset.Dataset, blocks []Block, o NamedOptions) ([]NamedFile, string, error) {
	fail := func(err error) ([]NamedFile, string, error) { return nil, "", fmt.Errorf("write named files: %w", err) }
	w, err := newNamedWriter(d, blocks, o)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	files := make([]NamedFile, len(blocks))
	for k := range blocks {
		f := w.file(k, clientPath(dir, k, len(blocks), FormatCSV))
		if err := writeNamedPath(w, f, k); err != nil {
			return fail(fmt.Errorf("client %d: %s: %w", k, f.Path, err))
		}
		files[k] = f
	}
	path := filepath.Join(dir, SchemaFile)
	if err := os.WriteFile(path, MarshalSchema(w.schema), 0o644); err != nil {
		return fail(err)
	}
	return files, path, nil
}

// File is a participant's file made in memory: what a page downloads and
// joins with (a demo block), its name without a directory.
type File struct {
	Name string
	Data []byte
	// Samples and Features are its rows and the features its columns give
	// (the schema's intercept, which no file has, not counted).
	Samples  int
	Features int
}

// EncodeNamed makes in memory the files WriteNamed writes: the named file
// of every block, named as prefix-<k>.csv, and their schema.
func EncodeNamed(d *dataset.Dataset, blocks []Block, o NamedOptions, prefix string) ([]File, *schema.Schema, error) {
	fail := func(err error) ([]File, *schema.Schema, error) { return nil, nil, fmt.Errorf("named files: %w", err) }
	w, err := newNamedWriter(d, blocks, o)
	if err != nil {
		return fail(err)
	}
	files := make([]File, len(blocks))
	for k := range blocks {
		f := w.file(k, fmt.Sprintf("%s-%d.csv", prefix, k))
		var buf bytes.Buffer
		if err := w.write(&buf, f, k); err != nil {
			return fail(fmt.Errorf("client %d: %w", k, err))
		}
		files[k] = File{Name: f.Path, Data: buf.Bytes(), Samples: f.Rows, Features: len(f.Features)}
	}
	return files, w.schema, nil
}

// BlockFiles writes blocks as LIBSVM block files in memory, named
// prefix-<k>.libsvm: demo blocks of a federation without a schema.
func BlockFiles(blocks []Block, prefix string) ([]File, error) {
	files := make([]File, len(blocks))
	for k := range blocks {
		var buf bytes.Buffer
		if err := WriteLIBSVM(&buf, &blocks[k]); err != nil {
			return nil, fmt.Errorf("block %d: %w", k, err)
		}
		files[k] = File{Name: fmt.Sprintf("%s-%d.%s", prefix, k, FormatLIBSVM), Data: buf.Bytes(), Samples: blocks[k].N(), Features: len(blocks[k].Features)}
	}
	return files, nil
}

// namedWriter writes the named files of d's blocks: what every file
// shares (the schema, the delimiter, where each id's sample is).
type namedWriter struct {
	d      *dataset.Dataset
	blocks []Block
	labels []bool
	delim  rune
	seed   int64
	schema *schema.Schema
	row    map[string]int
	names  []string
}

func newNamedWriter(d *dataset.Dataset, blocks []Block, o NamedOptions) (*namedWriter, error) {
	if len(blocks) == 0 {
		return nil, errors.New("no blocks")
	}
	delim := o.Delimiter
	switch delim {
	case 0:
		delim = ','
	case ',', ';', '\t':
	default:
		return nil, fmt.Errorf("delimiter %q: want comma, semicolon or tab", delim)
	}
	labels := o.Labels
	if labels == nil {
		labels = make([]bool, len(blocks))
		for k := range labels {
			labels[k] = true
		}
	}
	if len(labels) != len(blocks) {
		return nil, fmt.Errorf("labels for %d files, %d blocks", len(labels), len(blocks))
	}
	if err := disjointColumns(blocks); err != nil {
		return nil, err
	}
	s, err := NamedSchema(d, slices.Contains(labels, false))
	if err != nil {
		return nil, err
	}
	for k := range blocks {
		if blocks[k].NumFeatures != d.M() {
			return nil, fmt.Errorf("client %d: a block of %d features in all, %s has %d", k, blocks[k].NumFeatures, d.Name, d.M())
		}
	}
	w := &namedWriter{d: d, blocks: blocks, labels: labels, delim: delim, seed: o.Seed, schema: s,
		row: make(map[string]int, d.N()), names: FeatureNames(d)}
	for i, id := range d.IDs {
		w.row[id] = i
	}
	return w, nil
}

// file describes block k's file at path.
func (w *namedWriter) file(k int, path string) NamedFile {
	b := &w.blocks[k]
	f := NamedFile{Path: path, Rows: b.N(), HasLabels: w.labels[k]}
	for _, j := range b.Features {
		f.Features = append(f.Features, w.names[j])
	}
	return f
}

// writeNamedPath writes block k's file f to its path.
func writeNamedPath(w *namedWriter, f NamedFile, k int) (err error) {
	out, err := os.Create(f.Path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriterSize(out, 1<<16)
	if err := w.write(bw, f, k); err != nil {
		return err
	}
	return bw.Flush()
}

// write writes block k as f says, its rows shuffled by a generator of
// its own (the seed, block k).
func (w *namedWriter) write(out io.Writer, f NamedFile, k int) error {
	b, d := &w.blocks[k], w.d
	cw := csv.NewWriter(out)
	cw.Comma = w.delim
	rec := []string{NamedID}
	if f.HasLabels {
		rec = append(rec, NamedLabel)
	}
	if err := cw.Write(append(rec, f.Features...)); err != nil {
		return err
	}
	order := make([]int, b.N())
	for r := range order {
		order[r] = r
	}
	rng := rand.New(rand.NewPCG(uint64(w.seed), 0x6e616d65+uint64(k)))
	rng.Shuffle(len(order), func(a, c int) { order[a], order[c] = order[c], order[a] })
	var buf []float64
	for _, r := range order {
		i, ok := w.row[b.IDs[r]]
		if !ok {
			return fmt.Errorf("sample %q is not in %s", b.IDs[r], d.Name)
		}
		rec = append(rec[:0], NamedIDOf(i, d.N()))
		if f.HasLabels {
			label := NamedNegative
			if b.Y[r] > 0 {
				label = NamedPositive
			}
			rec = append(rec, label)
		}
		var val []float64
		val, buf = rowValues(b, r, buf)
		for c, v := range val {
			cell, err := namedCell(d, b.Features[c], v)
			if err != nil {
				return fmt.Errorf("sample %q, column %q: %w", b.IDs[r], f.Features[c], err)
			}
			rec = append(rec, cell)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// NamedIDOf is the id the named files give sample i of n: "p" and its
// number from 1, zero-padded to n's width.
func NamedIDOf(i, n int) string { return fmt.Sprintf("p%0*d", len(strconv.Itoa(n)), i+1) }

// namedCell writes value v of feature j: the number, exactly, or the
// category it codes.
func namedCell(d *dataset.Dataset, j int, v float64) (string, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "", fmt.Errorf("%v is not a finite number", v)
	}
	text := strconv.FormatFloat(v, 'g', -1, 64)
	if cats, ok := d.Categories[j]; ok && !slices.Contains(cats, text) {
		return "", fmt.Errorf("%s codes none of the categories %q", text, cats)
	}
	return text, nil
}

// disjointColumns refuses blocks of one sample group that share a
// feature: a party's file is its columns in full, so the files of a group
// must split them (grid on sparse data deals entries instead).
func disjointColumns(blocks []Block) error {
	for _, g := range Groups(blocks) {
		owner := map[int]int{}
		for _, k := range g {
			for _, j := range blocks[k].Features {
				if prev, dup := owner[j]; dup {
					return fmt.Errorf("clients %d and %d hold the same samples and both feature %d: a file holds whole columns (load the data dense)", prev, k, j+1)
				}
				owner[j] = k
			}
		}
	}
	return nil
}
