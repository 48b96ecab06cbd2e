package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/model"
)

// runJSON runs hyfed and decodes the last line of its output.
func runJSON(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("hyfed %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return lastJSON(t, out), out
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("%q is %v in %v", k, m[k], m)
	}
	return v
}

// scoresOf reads hyfed predict --scores lines: id -> prediction.
func scoresOf(t *testing.T, out string) []string {
	t.Helper()
	var preds []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 5 || strings.HasPrefix(l, "#") {
			continue
		}
		if _, err := strconv.ParseFloat(f[3], 64); err != nil || (f[2] != "1" && f[2] != "-1") {
			t.Fatalf("scores line %q", l)
		}
		preds = append(preds, f[2])
	}
	return preds
}

// TestPredictMatchesExperiment: a trained model out is worth only what it
// predicts, checked in process: the model hyfed experiment writes (the best iterate), scored by hyfed
// predict on the held-out part of the data, has the held-out accuracy the
// experiment reported for it, to 1e-9 (and the training accuracy too);
// LIBLINEAR's predict (Debian's liblinear-predict) reads the model file
// and gives every held-out sample the label hyfed predict gives it.
func TestPredictMatchesExperiment(t *testing.T) {
	if _, err := dataset.MNISTDir(); err != nil {
		t.Skip("mnist not installed (make data):", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mnist.model")
	// 60 rounds of make run's demo federation: its primal swings, so the
	// best round is not the last.
	s, _ := runJSON(t, "experiment", "--data", "mnist", "--partition", "quadrants:2", "--rounds", "60", "--plaintext",
		"--pstar", "0.2", "--quiet", "--model", path)
	p, _ := runJSON(t, "predict", "--model", path, "--data", "mnist")
	t.Logf("best round %v of 60: held-out accuracy %v (experiment) %v (predict, %v samples); train %v / %v",
		s["best_round"], s["best_accuracy"], p["heldout_accuracy"], p["heldout_samples"], s["best_train_accuracy"], p["train_accuracy"])
	for _, k := range [][2]string{{"best_accuracy", "heldout_accuracy"}, {"best_train_accuracy", "train_accuracy"}, {"best_accuracy", "model_heldout_accuracy"}} {
		if d := math.Abs(num(t, s, k[0]) - num(t, p, k[1])); !(d <= 1e-9) {
			t.Errorf("experiment %s %v, predict %s %v", k[0], s[k[0]], k[1], p[k[1]])
		}
	}
	if num(t, p, "heldout_samples") < 900 {
		t.Fatalf("held-out samples %v", p["heldout_samples"])
	}
	_, info, err := model.ReadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Source != "experiment" || info.Data != "mnist" || info.Partition != "quadrants:2" || !info.Best ||
		info.ModelRound != int(num(t, s, "best_round")) || info.Rounds != int(num(t, s, "rounds")) || info.NumFeatures != 785 ||
		info.BiasFeature != 785 || info.BiasValue != dataset.Bias || *info.Metrics.Primal != num(t, s, "best_primal") ||
		info.Metrics.Dual == nil || !(*info.Metrics.Dual <= *info.Metrics.Primal) {
		t.Fatalf("sidecar %+v", info)
	}

	// The held-out part as plain LIBSVM (labels +1/-1, the bias feature
	// 785:10 in every line), scored by both.
	held := filepath.Join(dir, "heldout.libsvm")
	if _, errOut, code := runCLI(t, "data", "export", "--data", "mnist", "--part", "heldout", "--out", held); code != 0 {
		t.Fatal(errOut)
	}
	hp, out := runJSON(t, "predict", "--model", path, "--data", held, "--scores")
	if hp["accuracy"] != p["heldout_accuracy"] || hp["samples"] != p["heldout_samples"] {
		t.Fatalf("predict on the exported held-out file: %v, on mnist's held-out part %v", hp, p)
	}
	ours := scoresOf(t, out)
	if len(ours) != int(num(t, hp, "samples")) {
		t.Fatalf("%d score lines for %v samples", len(ours), hp["samples"])
	}

	ref, err := model.LIBLINEARPredict(held, path, dir)
	if errors.Is(err, model.ErrNoLIBLINEAR) {
		requireLiblinear(t)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Labels) != len(ours) {
		t.Fatalf("liblinear-predict labelled %d samples, hyfed predict %d", len(ref.Labels), len(ours))
	}
	for i, l := range ref.Labels {
		if l != ours[i] {
			t.Fatalf("sample %d (line %d of %s): liblinear-predict says %q, hyfed predict %q", i, i+1, held, l, ours[i])
		}
	}
	// "Accuracy = 90.5% (905/1000)": the same count.
	if float64(ref.Right)/float64(ref.Total) != num(t, hp, "accuracy") || float64(ref.Total) != num(t, hp, "samples") {
		t.Fatalf("liblinear-predict: %s; hyfed predict accuracy %v of %v", ref.Summary, hp["accuracy"], hp["samples"])
	}
	t.Logf("liblinear-predict agrees on all %d labels: %s", len(ours), ref.Summary)
}

// requireLiblinear skips without liblinear-predict, unless $CI is set
// (make test installs liblinear-tools): then it fails.
func requireLiblinear(t *testing.T) {
	t.Helper()
	const msg = "liblinear-predict not installed (Debian's liblinear-tools; make test installs it)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set, so this is an error, not a skip)")
	}
	t.Skip(msg)
}

