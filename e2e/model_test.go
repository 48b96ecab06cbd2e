package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/demo"
	"github.com/hyfed/hyfed/shared/model"
)

// The model out of the pages: the join page's and the dashboard's
// "Download the model" buttons, and what the file is good for (hyfed
// predict scores data with it as the federation's model scored it).

// buildHyfed starts building the hyfed command into a temporary directory
// of the test (from the go build cache: about 3 s after make build) and
// returns a function that waits for the build and returns the binary's
// path: the tests run hyfed predict and hyfed data export as a user would.
// Started early, the build overlaps the browser's work.
func buildHyfed(t *testing.T) func() string {
	bin := filepath.Join(t.TempDir(), "hyfed")
	built := make(chan error, 1)
	go func() {
		out, err := exec.Command("go", "build", "-o", bin, "github.com/hyfed/hyfed/cmd/hyfed").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("go build ./cmd/hyfed: %v\n%s", err, out)
		}
		built <- err
	}()
	var once sync.Once
	var err error
	wait := func() { once.Do(func() { err = <-built }) }
	t.Cleanup(wait) // before the directory's removal (cleanups run last first)
	return func() string {
		t.Helper()
		if wait(); err != nil {
			t.Fatal(err)
		}
		return bin
	}
}

// runHyfed runs the hyfed binary and returns its standard output.
func runHyfed(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("hyfed %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// pageDownload presses the button sel in the tab, whose page saves a blob
// as a download, and returns the file's suggested name (the page's
// <a download>, from the server's Content-Disposition) and its bytes.
// The browser saves downloads under their GUID in dir
// (Browser.setDownloadBehavior allowAndName).
func pageDownload(tb *tab, dir, sel string) (string, []byte) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	type done struct{ guid, state string }
	names := map[string]string{}
	var mu sync.Mutex
	finished := make(chan done, 16)
	if err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdpbrowser.EventDownloadWillBegin:
			mu.Lock()
			names[e.GUID] = e.SuggestedFilename
			mu.Unlock()
		case *cdpbrowser.EventDownloadProgress:
			if e.State != cdpbrowser.DownloadProgressStateInProgress {
				select {
				case finished <- done{e.GUID, string(e.State)}:
				default:
				}
			}
		}
	}); err != nil {
		tb.fatalf("%s: listening for downloads: %v", tb.name, err)
	}
	yes := true
	tb.do("allow downloads into "+dir, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &yes})
		return err
	}))
	tb.do("press "+sel, chromedp.Click(sel))
	select {
	case d := <-finished:
		if d.state != string(cdpbrowser.DownloadProgressStateCompleted) {
			tb.fatalf("%s: the download of %s ended %s", tb.name, sel, d.state)
		}
		mu.Lock()
		name := names[d.guid]
		mu.Unlock()
		b, err := os.ReadFile(filepath.Join(dir, d.guid))
		if err != nil {
			tb.fatalf("%s: the download of %s: %v", tb.name, sel, err)
		}
		return name, b
	case <-ctx.Done():
		tb.fatalf("%s: no download finished after pressing %s", tb.name, sel)
	}
	return "", nil
}

