package dataset

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestReadLIBSVMFixture(t *testing.T) {
	f, err := os.Open("testdata/small.libsvm")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ReadLIBSVM(f, "small.libsvm", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "small.libsvm" || d.N() != 4 || d.M() != 4 || !d.X.IsSparse() || d.X.NNZ() != 6 {
		t.Fatalf("got %s %d x %d, sparse %v, nnz %d", d.Name, d.N(), d.M(), d.X.IsSparse(), d.X.NNZ())
	}
	if got := fmt.Sprint(d.IDs); got != "[rec-a rec-b line-5 rec-d]" {
		t.Errorf("ids %s", got)
	}
	if got := fmt.Sprint(d.Y); got != "[1 -1 1 -1]" {
		t.Errorf("labels %s", got)
	}
	for _, c := range []struct {
		i, j int
		want float64
	}{{0, 0, 0.5}, {0, 1, 0}, {0, 2, 2}, {1, 1, 1.5}, {2, 0, 1}, {2, 3, -0.25}, {3, 2, 7}} {
		if got := d.X.At(c.i, c.j); got != c.want {
			t.Errorf("x[%d,%d] = %v, want %v", c.i, c.j, got, c.want)
		}
	}
	if d.NumTrain() != 4 {
		t.Errorf("%d of 4 samples train without a holdout", d.NumTrain())
	}
}

func TestReadLIBSVMCases(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		opt      Options
		ids, y   string
		m, nnz   int
	}{
		{"crlf and tabs", "1\t1:1 2:2\r\n0 2:1\r\n", Options{}, "[line-1 line-2]", "[1 -1]", 2, 3},
		{"no trailing newline", "-1 3:1\n+1 1:1", Options{}, "[line-1 line-2]", "[-1 1]", 3, 2},
		{"labels 1 and 2", "2 1:1\n1 1:1\n", Options{}, "[line-1 line-2]", "[-1 1]", 1, 2},
		{"explicit zero kept as width", "1 1:1 9:0\n-1 2:1\n", Options{}, "[line-1 line-2]", "[1 -1]", 9, 2},
		{"empty row", "1\n-1 2:1 # b\n", Options{}, "[line-1 b]", "[1 -1]", 2, 1},
		{"comment lines and blanks", "# head\n\n  \n1 1:1 #  x y\n", Options{}, "[x]", "[1]", 1, 1},
		{"positive rule", "3 1:1\n5 1:1\n7 1:1\n", Options{Positive: mustRule(t, "5,7")}, "[line-1 line-2 line-3]", "[-1 1 1]", 1, 3},
		{"forced dense", "1 1:1\n-1 3:2\n", Options{Dense: true}, "[line-1 line-2]", "[1 -1]", 3, 6},
		{"qid anywhere", "1 qid:7 2:1 qid:8\n-1 1:1\n", Options{}, "[line-1 line-2]", "[1 -1]", 2, 2},
		{"scientific values", "1 1:1e-3 2:-2.5E2\n-1 1:+3\n", Options{}, "[line-1 line-2]", "[1 -1]", 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ReadLIBSVM(strings.NewReader(tc.in), "t.svm", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(d.IDs) != tc.ids || fmt.Sprint(d.Y) != tc.y || d.M() != tc.m || d.X.NNZ() != tc.nnz {
				t.Fatalf("ids %v y %v m %d nnz %d", d.IDs, d.Y, d.M(), d.X.NNZ())
			}
			if d.X.IsSparse() == tc.opt.Dense {
				t.Fatalf("sparse storage %v with Dense %v", d.X.IsSparse(), tc.opt.Dense)
			}
		})
	}
}

func TestReadLIBSVMErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"+1 1:1\n-1 0:2\n", "bad.svm:2: field 2: feature index \"0\""},
		{"+1 1:1 -3:2\n", "bad.svm:1: field 3: feature index \"-3\""},
		{"+1 2147483648:1\n", "bad.svm:1: field 2: feature index \"2147483648\""},
		{"+1 3:1 2:1\n", "bad.svm:1: field 3: feature index 2 does not ascend"},
		{"+1 3:1 3:1\n", "bad.svm:1: field 3: feature index 3 does not ascend"},
		{"+1 1:x\n", "bad.svm:1: field 2: value \"x\""},
		{"+1 1:\n", "bad.svm:1: field 2: value \"\""},
		{"+1 1:1 2:NaN\n", "bad.svm:1: field 3: value \"NaN\""},
		{"+1 1:-Inf\n", "bad.svm:1: field 2: value \"-Inf\""},
		{"+1 1:1e999\n", "bad.svm:1: field 2: value \"1e999\""},
		{"abc 1:1\n", "bad.svm:1: field 1: label \"abc\""},
		{"nan 1:1\n", "bad.svm:1: field 1: label \"nan\""},
		{"1:1 2:1\n", "bad.svm:1: field 1: label \"1:1\""},
		{"+1 1:1\n\n+1 7\n", "bad.svm:3: field 2: \"7\" is not index:value"},
		{"1 1:1 # a\n-1 2:1 # a\n", "bad.svm:2: record id \"a\" already used on line 1"},
		{"1 1:1 # line-2\n-1 2:1\n", "bad.svm:2: record id \"line-2\" already used on line 1"},
		{"", "bad.svm: no samples"},
		{"# only a comment\n\n", "bad.svm: no samples"},
		{"1\n-1\n", "bad.svm: no features"},
		{"1 1:1\n2 1:1\n3 1:1\n", "bad.svm: labels have 3 classes [1 2 3], not two: give --positive"},
	} {
		_, err := ReadLIBSVM(strings.NewReader(tc.in), "bad.svm", Options{})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want prefix %q", tc.in, err, tc.want)
		}
	}
	if _, err := ReadLIBSVM(strings.NewReader("1 1:1\n-1 2000000000:1\n"), "wide.svm", Options{Dense: true}); err == nil || !strings.HasPrefix(err.Error(), "wide.svm: dense storage") {
		t.Errorf("forced dense of 2e9 columns: %v", err)
	}
	if _, err := ReadLIBSVM(strings.NewReader("1 1:1\n"), "x.svm", Options{Dense: true, Sparse: true}); err == nil {
		t.Error("accepted both Dense and Sparse")
	}
}

// A line far beyond bufio.Scanner's 64 KiB default must read.
func TestReadLIBSVMLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("1")
	for j := 1; j <= 50000; j++ {
		fmt.Fprintf(&b, " %d:0.123456", j)
	}
	b.WriteString(" # long\n-1 1:1\n")
	if b.Len() < 1<<19 {
		t.Fatalf("line only %d bytes", b.Len())
	}
	d, err := ReadLIBSVM(strings.NewReader(b.String()), "long", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.M() != 50000 || d.X.NNZ() != 50001 || d.IDs[0] != "long" {
		t.Fatalf("m %d nnz %d ids %v", d.M(), d.X.NNZ(), d.IDs)
	}
}

// 99.9%-sparse text with 10,000 features must stay in CSR storage.
func TestSparseTextStaysSparse(t *testing.T) {
	var b strings.Builder
	written := 0
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "%d", 1-2*(i%2))
		for _, j := range []int{1 + i%9990, 9991 + i%10} {
			fmt.Fprintf(&b, " %d:%g", j, 0.5+float64(i%7))
			written++
		}
		b.WriteString("\n")
	}
	d, err := ReadLIBSVM(strings.NewReader(b.String()), "sparse", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.X.IsSparse() || d.X.NNZ() != written || d.M() != 10000 || d.X.Data != nil {
		t.Fatalf("sparse %v nnz %d (want %d) cols %d", d.X.IsSparse(), d.X.NNZ(), written, d.M())
	}
	if frac := float64(d.X.NNZ()) / float64(d.N()*d.M()); frac > 0.001 {
		t.Fatalf("density %v", frac)
	}
}

func mustRule(t *testing.T, s string) *LabelRule {
	t.Helper()
	r, err := ParsePositive(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
