package partition

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
)

var writers = map[string]func(*bytes.Buffer, *Block) error{
	FormatLIBSVM: func(w *bytes.Buffer, b *Block) error { return WriteLIBSVM(w, b) },
	FormatCSV:    func(w *bytes.Buffer, b *Block) error { return WriteCSV(w, b) },
}

func TestFileRoundTrip(t *testing.T) {
	awkward := denseData(6, 5)
	for k, v := range []float64{0.1 + 0.2, 1.0 / 3, -1e300, 5e-324, math.MaxFloat64, -2.5e-310, math.Copysign(0, -1), 123456789.123456789} {
		awkward.X.Data[k] = v
	}
	awkward.Name = "awkward"
	firstOnly := &dataset.Dataset{Name: "first-only", X: dataset.NewSparseBuilder(10)}
	for i := 0; i < 4; i++ {
		firstOnly.X.AppendRow([]int32{0}, []float64{float64(i + 1)})
		addMeta(firstOnly, i, 4)
	}
	for _, tc := range []struct {
		spec string
		d    *dataset.Dataset
	}{
		{"quadrants:2", imageData(12, 4, 4, 1)},
		{"grid:2,2", denseData(15, 7)},
		{"vertical:2", awkward},
		{"grid:3,4", sparseData(30, 25)},
		{"grid:2,12", sparseData(10, 25)}, // some blocks with no feature at all
		{"horizontal:2", sparseData(20, 9)},
		{"vertical:2", firstOnly}, // client 1 holds features without any entry
	} {
		blocks := mustSplit(t, tc.spec, tc.d)
		for format, write := range writers {
			back := make([]Block, len(blocks))
			for k := range blocks {
				var buf bytes.Buffer
				if err := write(&buf, &blocks[k]); err != nil {
					t.Fatalf("%s %s client %d: %v", tc.spec, format, k, err)
				}
				got, err := ReadBlock(&buf, "b")
				if err != nil {
					t.Fatalf("%s %s client %d: %v", tc.spec, format, k, err)
				}
				if err := sameBlock(got, &blocks[k]); err != nil {
					t.Fatalf("%s %s client %d: %v", tc.spec, format, k, err)
				}
				if got.X.IsSparse() != (format == FormatLIBSVM) {
					t.Errorf("%s %s client %d: sparse storage %v", tc.spec, format, k, got.X.IsSparse())
				}
				back[k] = *got
			}
			if err := Check(tc.d, back); err != nil {
				t.Errorf("%s %s: blocks read back fail the check: %v", tc.spec, format, err)
			}
		}
	}
}

