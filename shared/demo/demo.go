// Package demo makes the data of hyfed serve --demo's federations (make
// run): a built-in image set split into blocks, each block a CSV file with
// named columns and raw values, as a party's own export would be. The join
// page hands the files out and reads them as a user's own file; the
// simulated participants read the same bytes. Beside them: the schema the
// files are read against, and the pooled table the federation trains on,
// whose optimum the pages measure the relative loss against.
package demo

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/table"
)

// Heldout is the share of samples the demo's schema holds out, chosen by a
// hash of the id: the built-in sets' default, so the pages show a
// held-out accuracy as they did for the demo's block files.
const Heldout = 0.1

// FilePrefix names the demo's files: demo-block-<k>.csv.
const FilePrefix = "demo-block"

// Data is a demo federation's data.
type Data struct {
	Name      string // the data set, e.g. "mnist"
	Partition string
	Schema    *schema.Schema
	// Files are the blocks as named CSV files (partition.EncodeNamed), in
	// block order.
	Files []partition.File
	// Raw is the files pooled (Pool): every sample's raw values on the
	// schema's features, its label, its id as the files write it.
	Raw *dataset.Dataset
	// Trained is Raw as the federation trains it (Trained): what its
	// primal, and so the demo's optimum, is computed on.
	Trained *dataset.Dataset
}

// Load makes the demo data of a built-in image set (loaded raw: MNIST's
// pixels 0-255) split by the partition spec. Its pixel columns are named
// px_<row>_<col> in the image's order, declared at the set's full scale
// (partition.NamedSchema), with an intercept and the label in every file.
func Load(data, spec string) (*Data, error) {
	d, err := dataset.Load(data, dataset.Options{Raw: true, Dense: true})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	img := d.Image
	if img == nil || img.Extra != 0 || img.Width*img.Height != d.M() {
		return nil, fmt.Errorf("demo: data %s is not an image set of pixels only", data)
	}
	d.Names = PixelNames(img.Width, img.Height)
	p, err := partition.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("demo: partition: %w", err)
	}
	blocks, err := p.Split(d)
	if err != nil {
		return nil, fmt.Errorf("demo: partition %s: %w", spec, err)
	}
	files, sch, err := partition.EncodeNamed(d, blocks, partition.NamedOptions{}, FilePrefix)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	sch.Heldout = Heldout
	if err := sch.Validate(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	out := &Data{Name: d.Name, Partition: spec, Schema: sch, Files: files}
	own, err := out.Blocks()
	if err != nil {
		return nil, err
	}
	if out.Raw, err = Pool(sch, own); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	out.Raw.Name, out.Raw.Image = d.Name, &dataset.ImageShape{Width: img.Width, Height: img.Height}
	if out.Trained, err = Trained(sch, out.Raw); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return out, nil
}

// PixelNames names a w x h image's pixels px_<row>_<col> (from 0), in
// row-major order: the image's own feature order, so a model's weights
// still draw as the image.
func PixelNames(w, h int) []string {
	names := make([]string, 0, w*h)
	for r := range h {
		for c := range w {
			names = append(names, "px_"+strconv.Itoa(r)+"_"+strconv.Itoa(c))
		}
	}
	return names
}

// Blocks reads the files as a participant does (table.Load against the
// schema), in block order.
func (d *Data) Blocks() ([]*partition.Block, error) {
	out := make([]*partition.Block, len(d.Files))
	for k, f := range d.Files {
		b, _, err := table.Load(f.Name, f.Data, d.Schema, table.Options{})
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		out[k] = b
	}
	return out, nil
}

