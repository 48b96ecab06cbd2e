package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

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
				cfg := Config{Lambda: lambda, Loss: lossName, Inner: 25, Fraction: fraction, Rounds: 150, Seed: 11, GroupSteps: true,
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
			cfg := Config{Lambda: 1e-2, Loss: lossName, Inner: 12, Fraction: 0.5, Rounds: 25, Seed: 5, GroupSteps: true,
				SharedDirections: 3, SolveOnce: tc.once, BiasFeature: d.M() - 1, BiasValue: 1}
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

// TestGroupQPStaysFeasibleAndGains: the weights stay in each pair's hull
// and never do worse by the model than the start.
func TestGroupQPStaysFeasibleAndGains(t *testing.T) {
	a := []float64{1, -0.5, 2, 1}
	g := []float64{
		2, 0.5, 1, 0,
		0.5, 1, 0, 0.2,
		1, 0, 1, 0.1,
		0, 0.2, 0.1, 0.5,
	}
	hi := []float64{1.5, 3, 0.4, 2}
	model := func(x []float64) float64 {
		v := 0.0
		for i := range x {
			v += a[i] * x[i]
			for j := range x {
				v -= x[i] * g[i*4+j] * x[j] / 2
			}
		}
		return v
	}
	x := []float64{0.2, 0.2, 0, 0}
	// (the first two weights are one)
	start := model(x)
	groupQP(x, a, g, hi, nil)
	if model(x) < start {
		t.Fatalf("model fell from %v to %v", start, model(x))
	}
	if x[0] != x[1] {
		t.Fatalf("the groups' own directions weighed %v and %v, not alike", x[0], x[1])
	}
	for j := range 2 {
		xa, xb, la, lb := x[j], x[j+2], hi[j], hi[j+2]
		if xa < 0 || xb < 0 || xb > lb*xa*(1+1e-12) || xa+xb*math.Max(0, la-1)/lb > la*(1+1e-12) {
			t.Fatalf("pair %d: %v, %v outside the triangle of limits %v, %v", j, xa, xb, la, lb)
		}
		if l := groupStepLimit(xa, xb, la, lb); l < 1-1e-12 {
			t.Fatalf("pair %d: step limit %v below 1", j, l)
		}
	}
}

// TestGroupQPKeepsTheBias: with the bias shares given, the centered
// weights move mass between the groups only (their bias share sums to 0),
// and the model still gains.
func TestGroupQPKeepsTheBias(t *testing.T) {
	const k = 3
	a := []float64{1, 1, 1, 0.5, 0.8, -0.2}
	g := make([]float64, 4*k*k)
	for i := range 2 * k {
		g[i*2*k+i] = 1
		if i+1 < 2*k {
			g[i*2*k+i+1], g[(i+1)*2*k+i] = 0.3, 0.3
		}
	}
	hi := []float64{2, 2, 2, 3, 3, 3}
	neutral := []float64{1, -2, 0.5}
	x := []float64{0.5, 0.5, 0.5, 0, 0, 0}
	groupQP(x, a, g, hi, neutral)
	s := 0.0
	for j := range k {
		s += x[k+j] * neutral[j]
	}
	if math.Abs(s) > 1e-12 {
		t.Fatalf("centered weights %v move the bias by %v", x[k:], s)
	}
	if x[k] == 0 && x[k+1] == 0 && x[k+2] == 0 {
		t.Fatalf("no mass moved: %v", x)
	}
}

// TestGroupStepsDefault: group steps are on in the defaults and for the
// block step only; a configuration without the field (a checkpoint from
// before they were the default) reads as off and keeps the rule it ran,
// and one with them off says so when written.
func TestGroupStepsDefault(t *testing.T) {
	if !Defaults().GroupSteps {
		t.Fatal("Defaults(): group steps off")
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want bool
	}{
		{"block", func(*Config) {}, true},
		{"hyfed step", func(c *Config) { c.Step = StepHyFed }, false},
		{"paper step", func(c *Config) { c.Step = StepPaper }, false},
		{"fedavg", func(c *Config) { c.Algo, c.StepA, c.StepB = "fedavg", 0.1, 1 }, false},
	} {
		cfg := Defaults()
		cfg.Clients = 4
		c.edit(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.GroupSteps != c.want {
			t.Errorf("%s: group steps %v after Validate, want %v", c.name, cfg.GroupSteps, c.want)
		}
	}
	var old Config
	if err := json.Unmarshal([]byte(`{"loss":"hinge","lambda":0.001,"step":"block","rounds":5}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.GroupSteps {
		t.Error("a configuration without group_steps reads as on")
	}
	off := Defaults()
	off.GroupSteps = false
	b, err := json.Marshal(off)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"group_steps":false`) {
		t.Errorf("group steps off is not written: %s", b)
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
