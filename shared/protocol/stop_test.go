package protocol

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// certify recomputes the stopping rule from a history: for each round, the
// relative bound (P_best - D_max) / D_max over the complete rounds so far.
func certify(h []RoundMetrics) []float64 {
	out := make([]float64, len(h))
	pb, dm := math.Inf(1), math.Inf(-1)
	for i, r := range h {
		if !r.Partial && !math.IsNaN(r.Primal) {
			pb = min(pb, r.Primal)
		}
		if !r.Partial && !math.IsNaN(r.Dual) {
			dm = max(dm, r.Dual)
		}
		out[i] = math.NaN()
		if dm > 0 && !math.IsInf(pb, 1) {
			out[i] = max(0, (pb-dm)/dm)
		}
	}
	return out
}

// TestStopsOnceCertified: training ends at the first round whose bound is
// at most Tol, the bound holds against the optimum an independent solver
// finds, and without a tolerance every round runs.
func TestStopsOnceCertified(t *testing.T) {
	d := testData(300, 10, 4)
	blocks := gridBlocks(d, 2, 2)
	pstar := optimum(t, d, 1e-2)
	for _, tol := range []Tolerance{1e-2, 1e-3} {
		cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 300, Tol: tol}
		f := newFed(t, blocks, cfg)
		h := f.run(t)
		bounds := certify(h)
		last := len(h) - 1
		if !f.coord.Finished() || !f.coord.Converged() || last >= cfg.Rounds {
			t.Fatalf("tol %g: %d rounds, finished %v, converged %v", float64(tol), last, f.coord.Finished(), f.coord.Converged())
		}
		for i, b := range bounds[:last] {
			if b <= float64(tol) {
				t.Fatalf("tol %g: round %d's bound %g already met it, but training went on to round %d", float64(tol), i, b, last)
			}
		}
		if got := f.coord.Bound(); got != bounds[last] || !(got <= float64(tol)) {
			t.Fatalf("tol %g: Bound %g, recomputed from the history %g", float64(tol), got, bounds[last])
		}
		m := f.coord.Model()
		rel := (m.Primal - pstar) / pstar
		if rel > f.coord.Bound()+1e-12 || rel < -1e-9 {
			t.Fatalf("tol %g: the model is %g above the optimum, relative; the bound said %g", float64(tol), rel, f.coord.Bound())
		}
		t.Logf("tol %g: stopped after %d rounds, bound %.3g, the model %.3g above the optimum", float64(tol), last, f.coord.Bound(), rel)
	}
	cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 60, Tol: NoTol}
	f := newFed(t, blocks, cfg)
	if h := f.run(t); len(h) != cfg.Rounds+1 || f.coord.Converged() {
		t.Fatalf("no tolerance: %d rounds, converged %v", len(h)-1, f.coord.Converged())
	}
}

// TestStopSurvivesRestore: a restored coordinator certifies the model as
// the one that saved the checkpoint did, goes on to stop by the rule, and
// a checkpoint of a stopped federation restores finished.
func TestStopSurvivesRestore(t *testing.T) {
	d := testData(300, 10, 4)
	blocks := gridBlocks(d, 2, 2)
	cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 300, Tol: 1e-3}
	scheme := seal.Plaintext{Len: 64}
	crashed := newFed(t, blocks, cfg)
	cp := crashAt(t, crashed, 6, PhaseDirection)
	c, err := Restore(scheme, cp.Setup, cp.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Bound(), certify(c.History())[len(c.History())-1]; got != want || math.IsNaN(got) || c.Finished() {
		t.Fatalf("restored at round %d: bound %v, from the history %v, finished %v", c.Round(), got, want, c.Finished())
	}
	g := newFed(t, blocks, cfg)
	g.coord = c
	g.coord.EnableCheckpoints()
	var final *Checkpoint
	g.mem.OnReady = func(rd Ready) {
		if rd.Checkpoint != nil {
			final = withSetup(rd.Checkpoint, final)
		}
	}
	h := g.run(t)
	if !g.coord.Converged() || len(h)-1 >= cfg.Rounds {
		t.Fatalf("the restored run: %d rounds, converged %v", len(h)-1, g.coord.Converged())
	}
	again, err := Restore(scheme, final.Setup, final.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Finished() || !again.Converged() || again.Bound() != g.coord.Bound() {
		t.Fatalf("the stopped federation restored: finished %v, converged %v, bound %v (was %v)", again.Finished(), again.Converged(), again.Bound(), g.coord.Bound())
	}
}

// TestTolerance: Config.Tol in Go and in JSON, where 0 means none.
func TestTolerance(t *testing.T) {
	for _, tc := range []struct {
		json  string
		bound float64
		bad   bool
	}{
		{`{}`, DefaultTol, false},
		{`{"tol": 0}`, 0, false},
		{`{"tol": 1e-4}`, 1e-4, false},
		{`{"tol": 1}`, 0, true},
		{`{"tol": -0.5}`, 0, true},
	} {
		cfg := Defaults()
		cfg.Clients = 1
		if err := json.Unmarshal([]byte(tc.json), &cfg); err != nil {
			t.Fatal(err)
		}
		err := cfg.Validate()
		if (err != nil) != tc.bad {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if tc.bad {
			continue
		}
		if got := cfg.Tol.Bound(); got != tc.bound {
			t.Errorf("%s: bound %v, want %v", tc.json, got, tc.bound)
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil || back.Tol.Bound() != tc.bound {
			t.Errorf("%s: written and read back: %v (%v)", tc.json, back.Tol.Bound(), err)
		}
	}
	var zero Config
	zero.Clients = 1
	if err := zero.Validate(); err != nil || zero.Tol != DefaultTol || zero.Rounds != DefaultRounds {
		t.Fatalf("Config{}: tol %v rounds %d (%v)", float64(zero.Tol), zero.Rounds, err)
	}
}
