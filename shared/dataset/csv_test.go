package dataset

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestReadCSVFixtures(t *testing.T) {
	f, err := os.Open("testdata/small.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ReadCSV(f, "small.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.N() != 3 || d.M() != 3 || d.X.IsSparse() || fmt.Sprint(d.IDs) != "[a b c]" || fmt.Sprint(d.Y) != "[1 -1 1]" || d.X.At(2, 2) != -0.25 || d.X.At(0, 0) != 0.5 {
		t.Fatalf("got %+v", d)
	}

	// Mixed-case column names, {1,2} labels, and the file's own split.
	f2, err := os.Open("testdata/heldout.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	d, err = ReadCSV(f2, "heldout.csv", Options{Holdout: 0.5, Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(d.IDs) != "[r1 r2 r3 r4]" || fmt.Sprint(d.Y) != "[-1 1 1 -1]" || fmt.Sprint(d.Heldout) != "[false true false true]" {
		t.Fatalf("ids %v y %v held %v", d.IDs, d.Y, d.Heldout)
	}
	if !d.X.IsSparse() || d.X.NNZ() != 3 || d.M() != 2 || d.X.At(1, 1) != 3 {
		t.Fatalf("sparse %v nnz %d m %d", d.X.IsSparse(), d.X.NNZ(), d.M())
	}
}

func TestReadCSVCases(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ids, y   string
		m        int
	}{
		{"default ids", "label,a,b\n1,1,2\n-1,3,4\n", "[row-1 row-2]", "[1 -1]", 2},
		{"label last, spaces", " a , LABEL \n 1.5 , 0 \n2,1\n", "[row-1 row-2]", "[-1 1]", 1},
		{"quoted multi-line id", "id,label,x\n\"a\nb\",1,2\nc,0,1\n", "[a\nb c]", "[1 -1]", 1},
		{"byte order mark", "\ufeffid,label,x\nq,1,1\n", "[q]", "[1]", 1},
		{"blank lines skipped", "label,x\n\n1,1\n\n0,2\n", "[row-1 row-2]", "[1 -1]", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ReadCSV(strings.NewReader(tc.in), "t.csv", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(d.IDs) != tc.ids || fmt.Sprint(d.Y) != tc.y || d.M() != tc.m || d.X.IsSparse() {
				t.Fatalf("ids %q y %v m %d", d.IDs, d.Y, d.M())
			}
		})
	}
}

func TestReadCSVErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "bad.csv:1: no header row"},
		{"id,f1\na,1\n", "bad.csv:1: no \"label\" column"},
		{"id,label\na,1\n", "bad.csv:1: no feature columns"},
		{"label,x,Label\n1,2,3\n", "bad.csv:1: field 3: a second \"Label\" column"},
		{"label,f1,f2\n1,2,x\n", "bad.csv:2: field f2: \"x\" is not a finite number"},
		{"label,f1,\n1,2,\n", "bad.csv:2: field 3: \"\" is not a finite number"},
		{"label,f1\n1,2\n0,Inf\n", "bad.csv:3: field f1: \"Inf\""},
		{"label,f1\n1,NaN\n", "bad.csv:2: field f1: \"NaN\""},
		{"label,f1\nz,2\n", "bad.csv:2: field label: label \"z\""},
		{"label,heldout,f1\n1,maybe,2\n", "bad.csv:2: field heldout: \"maybe\" is not 0/1/true/false"},
		{"label,f1\n1,2,3\n", "bad.csv:2: field 3: beyond the header's columns"},
		{"label,f1,f2\n1,2\n", "bad.csv:2: field f2: missing"},
		{"id,label,f1\na,1,2\n,0,1\n", "bad.csv:3: field id: empty record id"},
		{"id,label,f1\na,1,2\na,0,1\n", "bad.csv:3: record id \"a\" already used on line 2"},
		{"label,f1\n1,\"2\n", "bad.csv:2:"},
		{"label,f1\n1,2\"x\n", "bad.csv:2:4: bare \""},
		{"label,f1\n", "bad.csv: no samples"},
		{"label,f1\n1,0\n2,0\n3,0\n", "bad.csv: labels have 3 classes"},
	} {
		_, err := ReadCSV(strings.NewReader(tc.in), "bad.csv", Options{})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want prefix %q", tc.in, err, tc.want)
		}
	}
}