func TestWriteFormats(t *testing.T) {
	d := denseData(3, 6)
	d.X.Data = []float64{
		0, 1.5, 0, 0, -2, 0,
		0, 0, 0, 0, 0, 0,
		1e-7, 0, 3, 4, 0, 0.25,
	}
	b := recut(d, []int{0, 1, 2}, []int{0, 1, 3, 4, 5})
	b.Heldout[1] = true
	var buf bytes.Buffer
	if err := WriteLIBSVM(&buf, &b); err != nil {
		t.Fatal(err)
	}
	want := "# hyfed-block v1 features=6 cols=1-2,4-6\n" +
		"+1 2:1.5 5:-2 # s0\n" +
		"-1 # s1 heldout\n" +
		"-1 1:1e-07 4:4 6:0.25 # s2\n"
	if buf.String() != want {
		t.Errorf("LIBSVM:\n%s\nwant:\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := WriteCSV(&buf, &b); err != nil {
		t.Fatal(err)
	}
	want = "# hyfed-block v1 features=6\n" +
		"id,label,heldout,f1,f2,f4,f5,f6\n" +
		"s0,+1,0,0,1.5,0,-2,0\n" +
		"s1,-1,1,0,0,0,0,0\n" +
		"s2,-1,0,1e-07,0,4,0,0.25\n"
	if buf.String() != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestWriteRefuses(t *testing.T) {
	base := func() Block { return recut(denseData(3, 2), []int{0, 1, 2}, []int{0, 1}) }
	for _, tc := range []struct {
		name    string
		change  func(b *Block)
		libsvm  string // "" = writes fine
		csvWant string
	}{
		{"space in id", func(b *Block) { b.IDs[1] = "a b" }, `record id "a b" contains white space`, "white space"},
		{"comma in id", func(b *Block) { b.IDs[1] = "a,b" }, "", `record id "a,b" contains a comma or quote`},
		{"empty id", func(b *Block) { b.IDs[0] = "" }, "is empty", "is empty"},
		{"NaN", func(b *Block) { b.X.Data[3] = math.NaN() }, `sample "s1" feature 2 is NaN`, "is NaN"},
		{"no samples", func(b *Block) { *b = recut(denseData(3, 2), nil, []int{0}) }, "no samples", "no samples"},
		{"invalid", func(b *Block) { b.Y[0] = 0 }, "label 0 is not +1 or -1", "is not +1 or -1"},
	} {
		for format, want := range map[string]string{FormatLIBSVM: tc.libsvm, FormatCSV: tc.csvWant} {
			b := base()
			tc.change(&b)
			err := writers[format](&bytes.Buffer{}, &b)
			if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
				t.Errorf("%s %s: %v, want %q", tc.name, format, err, want)
			}
		}
	}
}

func TestReadBlockErrors(t *testing.T) {
	const lib = "# hyfed-block v1 features=10 cols=1-3,7\n"
	const csv = "# hyfed-block v1 features=10\nid,label,heldout,f2,f5\n"
	for _, tc := range []struct{ in, want string }{
		{"", "b:1: empty file, not a hyfed block file"},
		{"+1 1:1 # a\n", "b:1: not a hyfed block file"},
		{"# hyfed-block v2 features=3\n", `b:1: hyfed block version "v2"`},
		{"# hyfed-block v1 cols=1\n", "b:1: field features: missing"},
		{"# hyfed-block v1 features=x cols=1\n", `b:1: field features: "x" is not a feature count`},
		{"# hyfed-block v1 features=0 cols=1\n", `b:1: field features: "0" is not a feature count`},
		{"# hyfed-block v1 features=3 features=3\n", "b:1: field features: given twice"},
		{"# hyfed-block v1 features=3 rows=2\n", "b:1: field rows: unknown attribute"},
		{"# hyfed-block v1 features=3 cols\n", `b:1: field cols: "cols" is not key=value`},
		{"# hyfed-block v1 features=10 cols=3-1\n", `b:1: field cols: range "3-1" runs backwards`},
		{"# hyfed-block v1 features=10 cols=1-11\n", `b:1: field cols: range "1-11" goes past feature 10`},
		{"# hyfed-block v1 features=10 cols=1-3,3\n", `b:1: field cols: range "3" does not ascend`},
		{"# hyfed-block v1 features=10 cols=0-3\n", `b:1: field cols: "0-3" is not a feature number`},
		{"# hyfed-block v1 features=10 cols=1,,2\n", `b:1: field cols: "" is not a feature number`},
		{lib, "b: no samples"},
		{lib + "+1 5:1 # a\n", "b:2: field 2: feature 5 is not among the block's columns"},
		{lib + "+1 1:1 2:1 11:1 # a\n", "b:2: field 4: feature 11 is not among the block's columns"},
		{lib + "+1 2:1 1:1 # a\n", "b:2: field 3: feature 1 does not ascend (previous 2)"},
		{lib + "+1 2:1 2:1 # a\n", "b:2: field 3: feature 2 does not ascend (previous 2)"},
		{lib + "+1 1:1 # a\n\n-1 2:1 # a\n", `b:4: field id: record id "a" already on line 2`},
		{lib + "2 1:1 # a\n", `b:2: field 1: label "2" is not +1 or -1`},
		{lib + "# a\n", "b:2: field 1: no label"},
		{lib + "+1 1:Inf # a\n", `b:2: field 2: value "Inf" is not a finite number`},
		{lib + "+1 1:NaN # a\n", `b:2: field 2: value "NaN" is not a finite number`},
		{lib + "+1 1:1e999 # a\n", `b:2: field 2: value "1e999" is not a finite number`},
		{lib + "+1 1 # a\n", `b:2: field 2: "1" is not index:value`},
		{lib + "+1 -1:2 # a\n", `b:2: field 2: feature index "-1" is not a whole number from 1`},
		{lib + "+1 1:1\n", "b:2: field id: want the comment"},
		{lib + "+1 1:1 # a held\n", "b:2: field id: want the comment"},
		{"# hyfed-block v1 features=4\n", "b:2: missing CSV header"},
		{"# hyfed-block v1 features=4\n+1 1:1 # a\n", "b:2: missing CSV header"},
		{"# hyfed-block v1 features=4\nid,label,f1\n", "b:2: missing CSV header"},
		{"# hyfed-block v1 features=4\nid,label,heldout,x1\n", `b:2: field 4: column "x1" is not f<feature number>`},
		{"# hyfed-block v1 features=4\nid,label,heldout,f5\n", `b:2: field 4: column "f5" is past feature 4`},
		{"# hyfed-block v1 features=4\nid,label,heldout,f2,f1\n", `b:2: field 5: column "f1" does not ascend (previous f2)`},
		{csv, "b: no samples"},
		{csv + "a,+1,0,1\n", "b:3: 4 fields, the header has 5"},
		{csv + "a,+1,0,1,x\n", `b:3: field f5: value "x" is not a finite number`},
		{csv + "a,+1,0,NaN,1\n", `b:3: field f2: value "NaN" is not a finite number`},
		{csv + "a,0,0,1,1\n", `b:3: field label: label "0" is not +1 or -1`},
		{csv + "a,+1,2,1,1\n", `b:3: field heldout: "2" is not 0 or 1`},
		{csv + ",+1,0,1,1\n", `b:3: field id: record id "" is empty`},
		{csv + "\"a\",+1,0,1,1\n", `b:3: field id: record id "\"a\"" contains a comma or quote`},
		{csv + "a b,+1,0,1,1\n", "b:3: field id: record id \"a b\" contains white space"},
		{csv + "a,+1,0,1,1\nb,-1,1,0,0\na,+1,0,1,1\n", `b:5: field id: record id "a" already on line 3`},
	} {
		_, err := ReadBlock(strings.NewReader(tc.in), "b")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.in, err, tc.want)
		}
	}
}

