package dataset

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSyntheticDeterministic(t *testing.T) {
	for _, c := range []SyntheticConfig{
		{N: 300, M: 20, Density: 0.2, LabelNoise: 0.1, Seed: 5},
		{N: 200, M: 8, Seed: -3, Holdout: 0.3},
		{N: 100, M: 5000, Density: 0.001, Seed: 7},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			a, err := Synthetic(c)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Synthetic(c)
			if !slices.Equal(a.Y, b.Y) || !slices.Equal(a.X.Values, b.X.Values) || !slices.Equal(a.X.Data, b.X.Data) ||
				!slices.Equal(a.X.Indices, b.X.Indices) || !slices.Equal(a.Heldout, b.Heldout) {
				t.Fatal("two runs with one seed differ")
			}
			c2 := c
			c2.Seed++
			o, _ := Synthetic(c2)
			if slices.Equal(a.Y, o.Y) && slices.Equal(a.X.Values, o.X.Values) && slices.Equal(a.X.Data, o.X.Data) {
				t.Fatal("another seed gives the same data")
			}
			if a.N() != c.N || a.M() != c.M || a.IDs[c.N-1] != fmt.Sprintf("syn-%d", c.N-1) {
				t.Fatalf("%d x %d, ids %v...", a.N(), a.M(), a.IDs[:3])
			}
			dense := c.Density == 0 || c.Density == 1
			if a.X.IsSparse() == dense {
				t.Fatalf("sparse storage %v at density %v", a.X.IsSparse(), c.Density)
			}
			pos, nnz := 0, 0
			for i := 0; i < a.N(); i++ {
				if a.Y[i] > 0 {
					pos++
				}
				if a.X.At(i, c.M-1) != 1 {
					t.Fatalf("row %d bias %v", i, a.X.At(i, c.M-1))
				}
				idx, _ := a.X.Row(i)
				if !dense && len(idx) < 2 {
					t.Fatalf("row %d has no feature besides the bias", i)
				}
				nnz += len(idx)
			}
			if pos < c.N/10 || pos > c.N*9/10 {
				t.Fatalf("%d of %d positive", pos, c.N)
			}
			if !dense {
				want := float64(c.N) * (c.Density*float64(c.M-1) + 1)
				if f := float64(nnz); f < want*0.7-float64(c.N) || f > want*1.3+float64(c.N) {
					t.Fatalf("%d stored values, expected about %.0f", nnz, want)
				}
			}
			if held := a.N() - a.NumTrain(); c.Holdout == 0 && held != 0 || c.Holdout > 0 && held == 0 {
				t.Fatalf("%d held out at %v", held, c.Holdout)
			}
		})
	}
}

func TestSyntheticNoise(t *testing.T) {
	// One seed draws the same features and truth with or without noise,
	// so the labels differ exactly where the noise flipped them.
	clean, _ := Synthetic(SyntheticConfig{N: 2000, M: 10, Seed: 1})
	noisy, _ := Synthetic(SyntheticConfig{N: 2000, M: 10, Seed: 1, LabelNoise: 0.2})
	if !slices.Equal(clean.X.Data, noisy.X.Data) {
		t.Fatal("noise changed the features")
	}
	flips := 0
	for i := range clean.Y {
		if clean.Y[i] != noisy.Y[i] {
			flips++
		}
	}
	if flips < 300 || flips > 500 {
		t.Fatalf("%d of 2000 labels flipped at noise 0.2", flips)
	}
}

func TestSyntheticErrors(t *testing.T) {
	for _, tc := range []struct {
		c    SyntheticConfig
		want string
	}{
		{SyntheticConfig{N: 0, M: 5}, "need N >= 1"},
		{SyntheticConfig{N: 5, M: 1}, "need N >= 1"},
		{SyntheticConfig{N: 5, M: 5, Density: 1.5}, "density 1.5 must be in (0,1]"},
		{SyntheticConfig{N: 5, M: 5, Density: -0.1}, "density -0.1"},
		{SyntheticConfig{N: 5, M: 5, LabelNoise: 1}, "noise 1 in [0,1)"},
		{SyntheticConfig{N: 1 << 20, M: 1 << 20}, "values, more than"},
	} {
		if _, err := Synthetic(tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
}
