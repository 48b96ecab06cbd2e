package averaging

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
)

// The hand-computed examples share one block of 2 samples x 2 features,
//
//	x_0 = ( 1, 2), y_0 = +1
//	x_1 = (-1, 1), y_1 = -1
//
// lambda = 0.1 and, unless a case says otherwise, a = 1, b = 0, so the
// first step has eta_1 = 1/(0+sqrt(1)) = 1 and the second eta_2 = 1/sqrt(2).
// One step: w <- w - eta (l'(x.w) x + lambda w + 2 mu (w - anchor)).
var (
	handY = []float64{1, -1}
	s2    = math.Sqrt2
	// sigmoid(0.5), the logistic derivative in the second logistic step.
	sig05 = 1 / (1 + math.Exp(-0.5))
)

func handDense() *dataset.Matrix {
	return &dataset.Matrix{Rows: 2, Cols: 2, Data: []float64{1, 2, -1, 1}}
}

func handSparse() *dataset.Matrix {
	m := dataset.NewSparseBuilder(2)
	m.AppendRow([]int32{0, 1}, []float64{1, 2})
	m.AppendRow([]int32{0, 1}, []float64{-1, 1})
	return m
}

func TestLocalSGDHandComputed(t *testing.T) {
	cases := []struct {
		name   string
		sgd    LocalSGD
		w0     []float64
		anchor []float64
		picks  []int
		t0     int
		want   []float64
		wantT  int
	}{
		{
			// Step 1 (eta 1), sample 0: z = 0, y z = 0 < 1 so l' = -y = -1;
			// g = -(1, 2) + 0.1 (0, 0) = (-1, -2); w = (1, 2).
			// Step 2 (eta 1/sqrt2), sample 1: z = -1 + 2 = 1, y z = -1 < 1
			// so l' = -y = +1; g = (-1, 1) + 0.1 (1, 2) = (-0.9, 1.2);
			// w = (1 + 0.9/sqrt2, 2 - 1.2/sqrt2) = (1.636396, 1.151472).
			name: "hinge two steps",
			sgd:  LocalSGD{Loss: loss.Hinge{}, Lambda: 0.1, A: 1},
			w0:   []float64{0, 0}, picks: []int{0, 1},
			want:  []float64{1 + 0.9/s2, 2 - 1.2/s2},
			wantT: 2,
		},
		{
			// Step 1, sample 0: z = 0, l' = -y sigmoid(-y z) = -0.5;
			// g = -0.5 (1, 2) = (-0.5, -1); w = (0.5, 1).
			// Step 2, sample 1: z = -0.5 + 1 = 0.5, l' = -y sigmoid(-y z)
			// = sigmoid(0.5) = 0.622459; g = 0.622459 (-1, 1) + 0.1 (0.5, 1)
			// = (-0.572459, 0.722459); w = (0.5 + 0.572459/sqrt2,
			// 1 - 0.722459/sqrt2) = (0.904790, 0.489144).
			name: "logistic two steps",
			sgd:  LocalSGD{Loss: loss.Logistic{}, Lambda: 0.1, A: 1},
			w0:   []float64{0, 0}, picks: []int{0, 1},
			want:  []float64{0.5 + (sig05-0.05)/s2, 1 - (sig05+0.1)/s2},
			wantT: 2,
		},
		{
			// HyFEM-Prox, mu = 0.5, anchor = w0 = (0.5, 0).
			// Step 1, sample 0: z = 0.5 < 1 so l' = -1; g = -(1, 2) +
			// 0.1 (0.5, 0) + 2*0.5 (0, 0) = (-0.95, -2); w = (1.45, 2).
			// Step 2, sample 1: z = -1.45 + 2 = 0.55, y z = -0.55 < 1 so
			// l' = +1; g = (-1, 1) + 0.1 (1.45, 2) + 1.0 (0.95, 2)
			// = (0.095, 3.2); w = (1.45 - 0.095/sqrt2, 2 - 3.2/sqrt2)
			// = (1.382825, -0.262742).
			name: "hinge prox two steps",
			sgd:  LocalSGD{Loss: loss.Hinge{}, Lambda: 0.1, A: 1, Mu: 0.5},
			w0:   []float64{0.5, 0}, anchor: []float64{0.5, 0}, picks: []int{0, 1},
			want:  []float64{1.45 - 0.095/s2, 2 - 3.2/s2},
			wantT: 2,
		},
		{
			// Logistic prox, mu = 1, anchor (1, -1), w0 = 0, one step on
			// sample 1: z = 0, l' = -y sigmoid(0) = 0.5; g = 0.5 (-1, 1) +
			// 0 + 2 (0 - 1, 0 + 1) = (-2.5, 2.5); w = (2.5, -2.5).
			name: "logistic prox one step",
			sgd:  LocalSGD{Loss: loss.Logistic{}, Lambda: 0.1, A: 1, Mu: 1},
			w0:   []float64{0, 0}, anchor: []float64{1, -1}, picks: []int{1},
			want:  []float64{2.5, -2.5},
			wantT: 1,
		},
		{
			// Beyond the margin the hinge is flat: w0 = (2, 0), sample 0:
			// z = 2, y z = 2 >= 1 so l' = 0; only the regularizer acts:
			// w = (2, 0) - 1 * 0.1 (2, 0) = (1.8, 0).
			name: "hinge beyond the margin",
			sgd:  LocalSGD{Loss: loss.Hinge{}, Lambda: 0.1, A: 1},
			w0:   []float64{2, 0}, picks: []int{0},
			want:  []float64{1.8, 0},
			wantT: 1,
		},
		{
			// The step counts the client's steps over the run: 3 before,
			// so this is t = 4 with a = 0.5, b = 1: eta = 0.5/(1+2) = 1/6.
			// Sample 0 from 0, lambda 0: w = (1, 2)/6.
			name: "step size continues the count",
			sgd:  LocalSGD{Loss: loss.Hinge{}, A: 0.5, B: 1},
			w0:   []float64{0, 0}, picks: []int{0}, t0: 3,
			want:  []float64{1.0 / 6, 2.0 / 6},
			wantT: 4,
		},
		{
			// The same sample twice, hinge, a = 1, b = 0, lambda 0: step 1
			// gives w = (1, 2) as above; step 2: z = 1 + 4 = 5 >= 1, no
			// move.
			name: "hinge same sample twice",
			sgd:  LocalSGD{Loss: loss.Hinge{}, A: 1},
			w0:   []float64{0, 0}, picks: []int{0, 0},
			want:  []float64{1, 2},
			wantT: 2,
		},
		{
			name:  "no picks",
			sgd:   LocalSGD{Loss: loss.Hinge{}, Lambda: 0.1, A: 1},
			w0:    []float64{3, 4},
			want:  []float64{3, 4},
			wantT: 0,
		},
	}
	for _, tc := range cases {
		for _, storage := range []struct {
			name string
			x    *dataset.Matrix
		}{{"dense", handDense()}, {"sparse", handSparse()}} {
			t.Run(tc.name+"/"+storage.name, func(t *testing.T) {
				w := slices.Clone(tc.w0)
				anchor := slices.Clone(tc.anchor)
				gotT, err := tc.sgd.Run(storage.x, handY, tc.picks, w, anchor, tc.t0)
				if err != nil {
					t.Fatal(err)
				}
				if gotT != tc.wantT {
					t.Errorf("step count %d, want %d", gotT, tc.wantT)
				}
				for j := range w {
					if math.Abs(w[j]-tc.want[j]) > 1e-12 {
						t.Errorf("w = %v, want %v", w, tc.want)
						break
					}
				}
				if !slices.Equal(anchor, tc.anchor) {
					t.Errorf("anchor changed to %v", anchor)
				}
			})
		}
	}
}

