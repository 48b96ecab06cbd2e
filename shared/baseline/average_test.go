package baseline

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// schemeAndKeys returns a scheme and n key objects of it, all from one seed.
// The BGV scheme is built once for the package's tests.
func schemeAndKeys(t *testing.T, name string, n int) (seal.Scheme, []seal.Key) {
	t.Helper()
	s, err := cachedScheme(name)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]seal.Key, n)
	for i := range keys {
		if keys[i], err = seal.NewKeyFor(s, secret.FromSeed(5).Derive(seal.KeyPurpose)); err != nil {
			t.Fatal(err)
		}
	}
	return s, keys
}

var (
	sealedBGVOnce sync.Once
	sealedBGV     seal.Scheme
	sealedBGVErr  error
)

func cachedScheme(name string) (seal.Scheme, error) {
	if name != "bgv" {
		return seal.ByName(name)
	}
	sealedBGVOnce.Do(func() { sealedBGV, sealedBGVErr = seal.ByName("bgv") })
	return sealedBGV, sealedBGVErr
}

// Three participants over 6 features:
//
//	A holds 0, 1, 2 with weights 1, 2, 3
//	B holds    1, 2, 3 with weights    4, 5, 6
//	C holds       2,    4 with weights    7,    8
//
// feature 5 has no holder and keeps its value 9. By hand:
// w0 = 1, w1 = (2+4)/2 = 3, w2 = (3+5+7)/3 = 5, w3 = 6, w4 = 8, w5 = 9.
// With B inactive (not a share): w1 = 2, w2 = (3+7)/2 = 5, w3 keeps -1.
func TestAverageHandComputed(t *testing.T) {
	a := Share{Features: []int{0, 1, 2}, Weights: []float64{1, 2, 3}}
	b := Share{Features: []int{1, 2, 3}, Weights: []float64{4, 5, 6}}
	c := Share{Features: []int{2, 4}, Weights: []float64{7, 8}}
	cases := []struct {
		name   string
		shares []Share
		want   []float64
	}{
		{"all three", []Share{a, b, c}, []float64{1, 3, 5, 6, 8, 9}},
		{"B inactive", []Share{a, c}, []float64{1, 2, 5, -1, 8, 9}},
		{"nobody", nil, []float64{-1, -1, -1, -1, -1, 9}},
	}
	for _, scheme := range []string{"plaintext", "bgv"} {
		for _, tc := range cases {
			t.Run(scheme+"/"+tc.name, func(t *testing.T) {
				s, keys := schemeAndKeys(t, scheme, len(tc.shares))
				shares := slices.Clone(tc.shares)
				for i := range shares {
					shares[i].Key = keys[i]
				}
				global := []float64{-1, -1, -1, -1, -1, 9}
				tr, err := Average(s, shares, global)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(global, tc.want) {
					t.Errorf("global %v, want %v", global, tc.want)
				}
				// Each share sends one chunk and gets that chunk back (a
				// sum is no longer a fresh BGV ciphertext, which travels
				// as c0 and a seed: it takes twice the bytes).
				if len(shares) > 0 && (tr.ToServer <= 0 || tr.FromServer < tr.ToServer || scheme == "plaintext" && tr.FromServer != tr.ToServer) {
					t.Errorf("traffic %+v", tr)
				}
			})
		}
	}
}

// Weights off the fixed-point grid: the average is that of the quantized
// weights (within 2^-29 of the exact one), the same bit for bit under BGV
// and the plaintext scheme.
func TestAverageQuantizedSameUnderBGV(t *testing.T) {
	shares := []Share{
		{Features: []int{0, 1, 2}, Weights: []float64{1.0 / 3, -math.Pi, 1e-9}},
		{Features: []int{1, 2, 3}, Weights: []float64{math.E, 2.0 / 7, -1234.56789}},
		{Features: []int{0, 2, 3}, Weights: []float64{-0.1, 0.3, 32000.123456789}},
	}
	exact := []float64{
		(1.0/3 - 0.1) / 2,
		(-math.Pi + math.E) / 2,
		(1e-9 + 2.0/7 + 0.3) / 3,
		(-1234.56789 + 32000.123456789) / 2,
	}
	run := func(scheme string) []float64 {
		s, keys := schemeAndKeys(t, scheme, len(shares))
		sh := slices.Clone(shares)
		for i := range sh {
			sh[i].Key = keys[i]
		}
		global := make([]float64, 4)
		if _, err := Average(s, sh, global); err != nil {
			t.Fatal(err)
		}
		return global
	}
	plain, enc := run("plaintext"), run("bgv")
	if !slices.Equal(plain, enc) {
		t.Fatalf("bgv %v, plaintext %v", enc, plain)
	}
	for f := range exact {
		if d := math.Abs(plain[f] - exact[f]); d > math.Ldexp(1, -seal.FracBits-1) {
			t.Errorf("feature %d: %v is %g from the exact average %v", f, plain[f], d, exact[f])
		}
	}
}

func TestAverageErrors(t *testing.T) {
	s, keys := schemeAndKeys(t, "plaintext", 8)
	many := make([]Share, 5)
	for i := range many {
		// 5 holders of 30000 sum to 150000 > 2^17: BGV would wrap.
		many[i] = Share{Key: keys[i], Features: []int{0}, Weights: []float64{30000}}
	}
	cases := []struct {
		name     string
		shares   []Share
		want     string
		diverged bool
	}{
		{"shape", []Share{{Key: keys[0], Features: []int{0, 1}, Weights: []float64{1}}}, "2 features but 1 weights", false},
		{"feature", []Share{{Key: keys[0], Features: []int{7}, Weights: []float64{1}}}, "feature 7 outside 0..3", false},
		{"one too large", []Share{{Key: keys[0], Features: []int{1}, Weights: []float64{40000}}}, "beyond the sealable range", true},
		{"sum too large", many, "beyond the sealable range", true},
		{"not finite", []Share{{Key: keys[0], Features: []int{1}, Weights: []float64{math.NaN()}}}, "beyond the sealable range", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Average(s, c.shares, make([]float64, 4))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if errors.Is(err, ErrDiverged) != c.diverged {
				t.Errorf("errors.Is(%v, ErrDiverged) = %v", err, !c.diverged)
			}
		})
	}
}
