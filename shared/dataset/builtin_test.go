package dataset

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadSynthetic(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		opt    Options
		n, m   int
		sparse bool
		held   bool // some held out
	}{
		{"synthetic:2000,50", Options{}, 2000, 50, false, true},
		{"synthetic:500,200,0.01,0.05,7", Options{}, 500, 200, true, true},
		{"synthetic: 300 , 20 ,1", Options{Holdout: -1}, 300, 20, false, false},
		{"synthetic:300,20", Options{Sparse: true}, 300, 20, true, true},
		{"synthetic:300,20,0.5", Options{Dense: true, Holdout: 0.5}, 300, 20, false, true},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d, err := Load(tc.spec, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if d.Name != tc.spec || d.N() != tc.n || d.M() != tc.m || d.X.IsSparse() != tc.sparse || (d.NumTrain() < d.N()) != tc.held {
				t.Fatalf("%s: %d x %d sparse %v, %d train", d.Name, d.N(), d.M(), d.X.IsSparse(), d.NumTrain())
			}
		})
	}
	a, _ := Load("synthetic:300,20,0.2,0.1,5", Options{})
	b, _ := Load("synthetic:300,20,0.2,0.1,5", Options{})
	if fmt.Sprint(a.Y, a.X.Values, a.Heldout) != fmt.Sprint(b.Y, b.X.Values, b.Heldout) {
		t.Fatal("one spec gives different data")
	}
	if h := a.N() - a.NumTrain(); h < 10 || h > 60 {
		t.Fatalf("%d of 300 held out by default", h)
	}
	for _, tc := range []struct{ spec, want string }{
		{"synthetic:10", "1 comma-separated parts"},
		{"synthetic:1,2,3,4,5,6", "6 comma-separated parts"},
		{"synthetic:10.5,3", `N "10.5" is not a whole number`},
		{"synthetic:10,x", `M "x"`},
		{"synthetic:10,3,d", `density "d"`},
		{"synthetic:10,3,1,n", `noise "n"`},
		{"synthetic:10,3,1,0,1.5", `seed "1.5"`},
		{"synthetic:10,3,2", "density 2 must be in (0,1]"},
		{"synthetic:0,3", "need N >= 1"},
	} {
		if _, err := Load(tc.spec, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	svm, err := os.ReadFile("testdata/small.libsvm")
	if err != nil {
		t.Fatal(err)
	}
	csvText, err := os.ReadFile("testdata/small.csv")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path   string
		opt    Options
		n, m   int
		sparse bool
	}{
		{write("a.libsvm", svm), Options{}, 4, 4, true},
		{write("a.svm.gz", gzipBytes(svm)), Options{}, 4, 4, true},
		{write("a.txt", svm), Options{Dense: true}, 4, 4, false},
		{write("noext", svm), Options{}, 4, 4, true},
		{write("zipped-without-suffix", gzipBytes(svm)), Options{}, 4, 4, true},
		{write("b.csv", csvText), Options{}, 3, 3, false},
		{write("b.CSV.gz", gzipBytes(csvText)), Options{Sparse: true}, 3, 3, true},
		{"testdata/heldout.csv", Options{}, 4, 2, false},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			d, err := Load(tc.path, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if d.Name != tc.path || d.N() != tc.n || d.M() != tc.m || d.X.IsSparse() != tc.sparse {
				t.Fatalf("%s: %d x %d sparse %v", d.Name, d.N(), d.M(), d.X.IsSparse())
			}
		})
	}
	// Held-out share by record id for files without a split.
	p := write("many.svm", bytes.Repeat([]byte("1 1:1\n-1 2:1\n"), 500))
	d, err := Load(p, Options{Holdout: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range d.IDs {
		if d.Heldout[i] != HoldoutByID(id, 0.3) {
			t.Fatalf("%s held out %v", id, d.Heldout[i])
		}
	}
	if h := d.N() - d.NumTrain(); h < 230 || h > 370 {
		t.Fatalf("%d of 1000 held out at 0.3", h)
	}

	bad := write("bad.svm", []byte("1 1:1\n1 1:x\n"))
	for _, tc := range []struct {
		spec string
		opt  Options
		want string
	}{
		{bad, Options{}, bad + ":2: field 2: value \"x\""},
		{filepath.Join(dir, "missing.svm"), Options{}, "data: open " + filepath.Join(dir, "missing.svm")},
		{write("bad.csv.gz", gzipBytes([]byte("label,x\n1,y\n"))), Options{}, filepath.Join(dir, "bad.csv.gz") + ":2: field x"},
		{write("trunc.gz", gzipBytes(svm)[:20]), Options{}, filepath.Join(dir, "trunc.gz") + ":"},
		{"", Options{}, "no data given"},
		{"synthetic:10,3", Options{Sparse: true, Dense: true}, "data synthetic:10,3: options: both sparse and dense"},
		{"synthetic:10,3", Options{Holdout: 1}, "data synthetic:10,3: options: held-out fraction 1"},
	} {
		if _, err := Load(tc.spec, tc.opt); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want prefix %q", tc.spec, err, tc.want)
		}
	}
}