// TestCentralModelAndPredictErrors: hyfed central --model writes the
// optimum; hyfed predict gives its reported held-out accuracy, and
// refuses data that does not fit, naming the file and the line.
func TestCentralModelAndPredictErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.model")
	c, _ := runJSON(t, "central", "--data", "synthetic:300,6", "--lambda", "1e-2", "--quiet", "--model", path)
	p, _ := runJSON(t, "predict", "--model", path, "--data", "synthetic:300,6")
	if d := math.Abs(num(t, c, "accuracy") - num(t, p, "heldout_accuracy")); !(d <= 1e-9) {
		t.Fatalf("central accuracy %v, predict held-out %v", c["accuracy"], p["heldout_accuracy"])
	}
	_, info, err := model.ReadFiles(path)
	if err != nil || info.Source != "central" || info.Algorithm != "sdca" || info.Best || *info.Metrics.Primal != num(t, c, "primal") {
		t.Fatalf("sidecar %+v %v", info, err)
	}

	wide := filepath.Join(dir, "wide.libsvm")
	os.WriteFile(wide, []byte("1 1:1 6:2\n# a comment\n-1 2:1 7:3\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", path, "--data", wide}, fmt.Sprintf("%s:3 (record line-3): feature 7, but model %s has 6 features", wide, path)},
		{[]string{"--data", "synthetic:30,6"}, "--model: give the model file"},
		{[]string{"--model", filepath.Join(dir, "none.model"), "--data", wide}, "none.model: no such file"},
	} {
		args := append([]string{"predict"}, tc.args...)
		_, errOut, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("hyfed %s: exit %d %q, want %q", strings.Join(args, " "), code, errOut, tc.want)
		}
	}
	// A baseline runs as a federation in process and hands out its model
	// too, with its algorithm in the sidecar.
	fedavg := filepath.Join(dir, "fedavg.model")
	_, errOut, code := runCLI(t, "experiment", "--data", "synthetic:100,4", "--partition", "grid:2,2", "--algo", "fedavg", "--step-a", "1",
		"--rounds", "5", "--quiet", "--model", fedavg)
	if code != 0 {
		t.Fatalf("baseline with --model: exit %d %q", code, errOut)
	}
	_, info, err = model.ReadFiles(fedavg)
	if err != nil || info == nil || info.Algorithm != "fedavg" {
		t.Fatalf("the baseline's model sidecar: %+v, %v", info, err)
	}
}

