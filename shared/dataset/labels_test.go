package dataset

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestParsePositive(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"0,1,2,3,4", "0,1,2,3,4", ""},
		{" 4, 2 ,2,", "2,4", ""},
		{"-1", "-1", ""},
		{"1.5,7", "1.5,7", ""},
		{"1,x", "", `positive labels "1,x": "x" is not a number`},
		{"NaN", "", "is not a number"},
		{"", "", "no labels given"},
		{" , ", "", "no labels given"},
	} {
		r, err := ParsePositive(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %v, want error %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.want {
			t.Errorf("%q: got %v %v, want %s", tc.in, r, err, tc.want)
		}
	}
}

func TestMapLabels(t *testing.T) {
	for _, tc := range []struct {
		raw  []float64
		rule string
		want string // labels, or the start of the error
	}{
		{[]float64{0, 5, 2, 9}, "0,1,2", "[1 -1 1 -1]"},
		{[]float64{3, 3}, "7", "[-1 -1]"},
		{[]float64{0, 1, 1}, "", "[-1 1 1]"},
		{[]float64{-1, 1}, "", "[-1 1]"},
		{[]float64{2, 1, 2}, "", "[-1 1 -1]"},
		{[]float64{1, 1}, "", "[1 1]"},
		{[]float64{0, 0}, "", "[-1 -1]"},
		{[]float64{}, "", "[]"},
		{[]float64{0, 2}, "", "error: labels have 2 classes [0 2], not two: give --positive"},
		{[]float64{-1, 0, 1}, "", "error: labels have 3 classes [-1 0 1]"},
		{[]float64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, "", "error: labels have 10 classes [0 1 2 3 4 5 ...]"},
	} {
		var rule *LabelRule
		if tc.rule != "" {
			rule = mustRule(t, tc.rule)
		}
		y, err := MapLabels(tc.raw, rule)
		got := fmt.Sprint(y)
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v rule %q: got %s, want %s", tc.raw, tc.rule, got, tc.want)
		}
	}
}

func TestHoldoutByID(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		frac   float64
	}{{"r", 0.1}, {"train-", 0.1}, {"line-", 0.25}, {"digit3-", 0.5}, {"syn-", 0.02}} {
		n := 0
		const total = 20000
		for i := 0; i < total; i++ {
			id := fmt.Sprintf("%s%d", tc.prefix, i)
			a := HoldoutByID(id, tc.frac)
			if a != HoldoutByID(id, tc.frac) {
				t.Fatal("not deterministic")
			}
			if a && !HoldoutByID(id, tc.frac+0.1) {
				t.Fatalf("%s held out at %v but not at a larger fraction", id, tc.frac)
			}
			if a {
				n++
			}
		}
		// Within 5 standard deviations of the binomial mean.
		mean := tc.frac * total
		sd := 5 * math.Sqrt(total*tc.frac*(1-tc.frac))
		if float64(n) < mean-sd || float64(n) > mean+sd {
			t.Errorf("%s*: %d of %d held out at %v", tc.prefix, n, total, tc.frac)
		}
	}
	for _, f := range []float64{0, -1} {
		if HoldoutByID("x", f) {
			t.Errorf("held out at fraction %v", f)
		}
	}
	if !HoldoutByID("x", 1) {
		t.Error("not held out at fraction 1")
	}
	// Pinned values: the choice must never change between releases, as
	// holders decide it independently.
	var got []string
	for i := 0; i < 40; i++ {
		if id := fmt.Sprintf("row-%d", i); HoldoutByID(id, 0.2) {
			got = append(got, id)
		}
	}
	if want := "[row-5 row-11 row-13 row-15 row-19 row-29 row-30 row-32 row-33 row-35 row-37]"; fmt.Sprint(got) != want {
		t.Errorf("held out at 0.2: %v, want %s", got, want)
	}
}
