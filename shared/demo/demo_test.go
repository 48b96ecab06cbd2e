package demo

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/schema"
)

// TestMNISTDemo: the demo's files are named CSV files of raw pixels that
// read back (as a participant reads them) to the data set exactly; the
// trained table is the pixels divided by 255 with the intercept at 1.
func TestMNISTDemo(t *testing.T) {
	if _, err := dataset.MNISTDir(); err != nil {
		t.Skip("mnist not installed (make data):", err)
	}
	start := time.Now()
	d, err := Load("mnist", "quadrants:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded in %.1fs: %d files, %d bytes in the first", time.Since(start).Seconds(), len(d.Files), len(d.Files[0].Data))
	if len(d.Files) != 4 || d.Files[1].Name != "demo-block-1.csv" || d.Files[1].Features != 196 || d.Files[1].Samples != 10000 {
		t.Fatalf("files: %d, the second %q with %d samples x %d features", len(d.Files), d.Files[1].Name, d.Files[1].Samples, d.Files[1].Features)
	}
	head, _, _ := bytes.Cut(d.Files[0].Data, []byte("\n"))
	if !strings.HasPrefix(string(head), "id,label,px_0_0,px_0_1,") {
		t.Fatalf("the first file's header starts %.60q", head)
	}
	s := d.Schema
	if s.NumColumns() != 785 || s.InterceptColumn() != 784 || s.Heldout != Heldout || s.Features[28*14+3].Name != "px_14_3" {
		t.Fatalf("schema: %d columns, intercept %d, held out %v, feature 395 %q", s.NumColumns(), s.InterceptColumn(), s.Heldout, s.Features[28*14+3].Name)
	}
	for _, f := range s.Features {
		if f.Scale != 255 {
			t.Fatalf("feature %q declared at %v, want 255", f.Name, f.Scale)
		}
	}
	orig, err := dataset.Load("mnist", dataset.Options{Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	raw, tr := d.Raw, d.Trained
	if raw.N() != orig.N() || raw.M() != 784 || tr.M() != 785 {
		t.Fatalf("raw %dx%d, trained %dx%d", raw.N(), raw.M(), tr.N(), tr.M())
	}
	// Pool's rows are in id order, p00001 first: the data set's order.
	held := 0
	for i := range raw.N() {
		if raw.Y[i] != orig.Y[i] {
			t.Fatalf("sample %d: label %v, the data set's %v", i, raw.Y[i], orig.Y[i])
		}
		if raw.Heldout[i] != dataset.HoldoutByID(raw.IDs[i], Heldout) {
			t.Fatalf("sample %s: held out %v", raw.IDs[i], raw.Heldout[i])
		}
		if raw.Heldout[i] {
			held++
		}
		for j := range 784 {
			v := raw.X.At(i, j)
			if v != orig.X.At(i, j) {
				t.Fatalf("sample %d pixel %d: %v in the files, %v in the data set", i, j, v, orig.X.At(i, j))
			}
			if w := tr.X.At(i, j); math.Abs(w-v/255) > 1e-15 {
				t.Fatalf("sample %d pixel %d: trained %v, want %v/255", i, j, w, v)
			}
		}
		if tr.X.At(i, 784) != schema.InterceptValue {
			t.Fatalf("sample %d: intercept %v", i, tr.X.At(i, 784))
		}
	}
	if f, v, ok := tr.ConstantFeature(); !ok || f != 784 || v != 1 {
		t.Fatalf("the trained table's constant feature: %d %v %v", f, v, ok)
	}
	if held < 900 || held > 1100 {
		t.Fatalf("%d samples held out of %d", held, raw.N())
	}
}