// TestSimModel: hyfed sim --model fetches the federation's model from the
// server (GET .../model?format=liblinear and json) and adds the data it
// knows; hyfed predict then gives the held-out accuracy the server
// reported for that model.
func TestSimModel(t *testing.T) {
	ctx := context.Background()
	_, base, token := startServe(t, t.TempDir(), "127.0.0.1:0", "--insecure-demo")
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"create", "--server", base, "--create-token", token, "--seed", "2", "--min-participants", "4",
		"--rounds", "10", "--lambda", "1e-2", "--plaintext"}, &out, &errb); code != 0 {
		t.Fatalf("create: %s", errb.String())
	}
	var link string
	for _, l := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "join: "); ok {
			link = v
		}
	}
	path := filepath.Join(t.TempDir(), "sim.model")
	const data = "synthetic:400,8,1,0.05,2"
	s, _ := runJSON(t, "sim", link, "--data", data, "--partition", "grid:2,2", "--quiet", "--model", path)
	_, info, err := model.ReadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Source != "federation" || info.Data != data || info.Partition != "grid:2,2" || !info.Best ||
		info.ModelRound != int(num(t, s, "best_round")) || *info.Metrics.HeldoutAccuracy != num(t, s, "best_accuracy") {
		t.Fatalf("sidecar %+v, sim summary %v", info, s)
	}
	p, _ := runJSON(t, "predict", "--model", path, "--data", data)
	if d := math.Abs(num(t, p, "heldout_accuracy") - num(t, s, "best_accuracy")); !(d <= 1e-9) {
		t.Fatalf("predict held-out %v, the federation's %v", p["heldout_accuracy"], s["best_accuracy"])
	}
}

// TestJoinModel: two hyfed join participants, each with --model, write
// the same model file, the federation's best iterate, with its sidecar.
func TestJoinModel(t *testing.T) {
	ctx := context.Background()
	_, base, token := startServe(t, t.TempDir(), "127.0.0.1:0", "--insecure-demo")
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"create", "--server", base, "--create-token", token, "--seed", "4", "--min-participants", "2",
		"--rounds", "6", "--lambda", "1e-2", "--plaintext"}, &out, &errb); code != 0 {
		t.Fatalf("create: %s", errb.String())
	}
	var link string
	for _, l := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "join: "); ok {
			link = v
		}
	}
	dir := t.TempDir()
	blocks := filepath.Join(dir, "blocks")
	if _, errOut, code := runCLI(t, "partition", "--data", "synthetic:200,6", "--partition", "vertical:2", "--out", blocks); code != 0 {
		t.Fatal(errOut)
	}
	files, _ := filepath.Glob(filepath.Join(blocks, "*"))
	if len(files) != 2 {
		t.Fatalf("blocks %v", files)
	}
	errs := make(chan error, 2)
	for i, f := range files {
		go func() {
			var o, e bytes.Buffer
			if code := run(ctx, []string{"join", link, "--data", f, "--quiet", "--model", filepath.Join(dir, fmt.Sprintf("%d.model", i))}, &o, &e); code != 0 {
				errs <- fmt.Errorf("join %s: %s", f, e.String())
				return
			}
			errs <- nil
		}()
	}
	for range files {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "0.model"))
	b, _ := os.ReadFile(filepath.Join(dir, "1.model"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("the participants wrote different models:\n%s\n%s", a, b)
	}
	m, info, err := model.ReadFiles(filepath.Join(dir, "0.model"))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumFeatures != 6 || info.Source != "federation" || !info.Best || info.Rounds != 6 || info.ModelRound < 1 || info.Metrics.Primal == nil {
		t.Fatalf("model %+v sidecar %+v", m, info)
	}
}

// TestPredictHelp: the help says what a participant predicts alone and
// what needs the other holders of a sample.
func TestPredictHelp(t *testing.T) {
	_, errOut, code := runCLI(t, "predict", "-h")
	for _, w := range []string{"partial score", "sum of the shares", "sealed inner products", "-scores", "785:10"} {
		if code != 0 || !strings.Contains(errOut, w) {
			t.Fatalf("exit %d, help lacks %q:\n%s", code, w, errOut)
		}
	}
}

