package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadLIBSVM(t *testing.T) {
	f, err := os.Open("testdata/small.libsvm")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ReadLIBSVM(f, "small.libsvm", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.N() != 4 || d.M() != 4 || !d.X.IsSparse() || d.X.NNZ() != 6 {
		t.Fatalf("got %d x %d, sparse %v, nnz %d", d.N(), d.M(), d.X.IsSparse(), d.X.NNZ())
	}
	wantIDs := []string{"rec-a", "rec-b", "line-5", "rec-d"}
	for i, id := range wantIDs {
		if d.IDs[i] != id {
			t.Errorf("id %d = %q, want %q", i, d.IDs[i], id)
		}
	}
	if d.X.At(0, 2) != 2 || d.X.At(2, 3) != -0.25 || d.Y[1] != -1 || d.Y[2] != 1 {
		t.Errorf("values or labels wrong: %v %v %v", d.X.At(0, 2), d.X.At(2, 3), d.Y)
	}
}

func TestReadLIBSVMErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"+1 1:1\n-1 0:2\n", "bad.svm:2: field 2: feature index"},
		{"+1 3:1 2:1\n", "bad.svm:1: field 3: feature index 2 does not ascend"},
		{"+1 1:x\n", "bad.svm:1: field 2: value \"x\""},
		{"+1 1:NaN\n", "bad.svm:1: field 2: value \"NaN\""},
		{"abc 1:1\n", "bad.svm:1: field 1: label"},
		{"+1 1:1\n\n+1 7\n", "bad.svm:3: field 2: \"7\" is not index:value"},
		{"", "bad.svm: no samples"},
		{"1 1:1\n2 1:1\n3 1:1\n", "3 classes"},
	} {
		_, err := ReadLIBSVM(strings.NewReader(tc.in), "bad.svm", Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestReadCSV(t *testing.T) {
	f, err := os.Open("testdata/small.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ReadCSV(f, "small.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.N() != 3 || d.M() != 3 || d.X.IsSparse() || d.IDs[1] != "b" || d.Y[1] != -1 || d.X.At(2, 2) != -0.25 {
		t.Fatalf("got %+v", d)
	}
	for _, tc := range []struct{ in, want string }{
		{"id,f1\na,1\n", "bad.csv:1: no \"label\" column"},
		{"label,f1,f2\n1,2,x\n", "bad.csv:2: field f2: \"x\" is not a finite number"},
		{"label,f1\n1,2\n0,Inf\n", "bad.csv:3: field f1"},
		{"label,f1\nz,2\n", "bad.csv:2: field label"},
		{"label,heldout,f1\n1,maybe,2\n", "bad.csv:2: field heldout"},
		{"label,f1\n1,2,3\n", "bad.csv:2: field"},
	} {
		_, err := ReadCSV(strings.NewReader(tc.in), "bad.csv", Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestLabelRules(t *testing.T) {
	r, err := ParsePositive("0, 1,2")
	if err != nil {
		t.Fatal(err)
	}
	y, err := MapLabels([]float64{0, 5, 2, 9}, r)
	if err != nil || fmt.Sprint(y) != "[1 -1 1 -1]" {
		t.Fatalf("got %v %v", y, err)
	}
	for _, tc := range []struct {
		raw  []float64
		want string
	}{{[]float64{0, 1, 1}, "[-1 1 1]"}, {[]float64{-1, 1}, "[-1 1]"}, {[]float64{2, 1}, "[-1 1]"}} {
		y, err := MapLabels(tc.raw, nil)
		if err != nil || fmt.Sprint(y) != tc.want {
			t.Errorf("%v: got %v %v", tc.raw, y, err)
		}
	}
	if _, err := ParsePositive("1,x"); err == nil {
		t.Error("ParsePositive accepted x")
	}
}

func TestHoldoutDeterministic(t *testing.T) {
	n := 0
	for i := 0; i < 10000; i++ {
		id := fmt.Sprintf("r%d", i)
		a, b := HoldoutByID(id, 0.1), HoldoutByID(id, 0.1)
		if a != b {
			t.Fatal("not deterministic")
		}
		if a {
			n++
		}
	}
	if n < 900 || n > 1100 {
		t.Fatalf("%d of 10000 held out at 0.1", n)
	}
}

func TestSparseTextStaysSparse(t *testing.T) {
	var b strings.Builder
	written := 0
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "%d", 1-2*(i%2))
		for _, j := range []int{1 + i%9990, 9991 + i%10} {
			fmt.Fprintf(&b, " %d:1", j)
			written++
		}
		b.WriteString("\n")
	}
	d, err := ReadLIBSVM(strings.NewReader(b.String()), "sparse", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.X.IsSparse() || d.X.NNZ() != written || d.M() != 10000 {
		t.Fatalf("sparse %v nnz %d (want %d) cols %d", d.X.IsSparse(), d.X.NNZ(), written, d.M())
	}
	if frac := float64(d.X.NNZ()) / float64(d.N()*d.M()); frac > 0.001 {
		t.Fatalf("density %v", frac)
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	a, err := Load("synthetic:300,20,0.2,0.1,5", Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Load("synthetic:300,20,0.2,0.1,5", Options{})
	if !a.X.IsSparse() || fmt.Sprint(a.Y) != fmt.Sprint(b.Y) || fmt.Sprint(a.X.Values) != fmt.Sprint(b.X.Values) {
		t.Fatal("synthetic data differs for one seed or is not sparse")
	}
	pos := 0
	for _, y := range a.Y {
		if y > 0 {
			pos++
		}
	}
	if pos < 30 || pos > 270 {
		t.Fatalf("%d of 300 positive", pos)
	}
	if _, err := Load("synthetic:10", Options{}); err == nil {
		t.Fatal("accepted synthetic:10")
	}
}

func idxPair(t *testing.T, n, w, h int, gz bool) ([]byte, []byte) {
	var im, lb bytes.Buffer
	binary.Write(&im, binary.BigEndian, [4]uint32{0x803, uint32(n), uint32(h), uint32(w)})
	for i := 0; i < n*w*h; i++ {
		im.WriteByte(byte(i % 256))
	}
	binary.Write(&lb, binary.BigEndian, [2]uint32{0x801, uint32(n)})
	for i := 0; i < n; i++ {
		lb.WriteByte(byte(i % 10))
	}
	if !gz {
		return im.Bytes(), lb.Bytes()
	}
	zip := func(b []byte) []byte {
		var out bytes.Buffer
		z := gzip.NewWriter(&out)
		z.Write(b)
		z.Close()
		return out.Bytes()
	}
	return zip(im.Bytes()), zip(lb.Bytes())
}

func TestReadIDX(t *testing.T) {
	for _, gz := range []bool{false, true} {
		im, lb := idxPair(t, 3, 4, 2, gz)
		x, raw, w, h, err := ReadIDX(bytes.NewReader(im), bytes.NewReader(lb), "tiny")
		if err != nil {
			t.Fatal(err)
		}
		if x.Rows != 3 || x.Cols != 8 || w != 4 || h != 2 || raw[2] != 2 || x.Data[9] != 9.0/255 {
			t.Fatalf("gz=%v: %dx%d %dx%d %v %v", gz, x.Rows, x.Cols, w, h, raw, x.Data[9])
		}
	}
	im, lb := idxPair(t, 3, 4, 2, false)
	if _, _, _, _, err := ReadIDX(bytes.NewReader(im[:30]), bytes.NewReader(lb), "cut"); err == nil {
		t.Error("accepted truncated images")
	}
	bad := append([]byte(nil), im...)
	binary.BigEndian.PutUint32(bad[4:], 1<<30)
	if _, _, _, _, err := ReadIDX(bytes.NewReader(bad), bytes.NewReader(lb), "huge"); err == nil {
		t.Error("accepted an absurd image count")
	}
}

func TestReadMNISTJSON(t *testing.T) {
	dir := t.TempDir()
	for d := 0; d < 10; d++ {
		vals := make([]string, 784*(1+d%2))
		for i := range vals {
			vals[i] = "0.5"
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", d)), []byte(`{"data":[`+strings.Join(vals, ",")+`]}`), 0o644)
	}
	x, raw, ids, err := ReadMNISTJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	if x.Rows != 15 || len(raw) != 15 || ids[1] != "digit1-0" || raw[14] != 9 {
		t.Fatalf("rows %d ids %v raw %v", x.Rows, ids, raw)
	}
	os.WriteFile(filepath.Join(dir, "3.json"), []byte(`{"data":[0.5,0.2]}`), 0o644)
	if _, _, _, err := ReadMNISTJSON(dir); err == nil || !strings.Contains(err.Error(), "3.json") {
		t.Fatalf("got %v", err)
	}
}

func TestBuiltinFashionMNIST(t *testing.T) {
	if _, err := os.Stat(filepath.Join(FashionMNISTDir, "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Skip("dataset-fashion-mnist is not installed (make data)")
	}
	d, err := Load("fashion-mnist", Options{})
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for _, y := range d.Y {
		if y > 0 {
			pos++
		}
	}
	if d.N() != 70000 || d.M() != 785 || d.NumTrain() != 60000 || pos != 35000 || d.X.At(123, 784) != 10 {
		t.Fatalf("%d x %d, %d train, %d positive, bias %v", d.N(), d.M(), d.NumTrain(), pos, d.X.At(123, 784))
	}
}

func TestBuiltinMNIST(t *testing.T) {
	if _, err := MNISTDir(); err != nil {
		t.Skip(err)
	}
	d, err := Load("mnist", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.N() != 10000 || d.M() != 785 || d.Image == nil {
		t.Fatalf("%d x %d", d.N(), d.M())
	}
	if h := d.N() - d.NumTrain(); h < 900 || h > 1100 {
		t.Fatalf("%d held out", h)
	}
}
