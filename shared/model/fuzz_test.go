package model

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// FuzzReadLIBLINEAR: the reader never panics, and what it accepts writes
// back to a file that reads as the same model.
func FuzzReadLIBLINEAR(f *testing.F) {
	for _, p := range []string{"testdata/liblinear-train.model", "testdata/hyfed.model"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("solver_type L2R_LR\nnr_class 2\nlabel -1 1\nnr_feature 1\nbias 1\nw\n1 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadLIBLINEAR(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteLIBLINEAR(&buf, m); err != nil {
			t.Fatalf("read %+v, cannot write it: %v", m, err)
		}
		again, err := ReadLIBLINEAR(&buf, "again")
		if err != nil {
			t.Fatalf("wrote %q, cannot read it: %v", buf.String(), err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("read %+v, wrote and read %+v", m, again)
		}
	})
}