// TestPredictPartial: in vertical data each participant's --partial
// scores are its shares of x.w; a sample's shares add up to the full
// score hyfed predict gives it on the whole data.
func TestPredictPartial(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.model")
	const data = "synthetic:120,7"
	runJSON(t, "central", "--data", data, "--lambda", "1e-2", "--quiet", "--model", path)
	blocks := filepath.Join(dir, "blocks")
	if _, errOut, code := runCLI(t, "partition", "--data", data, "--partition", "vertical:3", "--out", blocks); code != 0 {
		t.Fatal(errOut)
	}
	files, _ := filepath.Glob(filepath.Join(blocks, "*"))
	if len(files) != 3 {
		t.Fatalf("blocks %v", files)
	}
	// One block as CSV too: its shares are the LIBSVM one's.
	csvDir := filepath.Join(dir, "csv")
	if _, errOut, code := runCLI(t, "partition", "--data", data, "--partition", "vertical:3", "--out", csvDir, "--format", "csv"); code != 0 {
		t.Fatal(errOut)
	}
	csvFiles, _ := filepath.Glob(filepath.Join(csvDir, "*"))
	if len(csvFiles) != 3 {
		t.Fatalf("csv blocks %v", csvFiles)
	}
	_, fromLIBSVM := runJSON(t, "predict", "--model", path, "--data", files[1], "--partial")
	_, fromCSV := runJSON(t, "predict", "--model", path, "--data", csvFiles[1], "--partial")
	strip := func(out string) string { return out[:strings.LastIndex(strings.TrimSpace(out), "\n")] }
	if strip(fromLIBSVM) != strip(fromCSV) {
		t.Fatalf("partial scores of block 1: LIBSVM\n%s\nCSV\n%s", fromLIBSVM, fromCSV)
	}
	sum := map[string]float64{}
	for _, f := range files {
		p, out := runJSON(t, "predict", "--model", path, "--data", f, "--partial")
		if p["partial"] != true || p["samples"] != 120.0 {
			t.Fatalf("summary %v", p)
		}
		for _, l := range strings.Split(out, "\n") {
			id, v, ok := strings.Cut(l, "\t")
			if !ok || strings.HasPrefix(l, "#") {
				continue
			}
			z, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("line %q", l)
			}
			sum[id] += z
		}
	}
	_, out := runJSON(t, "predict", "--model", path, "--data", data, "--scores")
	n := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 5 || strings.HasPrefix(l, "#") {
			continue
		}
		z, _ := strconv.ParseFloat(f[3], 64)
		s, ok := sum[f[0]]
		if !ok || math.Abs(s-z) > 1e-12*math.Max(1, math.Abs(z)) {
			t.Fatalf("sample %s: shares add to %v (found %v), full score %v", f[0], s, ok, z)
		}
		n++
	}
	if n != 120 || len(sum) != 120 {
		t.Fatalf("%d full scores, %d summed", n, len(sum))
	}
}

// TestModelOfScaledData: a file of raw amounts (rows far beyond the
// sealable range) trains encrypted, on features scaled to [-1, 1], and
// the model files of hyfed experiment and hyfed central score the raw
// file with the accuracies the runs reported.
func TestModelOfScaledData(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "amounts.libsvm")
	var b strings.Builder
	for i := range 120 {
		// Feature 1 in the thousands, feature 2 in [0, 1], feature 3 a
		// count; the label follows a margin mostly.
		a, c, n := float64(1000+37*(i%50)), float64(i%7)/7, float64(i%11)
		y := "+1"
		if a/2000+c-n/10 < 0.9 {
			y = "-1"
		}
		fmt.Fprintf(&b, "%s 1:%g 2:%g 3:%g\n", y, a, c, n)
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "exp.model")
	s, _ := runJSON(t, "experiment", "--data", data, "--partition", "grid:2,2", "--rounds", "20", "--quiet", "--model", path)
	p, _ := runJSON(t, "predict", "--model", path, "--data", data)
	if d := math.Abs(num(t, s, "best_train_accuracy") - num(t, p, "train_accuracy")); !(d <= 1e-9) || num(t, p, "train_accuracy") < 0.7 {
		t.Errorf("experiment's model: train accuracy %v reported, %v scored on the raw file", s["best_train_accuracy"], p["train_accuracy"])
	}
	cpath := filepath.Join(dir, "central.model")
	c, _ := runJSON(t, "central", "--data", data, "--quiet", "--model", cpath)
	cp, _ := runJSON(t, "predict", "--model", cpath, "--data", data)
	if d := math.Abs(num(t, c, "train_accuracy") - num(t, cp, "train_accuracy")); !(d <= 1e-9) {
		t.Errorf("central's model: train accuracy %v reported, %v scored on the raw file", c["train_accuracy"], cp["train_accuracy"])
	}
}