// Lines longer than any bufio default buffer must read.
func TestReadBlockLongLines(t *testing.T) {
	d := denseData(3, 50_000)
	b := recut(d, []int{0, 1, 2}, seq(0, 50_000))
	for format, write := range writers {
		var buf bytes.Buffer
		if err := write(&buf, &b); err != nil {
			t.Fatal(err)
		}
		got, err := ReadBlock(&buf, "long")
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if err := sameBlock(got, &b); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	}
}

func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for j := lo; j < hi; j++ {
		out = append(out, j)
	}
	return out
}

func TestReadBlockTolerates(t *testing.T) {
	// CRLF line ends, blank lines, surrounding spaces, explicit zeros and
	// "1"/"true" spellings are fine.
	in := "# hyfed-block v1 features=5 cols=2-3\r\n\r\n  1 2:0 3:2.5   #  x  heldout \r\n-1 # y\r\n"
	b, err := ReadBlock(strings.NewReader(in), "crlf")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.IDs, []string{"x", "y"}) || !reflect.DeepEqual(b.Heldout, []bool{true, false}) || b.X.NNZ() != 1 || b.X.At(0, 1) != 2.5 {
		t.Errorf("read %+v", b)
	}
	in = "# hyfed-block v1 features=5\nid,label,heldout\na,1,true\nb,-1,false\n"
	if b, err = ReadBlock(strings.NewReader(in), "nofeat"); err != nil || b.N() != 2 || len(b.Features) != 0 || !b.Heldout[0] {
		t.Errorf("CSV without features: %+v, %v", b, err)
	}
}