func TestStepSize(t *testing.T) {
	cases := []struct {
		a, b float64
		t    int
		want float64
	}{
		{1, 0, 1, 1},
		{1, 0, 4, 0.5},
		{0.5, 1, 9, 0.125},
		{2, 1e-5, 1, 2 / (1 + 1e-5)}, // t starts at 1: no a/b blow-up
	}
	for _, c := range cases {
		if got := (LocalSGD{A: c.a, B: c.b}).StepSize(c.t); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("a=%v b=%v t=%d: step %v, want %v", c.a, c.b, c.t, got, c.want)
		}
	}
}

func TestLossDerivativeLogisticExtremes(t *testing.T) {
	d, err := lossDerivative(loss.Logistic{})
	if err != nil {
		t.Fatal(err)
	}
	// Far on the right side the derivative vanishes, far on the wrong
	// side it is -y; neither overflows.
	for _, c := range []struct{ z, y, want float64 }{{800, 1, 0}, {-800, 1, -1}, {800, -1, 1}, {-800, -1, 0}} {
		if got := d(c.z, c.y); math.Abs(got-c.want) > 1e-300 || math.IsNaN(got) {
			t.Errorf("l'(%v, y=%v) = %v, want %v", c.z, c.y, got, c.want)
		}
	}
}

