package experiment

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// TestLoadDataFitsSealRange: raw features whose rows are too long to seal
// (amounts in the thousands) are scaled to [-1, 1] for training, so the
// federation runs instead of stopping at its first sealed norm; data
// within the range, and the raw loader, are left as they are; rows still
// too long after scaling are an error naming the line.
func TestLoadDataFitsSealRange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	long := write("long.libsvm", "+1 1:300 2:0.5\n-1 1:-150 2:1\n+1 2:2\n")
	d, err := LoadData(long, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := d.MaxRowNormSq(); d.Scale == nil || n > seal.MaxAbs {
		t.Fatalf("scale %v, largest squared norm %v", d.Scale, n)
	}
	if got := d.X.At(1, 0); got != -0.5 {
		t.Errorf("scaled entry (1, 0) = %v, want -0.5", got)
	}
	raw, err := LoadRawData(long, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Scale != nil || raw.X.At(0, 0) != 300 {
		t.Errorf("raw data scaled: %v, entry %v", raw.Scale, raw.X.At(0, 0))
	}

	short := write("short.libsvm", "+1 1:100 2:0.5\n-1 1:-150 2:1\n")
	if d, err := LoadData(short, "", 0); err != nil || d.Scale != nil || d.X.At(0, 0) != 100 {
		t.Errorf("data within the range: err %v, scale %v", err, d.Scale)
	}

	var b strings.Builder
	b.WriteString("+1 1:1\n-1")
	for j := 1; j <= seal.MaxAbs+1; j++ {
		b.WriteString(" " + strconv.Itoa(j) + ":1")
	}
	b.WriteString("\n")
	_, err = LoadData(write("wide.libsvm", b.String()), "", 0)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "normalize the rows") {
		t.Errorf("rows too long after scaling: err %v", err)
	}
}
