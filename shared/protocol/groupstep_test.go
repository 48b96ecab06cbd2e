package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// groupStepsScript drops client 2 for rounds 8-13 (a returning client,
// rounds without its group) and client 4 during the direction phase of
// round 20 (a holder missing after the solves).
func groupStepsScript(t *testing.T, f *fed) {
	dropped4 := false
	f.mem.Hook = func() {
		switch r := f.coord.Round(); {
		case r >= 8 && r < 14 && f.mem.Connected(2):
			f.mem.Drop(2)
		case r >= 14 && !f.mem.Connected(2):
			if err := f.mem.Join(2); err != nil {
				t.Fatal(err)
			}
		case r == 20 && !dropped4 && f.coord.Phase() == PhaseDirection:
			dropped4 = true
			f.mem.Drop(4)
		case r >= 24 && !f.mem.Connected(4):
			if err := f.mem.Join(4); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestGroupStepsDualNeverDecreases: under group steps (three sample
// groups, both losses, partial participation, holders leaving and
// returning) the dual never falls, the groups' weights reach the
// participants, and the run ends near the centralized optimum.
func TestGroupStepsDualNeverDecreases(t *testing.T) {
	d := testData(300, 10, 2)
	const lambda = 1e-2
	for _, lossName := range []string{"hinge", "logistic"} {
		for _, fraction := range []float64{1, 0.5} {
			t.Run(fmt.Sprintf("%s fraction %v", lossName, fraction), func(t *testing.T) {
				cfg := Config{Lambda: lambda, Loss: lossName, Inner: 25, Fraction: fraction, Rounds: 150, Seed: 11,
					BiasFeature: d.M() - 1, BiasValue: 1}
				f := newFed(t, gridBlocks(d, 3, 2), cfg)
				groupSteps := 0
				f.mem.Observe = func(toServer bool, _ int, m *Message) {
					if !toServer && m.Kind == KindTrial && len(m.GroupScale) > 0 {
						groupSteps++
					}
				}
				groupStepsScript(t, f)
				h := f.run(t)
				checkDualNeverFalls(t, h, "")
				if groupSteps == 0 {
					t.Fatal("no round took group steps")
				}
				last := h[len(h)-1]
				if last.Partial || !(last.Gap >= 0 && last.Gap < 1e-3*last.Primal) {
					t.Fatalf("last round: P=%v D=%v gap %v (partial %v)", last.Primal, last.Dual, last.Gap, last.Partial)
				}
			})
		}
	}
}

// TestGroupStepsEncryptedMatchesPlaintext: group steps, with the groups'
// shared directions priced apart, give the same run, bit for bit, under
// BGV as in plaintext, with a holder away for a while, with every holder
// solving its groups and with one solver a group (SolveOnce).
func TestGroupStepsEncryptedMatchesPlaintext(t *testing.T) {
	d := testData(240, 9, 21)
	for _, tc := range []struct {
		lossName string
		once     bool
	}{{"hinge", false}, {"logistic", false}, {"hinge", true}, {"logistic", true}} {
		lossName := tc.lossName
		t.Run(fmt.Sprintf("%s/solve-once=%v", lossName, tc.once), func(t *testing.T) {
			cfg := Config{Lambda: 1e-2, Loss: lossName, Inner: 12, Fraction: 0.5, Rounds: 25, Seed: 5,
				SharedDirections: 3, EveryHolderSolves: Off(!tc.once), BiasFeature: d.M() - 1, BiasValue: 1}
			var hist [2][]RoundMetrics
			for i, scheme := range []seal.Scheme{seal.Plaintext{Len: 64}, bgvScheme(t)} {
				f := newFedScheme(t, gridBlocks(d, 2, 3), cfg, scheme)
				groupStepsScript(t, f)
				hist[i] = f.run(t)
			}
			if len(hist[0]) != len(hist[1]) {
				t.Fatalf("%d rounds in plaintext, %d encrypted", len(hist[0]), len(hist[1]))
			}
			for r := range hist[0] {
				p, e := hist[0][r], hist[1][r]
				if !same(p.Primal, e.Primal) || !same(p.Dual, e.Dual) || p.Gamma != e.Gamma || p.Updated != e.Updated {
					t.Fatalf("round %d: plaintext P=%v D=%v gamma=%v, encrypted P=%v D=%v gamma=%v",
						p.Round, p.Primal, p.Dual, p.Gamma, e.Primal, e.Dual, e.Gamma)
				}
			}
		})
	}
}

// TestGroupStepsDefault: group steps are on in the defaults and in the
// zero value, for the block step only; off, they are written so and read
// back so.
func TestGroupStepsDefault(t *testing.T) {
	if !Defaults().GroupSteps() || !(Config{}).GroupSteps() {
		t.Fatal("group steps off by default")
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want bool
	}{
		{"block", func(*Config) {}, true},
		{"paper step", func(c *Config) { c.Step = StepPaper }, false},
		{"fedavg", func(c *Config) { c.Algo, c.StepA, c.StepB = "fedavg", 0.1, 1 }, false},
	} {
		cfg := Defaults()
		cfg.Clients = 4
		c.edit(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.GroupSteps() != c.want {
			t.Errorf("%s: group steps %v after Validate, want %v", c.name, cfg.GroupSteps(), c.want)
		}
	}
	off := Defaults()
	off.NoGroupSteps = true
	b, err := json.Marshal(off)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"group_steps":false`) {
		t.Errorf("group steps off is not written: %s", b)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.GroupSteps() {
		t.Error("group steps off read back as on")
	}
}

// TestGroupBuckets: up to maxGroupWeights updating groups each get their
// own weight; beyond, the buckets are filled evenly, the same for the same
// round, dealt anew the next round.
func TestGroupBuckets(t *testing.T) {
	small := []int{3, 5, 8}
	if b, n := groupBuckets(7, small); n != 3 || b[0] != 0 || b[1] != 1 || b[2] != 2 {
		t.Fatalf("3 groups: buckets %v of %d, want each its own", b, n)
	}
	many := make([]int, 125)
	for j := range many {
		many[j] = 2 * j
	}
	b1, n := groupBuckets(7, many)
	if n != maxGroupWeights {
		t.Fatalf("125 groups: %d buckets, want %d", n, maxGroupWeights)
	}
	size := make([]int, n)
	for _, b := range b1 {
		size[b]++
	}
	for b, s := range size {
		if s < 125/n || s > 125/n+1 {
			t.Errorf("bucket %d holds %d groups, want %d or %d", b, s, 125/n, 125/n+1)
		}
	}
	again, _ := groupBuckets(7, many)
	next, _ := groupBuckets(8, many)
	same, moved := true, 0
	for j := range b1 {
		same = same && again[j] == b1[j]
		if next[j] != b1[j] {
			moved++
		}
	}
	if !same {
		t.Error("the same round deals the buckets differently")
	}
	if moved < 125/2 {
		t.Errorf("the next round moves only %d of 125 groups to another bucket", moved)
	}
}

// couplingData returns k sample groups of n rows each over k*m features
// (horizontal:k blocks). apart: group g's rows are non-zero only on its
// own m features, so the groups' directions are orthogonal; otherwise
// every group holds copies of the same rows on the first m features, so
// their first directions coincide.
func couplingData(k, n, m int, apart bool) []partition.Block {
	base := testData(n, m, 5)
	out := make([]partition.Block, k)
	for g := range out {
		b := partition.Block{NumFeatures: k * m, X: dataset.NewDense(n, k*m)}
		for j := range k * m {
			b.Features = append(b.Features, j)
		}
		off := 0
		if apart {
			off = g * m
		}
		for i := range n {
			b.IDs = append(b.IDs, fmt.Sprintf("g%d-%d", g, i))
			b.Y = append(b.Y, base.Y[i])
			b.Heldout = append(b.Heldout, false)
			for j := range m {
				b.X.Data[i*k*m+off+j] = base.X.At(i, j)
			}
		}
		out[g] = b
	}
	return out
}

// TestSigmaFollowsTheGroupsCoupling: under group steps sigma' follows how
// much the groups' directions add up. Groups whose rows share no feature
// move orthogonally, and sigma' falls from K towards 1 (every group may
// take nearly its own full step); groups holding the same rows move
// alike, and sigma' stays at K, CoCoA+'s safe value.
func TestSigmaFollowsTheGroupsCoupling(t *testing.T) {
	const k = 4
	for _, tc := range []struct {
		name  string
		apart bool
		check func(sigma float64) bool
		want  string
	}{
		{"orthogonal groups", true, func(s float64) bool { return s < 1.5 }, "below 1.5"},
		{"identical groups", false, func(s float64) bool { return s > 0.95*k }, fmt.Sprintf("near %d", k)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Lambda: 1e-2, Loss: "hinge", Inner: 40, Rounds: 12, Seed: 3, SharedDirections: NoDirections}
			f := newFed(t, couplingData(k, 40, 6, tc.apart), cfg)
			h := f.run(t)
			checkDualNeverFalls(t, h, "")
			if s := f.coord.sigma; !tc.check(s) {
				t.Fatalf("sigma' after %d rounds = %v, want %s", len(h)-1, s, tc.want)
			}
		})
	}
}

// TestAdaptStepLearnsFromACutRound: under group steps a round whose line
// search the dual values' box cut (which says nothing about the
// curvature) still lets sigma' fall to the coupling the server measured:
// with 125 image groups every round is cut, and a sigma' that learned only
// from uncut rounds stayed at round 1's value. An uncut round learns from
// its step as before.
func TestAdaptStepLearnsFromACutRound(t *testing.T) {
	c := &Coordinator{updating: make([]int, 125), roundSigma: 62, sigma: 62, gammaMax: 1}
	c.flow.scale = map[int][2]float64{0: {1, 0}}
	c.flow.coupling = 2
	c.adaptStep(1) // no gain along the first directions: says nothing
	if c.sigma != 62 {
		t.Fatalf("sigma' = %v after a round without a gain along the groups' directions, want 62", c.sigma)
	}
	c.flow.cut = true
	c.adaptStep(1)
	if want := math.Sqrt(62 * 2.0); math.Abs(c.sigma-want) > 1e-12 {
		t.Fatalf("sigma' = %v after a cut round with coupling 2, want %v", c.sigma, want)
	}
	c.roundSigma, c.flow.coupling = c.sigma, 40
	c.adaptStep(1)
	if c.sigma != c.roundSigma {
		t.Fatalf("sigma' = %v after a cut round with coupling 40 > sigma' %v: a cut round must not raise it", c.sigma, c.roundSigma)
	}
	c.flow.cut, c.flow.stepMean = false, 0.25 // uncut, the model's step a quarter: the directions were twice too bold
	c.adaptStep(0.25)
	if want := 2 * c.roundSigma; math.Abs(c.sigma-want) > 1e-12 {
		t.Fatalf("sigma' = %v after an uncut step of 0.25, want %v", c.sigma, want)
	}
}
