package dataset

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// smallDense lowers the dense-storage cap for a fuzz run: a two-token
// input may legitimately ask for a 2 GiB dense row.
func smallDense(f *testing.F) {
	old := maxDenseValues
	maxDenseValues = 1 << 20
	f.Cleanup(func() { maxDenseValues = old })
}

func FuzzLIBSVM(f *testing.F) {
	smallDense(f)
	f.Add("+1 1:0.5 3:2 # a\n-1 2:1\n", false)
	f.Add("1 qid:2 5:1e300\n", true)
	f.Add("-1 0:1", false)
	f.Add("1 2147483647:1\n0 1:1", true)
	f.Add("# c\n\n2 1:1 # x y\r\n1 3:-1e-300 # x\n", false)
	f.Fuzz(func(t *testing.T, s string, dense bool) {
		d, err := ReadLIBSVM(strings.NewReader(s), "fuzz", Options{Dense: dense, Holdout: 0.5})
		if err == nil {
			if verr := d.Validate(); verr != nil {
				t.Fatalf("returned an invalid data set: %v", verr)
			}
			if d.X.IsSparse() == dense {
				t.Fatalf("storage sparse %v with Dense %v", d.X.IsSparse(), dense)
			}
		}
	})
}

func FuzzCSV(f *testing.F) {
	smallDense(f)
	f.Add("id,label,f1\na,1,2\nb,0,3\n", false)
	f.Add("label,heldout,x\n1,true,2\n", true)
	f.Add("\ufeffID,Label,x,y\n\"q\n\",-1,0,1\n", false)
	f.Add("label,x\n1,2,3\n", false)
	f.Fuzz(func(t *testing.T, s string, sparse bool) {
		d, err := ReadCSV(strings.NewReader(s), "fuzz", Options{Sparse: sparse})
		if err == nil {
			if verr := d.Validate(); verr != nil {
				t.Fatalf("returned an invalid data set: %v", verr)
			}
		}
	})
}

func FuzzIDX(f *testing.F) {
	im, lb := idxPair(2, 2, 2, false)
	f.Add(im, lb)
	zim, zlb := idxPair(3, 1, 2, true)
	f.Add(zim, zlb)
	f.Add(im[:16], lb[:8])
	f.Fuzz(func(t *testing.T, im, lb []byte) {
		x, raw, w, h, err := ReadIDX(bytes.NewReader(im), bytes.NewReader(lb), "fuzz")
		if err == nil && (x.Validate() != nil || len(raw) != x.Rows || w*h != x.Cols) {
			t.Fatal("inconsistent result")
		}
	})
}

// FuzzMNISTJSON fuzzes the digit-file decoder, which ReadMNISTJSON runs
// on each file (writing ten files per input would only slow the fuzzer).
func FuzzMNISTJSON(f *testing.F) {
	f.Add([]byte(`{"data":[0,0.5]}`))
	f.Add([]byte(`{"data":[` + strings.TrimSuffix(strings.Repeat("0.25,", 784), ",") + `]}`))
	f.Add([]byte(`{"data":null}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := parseDigits(b)
		if err == nil && (len(vals) == 0 || len(vals)%mnistPixels != 0) {
			t.Fatalf("accepted %d values", len(vals))
		}
	})
}

func FuzzSklearnCSV(f *testing.F) {
	f.Add("2,2,a,b\n1,2,0\n3,4,1\n", 2, true, 0.0)
	f.Add("0,16,5\r\n\r\n1,1,9", 2, false, 16.0)
	f.Add("1,2\n1,2,0\n3,4,1\n", 2, true, 0.0)
	f.Add("1,x,0\n", 2, false, 0.0)
	f.Fuzz(func(t *testing.T, s string, features int, header bool, max float64) {
		if features < 1 || features > 1000 {
			return
		}
		l := SklearnLayout{Features: features, Header: header, Max: max}
		x, raw, err := ReadSklearnCSV(strings.NewReader(s), "fuzz", l)
		if err != nil {
			return
		}
		if x.Validate() != nil || x.Rows != len(raw) || x.Cols != features || x.Rows == 0 {
			t.Fatalf("inconsistent result: %dx%d, %d labels", x.Rows, x.Cols, len(raw))
		}
		for _, v := range x.Data {
			if math.IsNaN(v) || math.IsInf(v, 0) || (max > 0 && (v < 0 || v > max)) {
				t.Fatalf("value %v accepted (max %v)", v, max)
			}
		}
		for _, y := range raw {
			if y < 0 || y != math.Trunc(y) {
				t.Fatalf("label %v accepted", y)
			}
		}
	})
}
