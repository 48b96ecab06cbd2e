package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/table"
)

// predictHelp is hyfed predict's help: what a participant can predict
// with the model alone, and what needs the others.
const predictHelp = `usage: hyfed predict --model FILE --data FILE|NAME [--scores]

Scores every sample of the data with the model (x.w; above 0 predicts +1,
else -1, as LIBLINEAR's predict does) and prints, last, one JSON line:
accuracy over all samples and over the held-out and training samples (the
split the data has: built-in, a CSV "heldout" column, or --holdout). With
--scores, first one line per sample: id, label, prediction, score, heldout.
The data needs the features the model was trained with, hyfed's bias
feature included (785:10 for the built-in images; FILE.json names it).

Who can predict. w covers every feature, and every participant receives it.
A party that holds all features of a new sample predicts alone. In hybrid
and vertical data a party often holds only some features of a sample:
w restricted to its features gives only a partial score, its share of x.w
(--partial prints it for each sample of such a file, e.g. a block file).
The full score is the sum of the shares of the sample's holders, which the
federation's sealed inner products compute (each holder seals its share,
the server adds them, the holders open the sum) without any holder showing
its features; hyfed predict does not do that: adding the --partial outputs
by hand shows each holder's share to whoever adds them.

flags:
`

func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("predict", stderr)
	var df dataFlags
	df.register(fs, "")
	path := fs.String("model", "", "the model: LIBLINEAR's model file (hyfed's --model, a server's download, or liblinear-train's two-class models); FILE.json is read too if present")
	scores := fs.Bool("scores", false, "print id, label, prediction, score and held-out flag of every sample before the summary")
	delim := fs.String("delimiter", "", "a CSV file's delimiter for a model trained on a schema: comma, semicolon or tab (default: found from the header line)")
	partial := fs.Bool("partial", false, "the data holds only some features of each sample (a participant's block in vertical or hybrid data): print each sample's partial score, its share of x.w over the features it holds, instead of predictions (the full score is the sum over the sample's holders)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), predictHelp)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return errors.New("--model: give the model file")
	}
	m, info, err := model.ReadFiles(*path)
	if err != nil {
		return err
	}
	if info != nil && info.Schema != nil && !*partial {
		// A model of a federation with a schema scores a CSV file with
		// named columns, raw values, as its participants' files were.
		d, err := table.ParseDelimiter(*delim)
		if err != nil {
			return fmt.Errorf("--delimiter: %w", err)
		}
		return predictTable(stdout, stderr, *path, info, df.data, d, *scores)
	}
	if *partial {
		if b, err := readBlockFile(df.data); err != nil || b != nil {
			if err != nil {
				return err
			}
			return printBlockPartial(stdout, m, *path, b, df.data)
		}
	}
	d, err := df.loadRaw()
	if err != nil {
		return err
	}
	if *partial {
		return printPartial(stdout, m, *path, d)
	}
	preds, r, err := model.Predict(m, info, *path, d)
	if err != nil {
		return err
	}
	if *scores {
		bw := bufio.NewWriter(stdout)
		fmt.Fprintln(bw, "# id\tlabel\tprediction\tscore\theldout")
		for _, p := range preds {
			fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%t\n", p.ID, sign(p.Label), sign(p.Predicted), strconv.FormatFloat(p.Score, 'g', -1, 64), p.Heldout)
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	out := struct {
		Model string `json:"model"`
		Data  string `json:"data"`
		model.Result
		// ModelHeldout is the held-out accuracy the sidecar reports (the
		// federation's, on its participants' held-out samples).
		ModelHeldout *float64 `json:"model_heldout_accuracy,omitempty"`
	}{Model: *path, Data: d.Name, Result: r}
	if info != nil {
		out.ModelHeldout = info.Metrics.HeldoutAccuracy
	}
	return printJSON(stdout, out)
}

// predictTable scores a CSV file with named columns and raw values with a
// model trained on a schema, each value mapped and clipped as in training;
// a column the file lacks, or an empty cell, counts as the federation's
// mean. Rows with a label count toward the accuracy.
func predictTable(stdout, stderr io.Writer, path string, info *model.Info, data string, delim rune, scores bool) error {
	if data == "" {
		return errors.New("--data: give the CSV file to score")
	}
	raw, err := os.ReadFile(data)
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	// To score, a file needs no label column, and an empty cell is the mean.
	sch := *info.Schema
	sch.Labels, sch.Missing = schema.LabelsShared, schema.MissingMean
	t, err := table.Read(bytes.NewReader(raw), data, &sch, table.Options{Delimiter: delim})
	if err != nil {
		return err
	}
	if len(t.Mapping.NotHeld) > 0 {
		fmt.Fprintf(stderr, "%s has no column %s: scored as the federation's mean\n", data, strings.Join(t.Mapping.NotHeld, ", "))
	}
	if len(info.Weights) != sch.NumColumns() {
		return fmt.Errorf("%s: %d weights for the schema's %d columns", model.SidecarPath(path), len(info.Weights), sch.NumColumns())
	}
	n := len(info.Weights)
	if sch.HasIntercept() {
		n--
	}
	at := make([]int, n) // schema column -> the file's column, -1
	for j := range at {
		at[j] = -1
	}
	for c, col := range t.Columns {
		at[col] = c
	}
	missing := map[[2]int]bool{}
	for _, c := range t.Missing {
		missing[[2]int{c.Row, c.Col}] = true
	}
	bw := bufio.NewWriter(stdout)
	if scores {
		fmt.Fprintln(bw, "# id\tlabel\tprediction\tscore")
	}
	row := make([]float64, n)
	labelled, right := 0, 0
	for i := range t.IDs {
		for j := range row {
			row[j] = math.NaN()
			if c := at[j]; c >= 0 && !missing[[2]int{i, c}] {
				row[j] = t.X.At(i, c)
			}
		}
		z := model.ScoreRaw(info.Weights, row)
		if y := t.Labels[i]; y != 0 {
			labelled++
			if model.Label(z) == y {
				right++
			}
		}
		if scores {
			label := "?"
			if t.Labels[i] != 0 {
				label = sign(t.Labels[i])
			}
			fmt.Fprintf(bw, "%s\t%s\t%s\t%s\n", t.IDs[i], label, sign(model.Label(z)), strconv.FormatFloat(z, 'g', -1, 64))
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	out := map[string]any{"model": path, "data": data, "samples": len(t.IDs), "labelled": labelled, "accuracy": nil}
	if labelled > 0 {
		out["accuracy"] = float64(right) / float64(labelled)
	}
	return printJSON(stdout, out)
}

// printPartial prints each sample's partial score and a summary line.
func printPartial(stdout io.Writer, m *model.Model, path string, d *dataset.Dataset) error {
	z, err := model.PartialScores(m, path, d)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(stdout)
	fmt.Fprintln(bw, "# id\tpartial_score")
	for i, v := range z {
		fmt.Fprintf(bw, "%s\t%s\n", d.IDs[i], strconv.FormatFloat(v, 'g', -1, 64))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return printJSON(stdout, map[string]any{"model": path, "data": d.Name, "samples": d.N(), "partial": true})
}

// readBlockFile reads path as a hyfed block file (hyfed partition's, with
// the federation's feature numbers) if it is one; nil if it is not.
func readBlockFile(path string) (*partition.Block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil // a built-in name, or missing: the data loader says
	}
	defer f.Close()
	head := make([]byte, len(blockPrefix))
	if n, _ := io.ReadFull(f, head); n < len(head) || string(head) != blockPrefix {
		return nil, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return partition.ReadBlock(f, path)
}

// blockPrefix starts every hyfed block file.
const blockPrefix = "# hyfed-block"

// printBlockPartial prints the partial scores of a block's samples: w on
// the block's features (its header names them in the federation's
// numbering).
func printBlockPartial(stdout io.Writer, m *model.Model, path string, b *partition.Block, name string) error {
	if b.NumFeatures != m.NumFeatures {
		return fmt.Errorf("%s:1: a block of a federation of %d features, but model %s has %d (nr_feature)", name, b.NumFeatures, path, m.NumFeatures)
	}
	local := &model.Model{Solver: m.Solver, NumFeatures: len(b.Features), Bias: -1}
	for _, j := range b.Features {
		local.W = append(local.W, m.W[j])
	}
	bw := bufio.NewWriter(stdout)
	fmt.Fprintln(bw, "# id\tpartial_score")
	for i, id := range b.IDs {
		idx, val := b.X.Row(i)
		fmt.Fprintf(bw, "%s\t%s\n", id, strconv.FormatFloat(local.Score(idx, val), 'g', -1, 64))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return printJSON(stdout, map[string]any{"model": path, "data": name, "samples": b.N(), "features": len(b.Features), "partial": true})
}

func sign(v float64) string {
	if v > 0 {
		return "1"
	}
	return "-1"
}
