package dataset

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Options.Raw on every built-in set (fixtures where the real data may be
// absent): the same samples, labels, ids and held-out flags as the set
// hyfed trains on, the source's values, no bias column.
func TestLoadRaw(t *testing.T) {
	t.Setenv("HYFED_SKLEARN_DIR", "testdata/sklearn")
	t.Setenv("HYFED_MNIST_DIR", "testdata/mnist")
	fashion := t.TempDir()
	for _, part := range []struct {
		file string
		n    int
	}{{"train", 4}, {"t10k", 2}} {
		images, labels := idxPair(part.n, 28, 28, true)
		for name, b := range map[string][]byte{part.file + "-images-idx3-ubyte.gz": images, part.file + "-labels-idx1-ubyte.gz": labels} {
			if err := os.WriteFile(filepath.Join(fashion, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv("HYFED_FASHION_MNIST_DIR", fashion)

	for _, tc := range []struct {
		spec string
		// unscale maps a value of the scaled set to the raw one (nil: the
		// raw values are checked otherwise).
		unscale func(float64) float64
		names   []string
		extra   int // the scaled set's Image.Extra; the raw set has 0
		cats    map[int][]string
	}{
		{"fashion-mnist", func(v float64) float64 { return math.Round(v * 255) }, nil, 1, nil},
		{"mnist", func(v float64) float64 { return math.Round(v * 255) }, nil, 1, nil},
		{"digits", func(v float64) float64 { return v * digitsMaxPixel }, nil, 1, nil},
		{"breast-cancer", nil, BreastCancerNames, 0, nil},
		{"diabetes", nil, DiabetesNames, 0, map[int][]string{1: {"1", "2"}}},
		{"synthetic:50,6", func(v float64) float64 { return v }, nil, 0, nil},
		{"synthetic:50,6,0.3", func(v float64) float64 { return v }, nil, 0, nil},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d, err := Load(tc.spec, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Load(tc.spec, Options{Raw: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.M() != d.M()-1 || r.N() != d.N() || !reflect.DeepEqual(r.IDs, d.IDs) || !reflect.DeepEqual(r.Y, d.Y) || !reflect.DeepEqual(r.Heldout, d.Heldout) {
				t.Fatalf("raw %dx%d, scaled %dx%d, or other ids, labels, held-out flags", r.N(), r.M(), d.N(), d.M())
			}
			if r.X.IsSparse() != d.X.IsSparse() {
				t.Fatalf("raw sparse %v, scaled sparse %v", r.X.IsSparse(), d.X.IsSparse())
			}
			if tc.names == nil {
				if d.Names != nil || r.Names != nil {
					t.Fatalf("names %q, raw %q", d.Names, r.Names)
				}
			} else if !reflect.DeepEqual(r.Names, tc.names) || !reflect.DeepEqual(d.Names, append(append([]string{}, tc.names...), BiasName)) {
				t.Fatalf("names %q, raw %q", d.Names, r.Names)
			}
			if !reflect.DeepEqual(r.Categories, tc.cats) || d.Categories != nil {
				t.Fatalf("categories %v, raw %v", d.Categories, r.Categories)
			}
			if d.Image != nil && (d.Image.Extra != tc.extra || r.Image == nil || r.Image.Extra != 0 || r.Image.Width != d.Image.Width) {
				t.Fatalf("image %+v, raw %+v", d.Image, r.Image)
			}
			if tc.unscale == nil {
				return
			}
			for i := 0; i < d.N(); i++ {
				for j := 0; j < r.M(); j++ {
					if got, want := r.X.At(i, j), tc.unscale(d.X.At(i, j)); got != want {
						t.Fatalf("sample %d feature %d: raw %v, want %v", i, j, got, want)
					}
				}
			}
		})
	}

	// The files' own values.
	r, err := Load("breast-cancer", Options{Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.X.At(1, 0) != 2 || r.X.At(1, 28) != 58 || r.X.At(3, 29) != 7 {
		t.Fatalf("breast-cancer raw: %v %v %v", r.X.At(1, 0), r.X.At(1, 28), r.X.At(3, 29))
	}
	r, err = Load("diabetes", Options{Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	_, row := r.X.Row(0)
	if fmt.Sprint(row) != "[59 2 32.1 101 157 93.2 38 4 4.8598 87]" {
		t.Fatalf("diabetes raw patient 0: %v", row)
	}
	r, err = Load("digits", Options{Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.X.At(0, 0) != 16 || r.X.At(0, 63) != 8 || r.M() != 64 {
		t.Fatalf("digits raw: %v %v, %d features", r.X.At(0, 0), r.X.At(0, 63), r.M())
	}
	r, err = Load("fashion-mnist", Options{Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.X.At(0, 255) != 255 || r.X.At(1, 0) != float64(784%256) || r.NumTrain() != 4 {
		t.Fatalf("fashion-mnist raw: %v %v, %d train", r.X.At(0, 255), r.X.At(1, 0), r.NumTrain())
	}
}

// The diabetes loader on the fixture (the first six patients): labels
// from the score, ids, standardizing, bias; what it refuses.
func TestDiabetesFixture(t *testing.T) {
	t.Setenv("HYFED_SKLEARN_DIR", "testdata/sklearn")
	d, err := Load("diabetes", Options{Holdout: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Scores 151, 75, 141, 206, 135, 97.
	if d.N() != 6 || d.M() != 11 || fmt.Sprint(d.Y) != "[1 -1 1 1 -1 -1]" || d.IDs[5] != "patient-5" || d.NumTrain() != 6 || d.Image != nil {
		t.Fatalf("%dx%d y %v ids %v train %d", d.N(), d.M(), d.Y, d.IDs, d.NumTrain())
	}
	for j := 0; j < 10; j++ {
		var sum, sq float64
		for i := 0; i < 6; i++ {
			v := d.X.At(i, j)
			sum, sq = sum+v, sq+v*v
		}
		if math.Abs(sum) > 1e-9 || math.Abs(sq-6) > 1e-9 {
			t.Fatalf("feature %d: sum %v, sum of squares %v", j, sum, sq)
		}
	}
	for i := 0; i < 6; i++ {
		if d.X.At(i, 10) != Bias {
			t.Fatalf("patient %d bias %v", i, d.X.At(i, 10))
		}
	}
	p, _ := ParsePositive("151")
	if _, err := Load("diabetes", Options{Positive: p}); err == nil || !strings.Contains(err.Error(), "above 140") {
		t.Errorf("--positive: %v", err)
	}

	dir := t.TempDir()
	for _, f := range []string{breastCancerFile, diabetesTargetFile} {
		b, err := os.ReadFile(filepath.Join("testdata/sklearn", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	t.Setenv("HYFED_SKLEARN_DIR", dir)
	for _, tc := range []struct{ data, want string }{
		{"", diabetesDataFile + ": no such file"},
		{"59 2 32.1 101.0 157 93.2 38.0 4.0 4.8598 87\n", "has 1 patients, " + filepath.Join(dir, diabetesTargetFile) + " 6 (a truncated file?)"},
		{"59 2 32.1 101.0 157 93.2 38.0 4.0 4.8598\n", diabetesDataFile + ":1: 9 fields, want 10"},
		{strings.Repeat("59 3 32.1 101.0 157 93.2 38.0 4.0 4.8598 87\n", 6), "patient 1: sex 3 is not 1 or 2"},
	} {
		os.Remove(filepath.Join(dir, diabetesDataFile))
		if tc.data != "" {
			os.WriteFile(filepath.Join(dir, diabetesDataFile), gzipBytes([]byte(tc.data)), 0o644)
		}
		if _, err := Load("diabetes", Options{}); err == nil || !strings.HasPrefix(err.Error(), "diabetes: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.data, err, tc.want)
		}
	}
}

func TestReadSpaced(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		cols     int
	}{
		{"1 2\n3\t4\r\n\n  5 6  \n", "3x2 [1 2 3 4 5 6]", 2},
		{"1.5e+02\n7.5e+01", "2x1 [150 75]", 1},
		{"", "t.txt: no rows", 1},
		{"1 2 3\n", "t.txt:1: 3 fields, want 2", 2},
		{"1 2\n1 x\n", `t.txt:2: field 2: "x" is not a finite number`, 2},
		{"NaN\n", `t.txt:1: field 1: "NaN"`, 1},
		{"1\n", "t.txt: 0 columns", 0},
	} {
		x, err := ReadSpaced(strings.NewReader(tc.in), "t.txt", tc.cols)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = fmt.Sprintf("%dx%d %v", x.Rows, x.Cols, x.Data)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Names and categories must fit the matrix.
func TestValidateNamesCategories(t *testing.T) {
	d, err := Load("synthetic:10,3", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		names []string
		cats  map[int][]string
		want  string
	}{
		{[]string{"a", "b", "bias"}, map[int][]string{0: {"x"}}, ""},
		{[]string{"a", "b"}, nil, "3 features, 2 names"},
		{nil, map[int][]string{3: {"x"}}, "of feature 3 (of 3)"},
		{nil, map[int][]string{0: {}}, "of feature 0"},
	} {
		d.Names, d.Categories = tc.names, tc.cats
		err := d.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q %v: got %v, want %q", tc.names, tc.cats, err, tc.want)
		}
	}
}