// checkModelDownload is the end of the newcomer's flow: after training,
// the join page's "Download the model" and "its JSON sidecar" give the
// model the status names (file names from the server, round, sidecar); the
// model of the demo's schema federation scores raw values: hyfed predict on
// the demo's held-out samples as a named CSV file of raw pixels (the
// demo's files pooled) gives the held-out accuracy the status shows for
// the model, to 1e-9; LIBLINEAR's predict (Debian's liblinear-predict) on
// the same samples as LIBSVM (raw pixels; the model file's bias is the
// intercept) gives every one the label hyfed predict --scores gives it.
// hyfed is buildHyfed's.
func checkModelDownload(t *testing.T, tb page, hyfed func() string, fedID string, st server.Status, d *demo.Data) {
	t.Helper()
	if st.Model == nil || !st.Model.Best {
		failf(t, tb, "finished status names no best model: %+v", st.Model)
	}
	round := st.Model.Round
	tb.waitJS("the downloads to open on the finished model",
		fmt.Sprintf("document.getElementById('model-box').dataset.state === 'finished' && document.getElementById('model-box').dataset.round === '%d' && !document.getElementById('dl-model').disabled && !document.getElementById('dl-json').disabled", round),
		10*time.Second)
	if got := tb.text("#model-state"); !strings.Contains(got, "finished") || !strings.Contains(got, fmt.Sprintf("round %d", round)) {
		tb.fatalf("model state %q: want finished, round %d", got, round)
	}
	if got := tb.text("#model-box .model-what"); !containsAll(got, "LIBLINEAR", "hyfed predict --model FILE --data FILE", "--partial") {
		tb.fatalf("what the model file is: %q", got)
	}

	name, body := tb.download("#dl-model")
	want := fmt.Sprintf("hyfed-%s-round%d.model", fedID, round)
	if name != want {
		failf(t, tb, "the model downloaded as %q, want %q", name, want)
	}
	jsonName, sidecar := tb.download("#dl-json")
	if jsonName != want+".json" {
		failf(t, tb, "the sidecar downloaded as %q, want %q", jsonName, want+".json")
	}
	tb.waitJS("the page to say where the file went", "document.getElementById('model-box').dataset.downloadedJson !== undefined", 5*time.Second)
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		failf(t, tb, "%v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, jsonName), sidecar, 0o644); err != nil {
		failf(t, tb, "%v", err)
	}
	m, info, err := model.ReadFiles(path)
	if err != nil {
		failf(t, tb, "%v", err)
	}
	if info == nil || info.Source != "federation" || info.ModelRound != round || !info.Best || info.Rounds != st.Config.Rounds ||
		len(m.W) != st.Config.NumFeatures {
		failf(t, tb, "sidecar %+v, %d weights; status: model %+v, %d features", info, len(m.W), st.Model, st.Config.NumFeatures)
	}

	if info.Schema == nil || len(info.Weights) != st.Config.NumFeatures || m.Bias != 1 {
		failf(t, tb, "the demo's model: schema %v, %d weights, bias %v; want the raw-scoring model of %d columns", info.Schema != nil, len(info.Weights), m.Bias, st.Config.NumFeatures)
	}
	heldout := func(i int) bool { return d.Raw.Heldout[i] }
	var csvBuf, svmBuf bytes.Buffer
	if err := demo.WriteCSV(&csvBuf, d.Schema, d.Raw, heldout); err != nil {
		failf(t, tb, "%v", err)
	}
	if _, err := dataset.WriteLIBSVM(&svmBuf, d.Raw, heldout); err != nil {
		failf(t, tb, "%v", err)
	}
	heldCSV, held := filepath.Join(dir, "heldout.csv"), filepath.Join(dir, "heldout.libsvm")
	for p, b := range map[string][]byte{heldCSV: csvBuf.Bytes(), held: svmBuf.Bytes()} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			failf(t, tb, "%v", err)
		}
	}
	bin := hyfed()
	out := runHyfed(t, bin, "predict", "--model", path, "--data", heldCSV, "--scores")
	var preds []string
	var res map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &res); err != nil {
				failf(t, tb, "hyfed predict printed %q: %v", l, err)
			}
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 4 || strings.HasPrefix(l, "#") {
			continue
		}
		if f[2] != "1" && f[2] != "-1" {
			failf(t, tb, "hyfed predict --scores line %q", l)
		}
		preds = append(preds, f[2])
	}
	acc, ok := res["accuracy"].(float64)
	samples, _ := res["labelled"].(float64)
	if !ok || int(samples) != len(preds) || len(preds) == 0 {
		failf(t, tb, "hyfed predict: %v with %d score lines", res, len(preds))
	}
	if d := math.Abs(acc - float64(st.Model.HeldoutAccuracy)); !(d <= 1e-9) {
		failf(t, tb, "hyfed predict on the %d held-out samples: accuracy %.12f; the status shows %.12f for round %d", len(preds), acc, float64(st.Model.HeldoutAccuracy), round)
	}
	t.Logf("%s: hyfed predict on the %d held-out samples: accuracy %.12f, as the status shows for round %d", tb.engine(), len(preds), acc, round)

	ref, err := model.LIBLINEARPredict(held, path, dir)
	if errors.Is(err, model.ErrNoLIBLINEAR) {
		requireOr(t, "%v", err)
		return
	}
	if err != nil {
		failf(t, tb, "%v", err)
	}
	if len(ref.Labels) != len(preds) {
		failf(t, tb, "liblinear-predict labelled %d samples, hyfed predict %d", len(ref.Labels), len(preds))
	}
	for i, l := range ref.Labels {
		if l != preds[i] {
			failf(t, tb, "held-out sample %d: liblinear-predict says %q, hyfed predict %q", i, l, preds[i])
		}
	}
	if ref.Total != len(preds) || float64(ref.Right)/float64(ref.Total) != acc {
		failf(t, tb, "liblinear-predict: %s; hyfed predict: accuracy %v of %d", ref.Summary, acc, len(preds))
	}
	t.Logf("%s: liblinear-predict agrees on all %d labels: %s", tb.engine(), len(preds), ref.Summary)
}
