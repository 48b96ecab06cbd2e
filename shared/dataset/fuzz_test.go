package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func FuzzLIBSVM(f *testing.F) {
	f.Add("+1 1:0.5 3:2 # a\n-1 2:1\n")
	f.Add("1 qid:2 5:1e300\n")
	f.Add("-1 0:1")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ReadLIBSVM(strings.NewReader(s), "fuzz", Options{})
		if err == nil {
			if verr := d.Validate(); verr != nil {
				t.Fatalf("returned an invalid data set: %v", verr)
			}
		}
	})
}

func FuzzCSV(f *testing.F) {
	f.Add("id,label,f1\na,1,2\nb,0,3\n")
	f.Add("label,heldout,x\n1,true,2\n")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ReadCSV(strings.NewReader(s), "fuzz", Options{})
		if err == nil {
			if verr := d.Validate(); verr != nil {
				t.Fatalf("returned an invalid data set: %v", verr)
			}
		}
	})
}

func FuzzIDX(f *testing.F) {
	im, lb := idxPair(nil, 2, 2, 2, false)
	f.Add(im, lb)
	f.Fuzz(func(t *testing.T, im, lb []byte) {
		x, raw, _, _, err := ReadIDX(bytes.NewReader(im), bytes.NewReader(lb), "fuzz")
		if err == nil && (x.Validate() != nil || len(raw) != x.Rows) {
			t.Fatal("inconsistent result")
		}
	})
}

func FuzzMNISTJSON(f *testing.F) {
	f.Add([]byte(`{"data":[0,0.5]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		for d := 0; d < 10; d++ {
			os.WriteFile(filepath.Join(dir, string(rune('0'+d))+".json"), b, 0o644)
		}
		ReadMNISTJSON(dir)
	})
}