// Pool merges participants' raw blocks (read against s) into one table by
// record id: the schema's columns but the intercept, each sample's label,
// held-out flag and id, rows in id order. A value two blocks hold, or
// labels that disagree, are refused; a value nobody holds stays 0, and so
// does a sample without a label anywhere refused.
func Pool(s *schema.Schema, blocks []*partition.Block) (*dataset.Dataset, error) {
	cols := s.Columns()
	ic := s.InterceptColumn()
	m := len(cols)
	if ic >= 0 {
		m--
	}
	at := map[string]int{}
	var ids []string
	for _, b := range blocks {
		for _, id := range b.IDs {
			if _, ok := at[id]; !ok {
				at[id] = 0
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	for i, id := range ids {
		at[id] = i
	}
	n := len(ids)
	d := &dataset.Dataset{Name: "pooled", X: dataset.NewDense(n, m), Y: make([]float64, n), IDs: ids, Heldout: make([]bool, n)}
	held := make([]bool, n*m)
	for k, b := range blocks {
		for r, id := range b.IDs {
			i := at[id]
			if y := b.Y[r]; y != 0 {
				if d.Y[i] != 0 && d.Y[i] != y {
					return nil, fmt.Errorf("block %d: sample %q: its labels disagree", k, id)
				}
				d.Y[i] = y
			}
			d.Heldout[i] = b.Heldout[r]
			for j, c := range b.Features {
				if c == ic {
					continue
				}
				if held[i*m+c] {
					return nil, fmt.Errorf("block %d: sample %q: column %q is held twice", k, id, cols[c].Name)
				}
				held[i*m+c] = true
				d.X.Data[i*m+c] = b.X.At(r, j)
			}
		}
	}
	for i, y := range d.Y {
		if y == 0 {
			return nil, fmt.Errorf("sample %q has no label in any block", ids[i])
		}
	}
	d.Names = make([]string, m)
	for j := range m {
		d.Names[j] = cols[j].Name
	}
	return d, d.Validate()
}

// Trained maps a pooled raw table (Pool) as the federation's preparation
// does, where the schema alone fixes the map: a column with a declared
// scale divided by it and clipped, a category 0/1, everything divided by
// the schema's divisor; the intercept column last, at InterceptValue for
// every sample (each carries it once). A standardized column's map needs
// the federation's statistics, which only training opens: refused.
func Trained(s *schema.Schema, raw *dataset.Dataset) (*dataset.Dataset, error) {
	cols := s.Columns()
	g := s.Divisor(seal.MaxAbs)
	m := raw.M()
	maps := make([]schema.Map, m)
	for j := range m {
		switch c := cols[j]; {
		case c.Feature < 0:
			return nil, fmt.Errorf("trained table: column %d is the intercept, which a raw table has not", j)
		case c.Categorical():
			maps[j] = schema.CategoryMap(g)
		case c.Scale > 0:
			maps[j] = s.Clip(j, schema.Declared(c.Scale, g), g)
		default:
			return nil, fmt.Errorf("trained table: column %q is standardized with the federation's statistics, known only once training prepares", c.Name)
		}
	}
	width := m
	if s.HasIntercept() {
		width++
	}
	d := &dataset.Dataset{Name: raw.Name, X: dataset.NewDense(raw.N(), width), Y: raw.Y, IDs: raw.IDs, Heldout: raw.Heldout}
	if len(raw.Names) == m {
		d.Names = append(slices.Clone(raw.Names), schema.InterceptName)[:width]
	}
	if img := raw.Image; img != nil {
		d.Image = &dataset.ImageShape{Width: img.Width, Height: img.Height, Extra: width - img.Width*img.Height}
	}
	for i := range raw.N() {
		for j := range m {
			d.X.Data[i*width+j] = maps[j].Apply(raw.X.At(i, j))
		}
		if width > m {
			d.X.Data[i*width+m] = schema.InterceptValue
		}
	}
	return d, d.Validate()
}

// WriteCSV writes the rows of a pooled raw table (Pool) of schema s that
// keep accepts (nil: all) as one CSV file with every column, named and
// labelled as s says: a file hyfed predict scores with the federation's
// model, e.g. the samples the federation held out. Numeric columns only
// (the demo's): a category would need its name back.
func WriteCSV(w io.Writer, s *schema.Schema, raw *dataset.Dataset, keep func(i int) bool) error {
	if len(s.Label.Positive) == 0 || len(s.Label.Negative) == 0 {
		return errors.New("write csv: the schema names no positive and negative label value")
	}
	rec := []string{s.ID, s.Label.Column}
	for _, f := range s.Features {
		if f.Categories != nil {
			return fmt.Errorf("write csv: feature %q is categorical", f.Name)
		}
		rec = append(rec, f.Name)
	}
	if len(rec)-2 != raw.M() {
		return fmt.Errorf("write csv: %d columns for the schema's %d features", raw.M(), len(rec)-2)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(rec); err != nil {
		return err
	}
	for i := range raw.N() {
		if keep != nil && !keep(i) {
			continue
		}
		label := s.Label.Negative[0]
		if raw.Y[i] > 0 {
			label = s.Label.Positive[0]
		}
		rec = append(rec[:0], raw.IDs[i], label)
		for j := range raw.M() {
			rec = append(rec, strconv.FormatFloat(raw.X.At(i, j), 'g', -1, 64))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