func TestMNISTDirSearch(t *testing.T) {
	root := t.TempDir()
	digits := filepath.Join(root, mnistSubdir)
	if err := os.MkdirAll(digits, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := 0; d < 10; d++ {
		b, err := os.ReadFile(fmt.Sprintf("testdata/mnist/%d.json", d))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(digits, fmt.Sprintf("%d.json", d)), b, 0o644)
	}
	deep := filepath.Join(root, "a", "b", "c", "d", "e")
	deeper := filepath.Join(deep, "f")
	if err := os.MkdirAll(deeper, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HYFED_MNIST_DIR", "")
	for _, tc := range []struct {
		wd, want string
	}{{root, digits}, {deep, digits}} {
		t.Chdir(tc.wd)
		if got, err := MNISTDir(); err != nil || got != tc.want {
			t.Errorf("from %s: got %q %v", tc.wd, got, err)
		}
	}
	t.Chdir(deeper) // six levels up is too far
	if got, err := MNISTDir(); err == nil && got == digits {
		t.Errorf("found %s six levels up", got)
	} else if err != nil && !strings.Contains(err.Error(), "make data") {
		t.Errorf("error does not name make data: %v", err)
	}

	// The environment wins, and loads the fixture.
	t.Setenv("HYFED_MNIST_DIR", digits)
	d, err := Load("mnist", Options{Holdout: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for i, y := range d.Y {
		if (y > 0) != (d.IDs[i][5]%2 == 0) { // "digit<d>-"
			t.Fatalf("%s labelled %v", d.IDs[i], y)
		}
		if y > 0 {
			pos++
		}
	}
	if d.N() != 15 || d.M() != 785 || pos != 5 || *d.Image != (ImageShape{28, 28, 1}) || d.X.At(3, 784) != Bias || d.NumTrain() == 15 {
		t.Fatalf("%d x %d, %d positive, image %+v, %d train", d.N(), d.M(), pos, d.Image, d.NumTrain())
	}
	t.Setenv("HYFED_MNIST_DIR", filepath.Join(root, "nowhere"))
	if _, err := Load("mnist", Options{}); err == nil || !strings.Contains(err.Error(), "HYFED_MNIST_DIR") {
		t.Errorf("missing env dir: %v", err)
	}
}

func TestBuiltinFashionMNIST(t *testing.T) {
	if _, err := os.Stat(filepath.Join(fashionMNISTDir(), "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Skip("dataset-fashion-mnist is not installed (make data)")
	}
	if testing.Short() {
		t.Skip("loads 440 MB")
	}
	d, err := Load("fashion-mnist", Options{})
	if err != nil {
		t.Fatal(err)
	}
	pos, held := 0, 0
	for i, y := range d.Y {
		if y > 0 {
			pos++
		}
		if d.Heldout[i] {
			held++
			if !strings.HasPrefix(d.IDs[i], "test-") {
				t.Fatalf("%s held out", d.IDs[i])
			}
		}
	}
	if d.N() != 70000 || d.M() != 785 || d.X.IsSparse() || held != 10000 || pos != 35000 {
		t.Fatalf("%d x %d, %d held out, %d positive", d.N(), d.M(), held, pos)
	}
	if d.IDs[0] != "train-0" || d.IDs[59999] != "train-59999" || d.IDs[60000] != "test-0" || d.IDs[69999] != "test-9999" {
		t.Fatalf("ids %s %s %s", d.IDs[0], d.IDs[60000], d.IDs[69999])
	}
	if *d.Image != (ImageShape{28, 28, 1}) {
		t.Fatalf("image %+v", d.Image)
	}
	for _, i := range []int{0, 123, 60000, 69999} {
		if d.X.At(i, 784) != Bias {
			t.Fatalf("row %d bias %v", i, d.X.At(i, 784))
		}
		_, row := d.X.Row(i)
		for j, v := range row[:784] {
			if v < 0 || v > 1 {
				t.Fatalf("pixel %d,%d = %v", i, j, v)
			}
		}
	}
	// The first training image of Fashion-MNIST is an ankle boot (class 9).
	if d.Y[0] != -1 {
		t.Fatalf("first label %v", d.Y[0])
	}
}

func TestBuiltinFashionMNISTMissing(t *testing.T) {
	t.Setenv("HYFED_FASHION_MNIST_DIR", t.TempDir())
	_, err := Load("fashion-mnist", Options{})
	if err == nil || !strings.Contains(err.Error(), "make data") || !strings.Contains(err.Error(), "dataset-fashion-mnist") {
		t.Fatalf("got %v", err)
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
	if h := d.N() - d.NumTrain(); h < 850 || h > 1150 {
		t.Fatalf("%d held out at the default 0.1", h)
	}
}
