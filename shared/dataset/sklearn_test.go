package dataset

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadSklearnCSV(t *testing.T) {
	two := SklearnLayout{Features: 2}
	for _, tc := range []struct {
		name, in string
		l        SklearnLayout
		rows     int
		data     string
		labels   string
	}{
		{"no header", "1,2,0\n3,4,1\n", two, 2, "[1 2 3 4]", "[0 1]"},
		{"header", "2,2,a,b\n1,2,0\n3,4,1\n", SklearnLayout{Features: 2, Header: true}, 2, "[1 2 3 4]", "[0 1]"},
		{"crlf, blank lines, spaces", "1, 2 ,3\r\n\r\n0.5,1e-3, 9\r\n", two, 2, "[1 2 0.5 0.001]", "[3 9]"},
		{"no final newline", "1,2,0", two, 1, "[1 2]", "[0]"},
		{"pixels in range", "0,16,5\n", SklearnLayout{Features: 2, Max: 16}, 1, "[0 16]", "[5]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, raw, err := ReadSklearnCSV(strings.NewReader(tc.in), "t.csv", tc.l)
			if err != nil {
				t.Fatal(err)
			}
			if x.Rows != tc.rows || x.Cols != tc.l.Features || fmt.Sprint(x.Data) != tc.data || fmt.Sprint(raw) != tc.labels {
				t.Fatalf("%dx%d %v labels %v", x.Rows, x.Cols, x.Data, raw)
			}
		})
	}
}

func TestReadSklearnCSVErrors(t *testing.T) {
	two := SklearnLayout{Features: 2}
	hdr := SklearnLayout{Features: 2, Header: true}
	for _, tc := range []struct {
		in   string
		l    SklearnLayout
		want string
	}{
		{"", two, "bad.csv: no samples"},
		{"", hdr, "bad.csv:1: no header line"},
		{"\n\n", two, "bad.csv: no samples"},
		{"1,2,0\n1,2\n", two, "bad.csv:2: 2 fields, want 2 features and a label"},
		{"1,2,0,4\n", two, "bad.csv:1: 4 fields"},
		{"1,x,0\n", two, `bad.csv:1: field 2: "x" is not a finite number`},
		{"1,NaN,0\n", two, `bad.csv:1: field 2: "NaN"`},
		{"Inf,1,0\n", two, `bad.csv:1: field 1: "Inf"`},
		{"1,2,0.5\n", two, `bad.csv:1: field 3: label "0.5" is not a class number`},
		{"1,2,-1\n", two, `bad.csv:1: field 3: label "-1"`},
		{"1,2,\n", two, `bad.csv:1: field 3: label ""`},
		{"2\n", hdr, `bad.csv:1: header "2": want`},
		{"x,2\n1,2,0\n", hdr, `bad.csv:1: field 1: sample count "x"`},
		{"0,2\n", hdr, `bad.csv:1: field 1: sample count "0"`},
		{"1,3,a\n1,2,0\n", hdr, `bad.csv:1: field 2: feature count "3", want 2`},
		{"1,2\n1,2,0\n3,4,1\n", hdr, "bad.csv:3: more samples than the header's 1"},
		{"3,2\n1,2,0\n\n3,4,1\n", hdr, "bad.csv:4: 2 samples, the header says 3 (truncated file?)"},
		{"1,17,0\n", SklearnLayout{Features: 2, Max: 16}, "bad.csv:1: field 2: 17 is not in [0,16]"},
		{"-1,1,0\n", SklearnLayout{Features: 2, Max: 16}, "bad.csv:1: field 1: -1 is not in [0,16]"},
		{"1,0\n", SklearnLayout{}, "bad.csv: layout with 0 features"},
		{strings.Repeat("1", 2<<20) + ",1,0\n", two, "bad.csv:1: bufio.Scanner: token too long"},
	} {
		_, _, err := ReadSklearnCSV(strings.NewReader(tc.in), "bad.csv", tc.l)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			in := tc.in
			if len(in) > 40 {
				in = in[:40] + "..."
			}
			t.Errorf("%q: got %v, want prefix %q", in, err, tc.want)
		}
	}
}

