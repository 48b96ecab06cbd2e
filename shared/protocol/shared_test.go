package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/gram"
	"github.com/hyfed/hyfed/shared/loss"
)

// TestSharedDirectionsConfig: on by default (the zero value too) for the
// block step only, off when set to none, written as 0 when off and read
// back so, and refused out of range.
func TestSharedDirectionsConfig(t *testing.T) {
	if got := Defaults().SharedDirections; got != gram.SharedDirections {
		t.Fatalf("Defaults(): %d shared directions, want %d", got, gram.SharedDirections)
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want int
		err  string
	}{
		{"block", func(*Config) {}, gram.SharedDirections, ""},
		{"the zero value", func(c *Config) { c.SharedDirections = 0 }, gram.SharedDirections, ""},
		{"block, none", func(c *Config) { c.SharedDirections = NoDirections }, 0, ""},
		{"paper step", func(c *Config) { c.Step = StepPaper }, 0, ""},
		{"fedavg", func(c *Config) { c.Algo, c.StepA, c.StepB = "fedavg", 0.1, 1 }, 0, ""},
		{"below none", func(c *Config) { c.SharedDirections = -2 }, 0, "shared directions -2"},
		{"beyond the picks", func(c *Config) { c.SharedDirections = MaxBlockPicks + 1 }, 0, "shared directions 513"},
	} {
		cfg := Defaults()
		cfg.Clients = 4
		c.edit(&cfg)
		err := cfg.Validate()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one naming %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := cfg.SharedDirections.Count(); got != c.want {
			t.Errorf("%s: %d shared directions after Validate, want %d", c.name, got, c.want)
		}
	}
	off := Defaults()
	off.SharedDirections = NoDirections
	b, err := json.Marshal(off)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"shared_directions":0`) {
		t.Errorf("no shared directions is not written as 0: %s", b)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.SharedDirections != NoDirections {
		t.Errorf("0 shared directions read back as %d", back.SharedDirections)
	}
}

// TestSharedDirectionsRun: with eight sample groups whose rows share their
// mean (features in [0, 1) and a bias), every group's leading directions
// reach the holders priced at the number of updating groups, the dual
// never falls, the run ends near the optimum, and the rounds differ from
// those without the split once sigma' has fallen below that number.
func TestSharedDirectionsRun(t *testing.T) {
	d := testData(400, 12, 4)
	for _, lossName := range []string{"hinge", "logistic"} {
		t.Run(lossName, func(t *testing.T) {
			var hist [2][]RoundMetrics
			for i, shared := range []int{0, 4} {
				cfg := Config{Lambda: 1e-2, Loss: lossName, Inner: 12, Fraction: 0.75, Rounds: 120, Seed: 2,
					SharedDirections: directionsOf(shared), BiasFeature: d.M() - 1, BiasValue: 1}
				f := newFed(t, gridBlocks(d, 8, 1), cfg)
				split := 0
				f.mem.Observe = func(toServer bool, _ int, m *Message) {
					if toServer || m.Kind != KindGramSum {
						return
					}
					if (m.SigmaShared != 0) != (shared > 0) || m.SigmaShared != 0 && m.SigmaShared < m.Sigma {
						t.Errorf("gram-sum with sigma %v, shared %v (shared directions %d)", m.Sigma, m.SigmaShared, shared)
					}
					if m.SigmaShared > m.Sigma {
						split++
					}
				}
				hist[i] = f.run(t)
				if shared > 0 && split == 0 {
					t.Fatal("sigma' never fell below the number of updating groups: the split never applied")
				}
				checkDualNeverFalls(t, hist[i], fmt.Sprintf("shared %d, ", shared))
				last := hist[i][len(hist[i])-1]
				if !(last.Gap >= 0 && last.Gap < 1e-2*last.Primal) {
					t.Fatalf("shared %d, last round: P=%v D=%v gap %v", shared, last.Primal, last.Dual, last.Gap)
				}
			}
			differ := false
			for r := range min(len(hist[0]), len(hist[1])) {
				differ = differ || !same(hist[0][r].Dual, hist[1][r].Dual)
			}
			if !differ {
				t.Fatal("the same rounds with and without shared directions")
			}
		})
	}
}

// TestGramSumSharedScale: a gram-sum for a federation with shared
// directions must carry their scale, at least sigma'; without it the
// participant refuses the message and says why.
func TestGramSumSharedScale(t *testing.T) {
	for _, c := range []struct {
		sigma, shared float64
		err           string
	}{
		{2, 0, "shared directions' scale 0 below sigma 2"},
		{3, 2, "shared directions' scale 2 below sigma 3"},
		{2, math.NaN(), "below sigma"},
	} {
		p := &Participant{setup: &Setup{Config: Config{SharedDirections: 4}}}
		p.loss, _ = loss.Parse("hinge")
		_, err := p.onGramSum(Message{Kind: KindGramSum, Sigma: c.sigma, SigmaShared: c.shared})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("sigma %v, shared %v: error %v, want one naming %q", c.sigma, c.shared, err, c.err)
		}
	}
}