func TestLocalSGDErrors(t *testing.T) {
	ok := LocalSGD{Loss: loss.Hinge{}, A: 1}
	cases := []struct {
		name   string
		sgd    LocalSGD
		w      []float64
		anchor []float64
		picks  []int
		want   string
	}{
		{"no loss", LocalSGD{A: 1}, []float64{0, 0}, nil, []int{0}, "no loss"},
		{"weights", ok, []float64{0, 0, 0}, nil, []int{0}, "for 3 weights"},
		{"anchor", LocalSGD{Loss: loss.Hinge{}, A: 1, Mu: 1}, []float64{0, 0}, []float64{0}, []int{0}, "anchor of 1 values"},
		{"pick", ok, []float64{0, 0}, nil, []int{2}, "pick 2 outside"},
		// eta = 1e308: the second weight becomes 2e308 = +Inf.
		{"diverged", LocalSGD{Loss: loss.Hinge{}, A: 1e308}, []float64{0, 0}, nil, []int{0}, "diverged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.sgd.Run(handDense(), handY, c.picks, c.w, c.anchor, 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if c.name == "diverged" && !errors.Is(err, ErrDiverged) {
				t.Errorf("error %v is not ErrDiverged", err)
			}
		})
	}
}

func TestPicks(t *testing.T) {
	train := []int{0, 2, 5}
	a := Picks(roundRNG(7, streamPicks, 3, 1), train, 50)
	b := Picks(roundRNG(7, streamPicks, 3, 1), train, 50)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, round and client gave %v and %v", a, b)
	}
	seen := map[int]bool{}
	for _, p := range a {
		if !slices.Contains(train, p) {
			t.Fatalf("pick %d is not a training row of %v", p, train)
		}
		seen[p] = true
	}
	if len(seen) != len(train) {
		t.Errorf("50 picks from 3 rows hit only %v", seen)
	}
	// Another client, round or purpose draws another stream.
	for _, other := range [][]int{
		Picks(roundRNG(7, streamPicks, 3, 2), train, 50),
		Picks(roundRNG(7, streamPicks, 4, 1), train, 50),
		Picks(roundRNG(7, streamPicks+1, 3, 1), train, 50),
		Picks(roundRNG(8, streamPicks, 3, 1), train, 50),
	} {
		if slices.Equal(a, other) {
			t.Errorf("two streams drew the same 50 picks %v", a)
		}
	}
	if p := Picks(roundRNG(7, streamPicks, 3, 1), nil, 5); p != nil {
		t.Errorf("picks from no training rows: %v", p)
	}
}
