package dataset

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAutoStorage: a data file is dense data when at least half of its
// entries are non-zero, whatever its format, so that grid partitions cut
// it into feature ranges; below that LIBSVM text stays sparse; the
// options still force either.
func TestAutoStorage(t *testing.T) {
	half := "+1 1:1 2:2\n-1 3:1 4:0.5\n"   // 4 of 8 entries
	less := "+1 1:1 2:2\n-1 3:1\n+1 4:1\n" // 4 of 12
	for _, tc := range []struct {
		name, text string
		opt        Options
		sparse     bool
	}{
		{"half non-zero", half, Options{}, false},
		{"a third non-zero", less, Options{}, true},
		{"half, forced sparse", half, Options{Sparse: true}, true},
		{"a third, forced dense", less, Options{Dense: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Load(writeTemp(t, "d.libsvm", tc.text), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if d.X.IsSparse() != tc.sparse {
				t.Errorf("sparse storage %v, want %v", d.X.IsSparse(), tc.sparse)
			}
			if got := d.X.At(0, 1); got != 2 {
				t.Errorf("entry (0, 1) = %v, want 2", got)
			}
		})
	}
}

// TestScaleMaxAbs: every feature divided by its largest magnitude, zeros
// kept (sparse data stays sparse), an all-zero feature's divisor 1, and
// the unscaled weights score the raw rows exactly as the weights score
// the scaled ones.
func TestScaleMaxAbs(t *testing.T) {
	for _, opt := range []Options{{Sparse: true}, {Dense: true}} {
		d, err := Load(writeTemp(t, "d.libsvm", "+1 1:-400 2:3 4:0.5\n-1 1:200 4:-2\n+1 2:-6\n"), opt)
		if err != nil {
			t.Fatal(err)
		}
		raw := make([][]float64, d.N())
		for i := range raw {
			for j := 0; j < d.M(); j++ {
				raw[i] = append(raw[i], d.X.At(i, j))
			}
		}
		nnz := d.X.NNZ()
		scale := d.ScaleMaxAbs()
		if want := []float64{400, 6, 1, 2}; !slices.Equal(scale, want) {
			t.Fatalf("%+v: divisors %v, want %v", opt, scale, want)
		}
		if d.X.IsSparse() && d.X.NNZ() != nnz {
			t.Errorf("%+v: %d non-zeros after scaling, %d before", opt, d.X.NNZ(), nnz)
		}
		if got := d.X.At(1, 3); got != -1 {
			t.Errorf("%+v: scaled entry (1, 3) = %v, want -1", opt, got)
		}
		w := []float64{0.5, -1, 3, 2}
		u := d.UnscaleWeights(w)
		for i := range raw {
			s, r := d.X.Dot(i, w), 0.0
			for j, v := range raw[i] {
				r += u[j] * v
			}
			if math.Abs(s-r) > 1e-12 {
				t.Errorf("%+v: sample %d scores %v scaled, %v raw with the unscaled weights", opt, i, s, r)
			}
		}
	}
}

func TestSampleName(t *testing.T) {
	d, err := Load(writeTemp(t, "d.libsvm", "# header\n+1 1:1\n-1 1:2 # rec-7\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.SampleName(0); got != "line 2" {
		t.Errorf("SampleName(0) = %q", got)
	}
	if got := d.SampleName(1); !strings.Contains(got, "line 3") || !strings.Contains(got, "rec-7") {
		t.Errorf("SampleName(1) = %q", got)
	}
}
