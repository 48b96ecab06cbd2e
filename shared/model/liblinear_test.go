package model

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
)

// TestLiblinearPredictReads: Debian's liblinear-predict loads a model
// file of each of hyfed's solver types (hinge and logistic) and labels
// samples as Predict does, ties (score 0) included.
func TestLiblinearPredictReads(t *testing.T) {
	ll, err := exec.LookPath("liblinear-predict")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("liblinear-predict not installed (liblinear-tools; CI is set)")
		}
		t.Skip("liblinear-predict not installed (Debian's liblinear-tools; make test installs it)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "d.libsvm")
	// Scores under w = (1, -1, 0.25): 1, -1, 0 (a tie), 2.5, -0.25.
	text := "+1 1:1\n-1 2:1\n+1 1:1 2:1\n-1 1:2 3:2\n+1 3:-1\n"
	if err := os.WriteFile(data, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.ReadLIBSVM(strings.NewReader(text), data, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, loss := range []string{"hinge", "logistic"} {
		m, _ := New(loss, []float64{1, -1, 0.25})
		path := filepath.Join(dir, loss+".model")
		if err := WriteFiles(path, m, &Info{Loss: loss}); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, loss+".out")
		if msg, err := exec.Command(ll, data, path, out).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", loss, err, msg)
		}
		got, _ := os.ReadFile(out)
		p, _, err := Predict(m, nil, path, d)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, q := range p {
			want = append(want, map[float64]string{1: "1", -1: "-1"}[q.Predicted])
		}
		if strings.Join(strings.Fields(string(got)), " ") != strings.Join(want, " ") || want[2] != "-1" {
			t.Fatalf("%s: liblinear-predict labels %q, Predict %v", loss, got, want)
		}
	}
}