func TestWriteFiles(t *testing.T) {
	d := sparseData(40, 30)
	for _, tc := range []struct {
		spec, format string
		first, last  string
	}{
		{"grid:2,3", FormatCSV, "client-0.csv", "client-5.csv"},
		{"grid:2,5", FormatLIBSVM, "client-00.libsvm", "client-09.libsvm"},
		{"grid:4,3", FormatLIBSVM, "client-00.libsvm", "client-11.libsvm"},
	} {
		dir := filepath.Join(t.TempDir(), "new", "dir")
		blocks := mustSplit(t, tc.spec, d)
		paths, err := WriteFiles(dir, tc.format, blocks)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != len(blocks) || filepath.Base(paths[0]) != tc.first || filepath.Base(paths[len(paths)-1]) != tc.last {
			t.Fatalf("%s: paths %v", tc.spec, paths)
		}
		back := make([]Block, len(paths))
		for k, p := range paths {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ReadBlock(f, p)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			back[k] = *b
		}
		if err := Check(d, back); err != nil {
			t.Errorf("%s: files fail the check: %v", tc.spec, err)
		}
	}
	if _, err := WriteFiles(t.TempDir(), "xml", mustSplit(t, "grid:1,1", d)); err == nil || !strings.Contains(err.Error(), `format "xml"`) {
		t.Errorf("bad format: %v", err)
	}
	if _, err := WriteFiles(t.TempDir(), FormatCSV, nil); err == nil {
		t.Error("no blocks accepted")
	}
}

func FuzzReadBlock(f *testing.F) {
	// Keep declared column lists small: a few bytes of cols= can otherwise
	// ask for 2^26 columns, which is valid but slows the fuzzer to a crawl.
	saved := maxBlockColumns
	maxBlockColumns = 1 << 12
	f.Cleanup(func() { maxBlockColumns = saved })
	for _, spec := range []struct {
		s string
		d *dataset.Dataset
	}{{"grid:1,2", imageData(3, 2, 2, 1)}, {"grid:1,2", sparseData(6, 9)}} {
		blocks := mustSplit(f, spec.s, spec.d)
		for _, write := range writers {
			var buf bytes.Buffer
			if err := write(&buf, &blocks[0]); err != nil {
				f.Fatal(err)
			}
			f.Add(buf.String())
		}
	}
	f.Add("# hyfed-block v1 features=10 cols=1-3,7\n+1 1:1 7:-2.5e-3 # a heldout\n\n-1 # b\n")
	f.Add("# hyfed-block v1 features=4\r\nid,label,heldout,f2,f4\r\na,1,true,0,1\r\n")
	f.Add("# hyfed-block v1 features=4\nid,label,heldout\n")
	f.Fuzz(func(t *testing.T, in string) {
		b, err := ReadBlock(strings.NewReader(in), "fuzz")
		if err != nil {
			if b != nil {
				t.Fatal("block and error")
			}
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("invalid block returned: %v", err)
		}
		// What reads must write and read back the same, in both formats
		// when the ids allow CSV.
		for format, write := range writers {
			var buf bytes.Buffer
			if err := write(&buf, b); err != nil {
				if format == FormatCSV && strings.Contains(err.Error(), "comma or quote") {
					continue
				}
				t.Fatalf("%s: read block does not write: %v", format, err)
			}
			again, err := ReadBlock(&buf, "again")
			if err != nil {
				t.Fatalf("%s: written block does not read: %v\n%s", format, err, buf.String())
			}
			if err := sameBlock(again, b); err != nil {
				t.Fatalf("%s: round trip: %v", format, err)
			}
		}
	})
}