// The loaders on the fixtures in testdata/sklearn: labels, ids, scaling,
// bias, image shape.
func TestSklearnBuiltinsFixture(t *testing.T) {
	t.Setenv("HYFED_SKLEARN_DIR", "testdata/sklearn")
	d, err := Load("breast-cancer", Options{Holdout: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Malignant is sklearn's class 0: samples 0 and 3 of the fixture.
	if d.N() != 4 || d.M() != 31 || fmt.Sprint(d.Y) != "[1 -1 -1 1]" || d.IDs[3] != "sample-3" || d.NumTrain() != 4 || d.Image != nil {
		t.Fatalf("%dx%d y %v ids %v train %d", d.N(), d.M(), d.Y, d.IDs, d.NumTrain())
	}
	// Feature j of sample i is (i+1)(j+1): standardized, (i+1-2.5)/sqrt(1.25)
	// for every j; the constant feature 29 becomes 0; then the bias.
	for i := 0; i < 4; i++ {
		want := (float64(i) + 1 - 2.5) / math.Sqrt(1.25)
		for _, j := range []int{0, 13, 28} {
			if got := d.X.At(i, j); math.Abs(got-want) > 1e-12 {
				t.Fatalf("sample %d feature %d: %v, want %v", i, j, got, want)
			}
		}
		if d.X.At(i, 29) != 0 || d.X.At(i, 30) != Bias {
			t.Fatalf("sample %d: constant feature %v, bias %v", i, d.X.At(i, 29), d.X.At(i, 30))
		}
	}
	// Scaling statistics come from the training rows only.
	d, err = Load("breast-cancer", Options{Holdout: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for i := 0; i < d.N(); i++ {
		if !d.Heldout[i] {
			sum += d.X.At(i, 0)
		}
	}
	if h := d.N() - d.NumTrain(); h == 0 || h == d.N() || math.Abs(sum) > 1e-12 {
		t.Fatalf("%d held out; training mean of feature 0 %v", h, sum)
	}
	p, _ := ParsePositive("1")
	if d, err = Load("breast-cancer", Options{Positive: p, Holdout: -1}); err != nil || fmt.Sprint(d.Y) != "[-1 1 1 -1]" {
		t.Fatalf("--positive 1: %v %v", d.Y, err)
	}

	d, err = Load("digits", Options{Holdout: -1, Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.N() != 3 || d.M() != 65 || fmt.Sprint(d.Y) != "[-1 1 1]" || d.IDs[2] != "image-2" || *d.Image != (ImageShape{8, 8, 1}) || !d.X.IsSparse() {
		t.Fatalf("%dx%d y %v ids %v image %+v", d.N(), d.M(), d.Y, d.IDs, d.Image)
	}
	for i := 0; i < 3; i++ {
		if d.X.At(i, i) != 1 || d.X.At(i, 63) != 0.5 || d.X.At(i, 64) != Bias || d.X.At(i, 10) != 0 {
			t.Fatalf("image %d: %v %v %v", i, d.X.At(i, i), d.X.At(i, 63), d.X.At(i, 64))
		}
	}
}

func TestSklearnMissing(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("HYFED_SKLEARN_DIR", empty)
	for _, name := range []string{"breast-cancer", "digits", "diabetes"} {
		if _, err := Load(name, Options{}); err == nil || !strings.Contains(err.Error(), name+": HYFED_SKLEARN_DIR") {
			t.Errorf("%s with an empty HYFED_SKLEARN_DIR: %v", name, err)
		}
	}
	// Only breast_cancer.csv: digits names the missing file and the fix.
	b, err := os.ReadFile("testdata/sklearn/breast_cancer.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, breastCancerFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("digits", Options{}); err == nil || !strings.Contains(err.Error(), digitsFile) || !strings.Contains(err.Error(), "make data") {
		t.Errorf("digits missing: %v", err)
	}
	// A .cache/sklearn from before diabetes: its error says so too.
	if _, err := Load("diabetes", Options{}); err == nil || !strings.Contains(err.Error(), diabetesDataFile) || !strings.Contains(err.Error(), "make data") {
		t.Errorf("diabetes missing: %v", err)
	}
	if _, err := os.Stat(filepath.Join(SklearnSystemDir, breastCancerFile)); err == nil {
		return // python3-sklearn is installed: the search below would find it
	}
	t.Setenv("HYFED_SKLEARN_DIR", "")
	t.Chdir(t.TempDir())
	if _, err := Load("breast-cancer", Options{}); err == nil || !strings.Contains(err.Error(), "make data") || !strings.Contains(err.Error(), "apt-get download python3-sklearn") {
		t.Errorf("no files anywhere: %v", err)
	}
}

// The real files, when `make data` has fetched them: sizes, class counts,
// the held-out share and the encryption's bound on squared row norms.
func TestBuiltinSklearn(t *testing.T) {
	dir, err := SklearnDir()
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name, file string
		n, m, pos  int
	}{
		{"breast-cancer", breastCancerFile, 569, 31, 212}, // 212 malignant
		{"digits", digitsFile, 1797, 65, 891},             // 178+177+181+181+174 even digits
		{"diabetes", diabetesDataFile, 442, 11, 221},      // scores above 140
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, tc.file)); err != nil {
				t.Skip(err, " (a .cache/sklearn from before it: make data)")
			}
			d, err := Load(tc.name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			for _, y := range d.Y {
				if y > 0 {
					pos++
				}
			}
			if d.N() != tc.n || d.M() != tc.m || pos != tc.pos {
				t.Fatalf("%dx%d, %d positive", d.N(), d.M(), pos)
			}
			if h := float64(d.N()-d.NumTrain()) / float64(d.N()); h < 0.06 || h > 0.14 {
				t.Fatalf("held out %.3f at the default 0.1", h)
			}
			maxNorm := 0.0
			for i := 0; i < d.N(); i++ {
				maxNorm = math.Max(maxNorm, d.X.RowNormSq(i))
				if d.Heldout[i] != HoldoutByID(d.IDs[i], 0.1) || d.X.At(i, d.M()-1) != Bias {
					t.Fatalf("%s: held out %v, bias %v", d.IDs[i], d.Heldout[i], d.X.At(i, d.M()-1))
				}
			}
			// docs/encryption.md: squared row norms below 32,768.
			if maxNorm >= 32768 || maxNorm <= Bias*Bias {
				t.Fatalf("largest squared row norm %v", maxNorm)
			}
			t.Logf("%s: largest squared row norm %.1f", tc.name, maxNorm)
		})
	}
}
