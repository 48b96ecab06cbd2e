package protocol

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
)

// TestMisbehavingParticipantIsDropped runs a federation in which one
// participant (client 0, its group's reporter) lies in one field of its
// replies from round 3 on, or keeps failing its phase. Each ends with the
// liar, and only it, dropped and named, refused when it comes back, and
// the federation training on: the dual never falls and the rounds run to
// the end.
func TestMisbehavingParticipantIsDropped(t *testing.T) {
	d := testData(240, 10, 4)
	blocks := gridBlocks(d, 3, 2)
	cfg := Config{Lambda: 1e-2, Rounds: 40, Seed: 5}
	const liar = 0
	whole := newFed(t, blocks, cfg)
	whole.run(t)
	pWhole, _, _, _ := central.Objectives(d, loss.Hinge{}, cfg.Lambda, whole.coord.Model().W, nil)
	for _, tc := range []struct {
		name string
		lie  func(m *Message) // what the liar changes in its replies
		lose Kind             // or: the requests it never answers
		why  string           // in the reason it is dropped for
	}{
		{name: "step limit 1e-9", lie: func(m *Message) {
			if m.Kind == KindDirPart && m.GammaMax > 0 {
				m.GammaMax = 1e-9
			}
		}, why: "step limit"},
		{name: "conjugate change -1e300", lie: func(m *Message) {
			if m.Kind == KindDirPart {
				m.DConj = -1e300
			}
		}, why: "conjugate change"},
		{name: "loss sum -1e6", lie: func(m *Message) {
			if m.Kind == KindMetrics {
				m.GridLoss[0] = -1e6
			}
		}, why: "loss sum"},
		{name: "conjugate sum beyond its samples", lie: func(m *Message) {
			if m.Kind == KindMetrics {
				m.GridConj[len(m.GridConj)-1] += 2 * float64(m.TrainN+1)
			}
		}, why: "conjugate sum"},
		{name: "samples it does not hold", lie: func(m *Message) {
			if m.Kind == KindMetrics {
				m.TrainN += 1000
			}
		}, why: "training and"},
		{name: "non-finite direction", lie: func(m *Message) {
			if m.Kind == KindDirPart && len(m.DW) > 0 {
				m.DW[0] = math.NaN()
			}
		}, why: "3 replies refused or missed"},
		{name: "a Gram chunk of another group", lie: func(m *Message) {
			if m.Kind == KindGramPart {
				moved := seal.Vec{}
				for ci, ch := range m.Sealed {
					moved[ci+1000] = ch
				}
				m.Sealed = moved
			}
		}, why: "3 replies refused or missed"},
		{name: "a chunk one value short", lie: func(m *Message) {
			if m.Kind == KindIPPart {
				for ci, ch := range m.Sealed {
					if short, err := seal.Trim(seal.Plaintext{Len: 64}, ch, seal.Len(seal.Plaintext{Len: 64}, ch)-1); err == nil {
						m.Sealed[ci] = short
					}
				}
			}
		}, why: "3 replies refused or missed"},
		{name: "no reply", lose: KindGram, why: "3 replies refused or missed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFed(t, blocks, cfg)
			var toLiar []Message
			f.mem.Observe = func(toServer bool, k int, m *Message) {
				if k != liar {
					return
				}
				if toServer && tc.lie != nil && f.coord.Round() >= 3 {
					tc.lie(m)
				}
				if !toServer && m.Kind == KindError {
					toLiar = append(toLiar, *m)
				}
			}
			if tc.lose != "" {
				f.mem.Lose = func(to int, m *Message) bool { return to == liar && m.Kind == tc.lose && f.coord.Round() >= 3 }
			}
			f.mem.OnError = func(int, error) {} // the liar's errors; the run goes on
			back := 0
			f.mem.Hook = func() {
				// The liar comes back whenever it is sent away.
				if !f.mem.Connected(liar) && back < 10 {
					back++
					if err := f.mem.Join(liar); err != nil {
						t.Fatal(err)
					}
				}
			}
			h := f.run(t)
			if len(h) != cfg.Rounds+1 {
				t.Fatalf("%d rounds recorded, want %d", len(h), cfg.Rounds+1)
			}
			checkDualNeverFalls(t, h, "")
			infos := f.coord.Clients()
			for k, ci := range infos {
				if (ci.Dropped != "") != (k == liar) {
					t.Fatalf("participant %d dropped: %q", k, ci.Dropped)
				}
			}
			if !strings.Contains(infos[liar].Dropped, tc.why) {
				t.Fatalf("dropped for %q, want it to say %q", infos[liar].Dropped, tc.why)
			}
			named := false
			for _, n := range f.coord.Notices() {
				named = named || strings.Contains(n, "was dropped") && strings.Contains(n, tc.why)
			}
			if !named {
				t.Fatalf("notices %q do not name the dropped participant", f.coord.Notices())
			}
			if last := toLiar[len(toLiar)-1]; last.Code != CodeDropped {
				t.Fatalf("the liar's last error %q (%s), want it refused as dropped", last.Err, last.Code)
			}
			opt, err := central.Solve(context.Background(), d, central.Config{Lambda: cfg.Lambda, Loss: loss.Hinge{}, Tol: 1e-10})
			if err != nil {
				t.Fatal(err)
			}
			p, _, _, _ := central.Objectives(d, loss.Hinge{}, cfg.Lambda, f.coord.W(), nil)
			m := f.coord.Model()
			pm, _, _, _ := central.Objectives(d, loss.Hinge{}, cfg.Lambda, m.W, nil)
			// The federation re-formed without its groups: scoring resumed,
			// and the model is the best since.
			reformed := slices.IndexFunc(h, func(r RoundMetrics) bool { return r.Reformed })
			if reformed < 0 || h[len(h)-1].Partial || m.Round < reformed {
				t.Fatalf("after the drop: re-formed at round %d, last round partial %v, model of round %d", reformed, h[len(h)-1].Partial, m.Round)
			}
			if rel := (pm - pWhole) / pWhole; rel > 0.05 {
				t.Fatalf("the model's true primal %.4g is %.1f%% above the undisturbed run's %.4g", pm, 100*rel, pWhole)
			}
			t.Logf("dropped: %s; true primal of the last iterate %.4g, of the model (round %d) %.4g, undisturbed %.4g, P* %.4g; %d rejoins", infos[liar].Dropped, p, m.Round, pm, pWhole, opt.Primal, back)
		})
	}
}

// TestDroppedStaysDroppedAfterARestart: the checkpoint carries the drop
// and the re-forming; restored, with the same participants back, the run
// ends exactly as the one that was not interrupted.
func TestDroppedStaysDroppedAfterARestart(t *testing.T) {
	d := testData(240, 10, 4)
	blocks := gridBlocks(d, 3, 2)
	cfg := Config{Lambda: 1e-2, Rounds: 30, Seed: 5}
	lie := func(f *fed) {
		f.mem.Observe = func(toServer bool, k int, m *Message) {
			if toServer && k == 0 && m.Kind == KindDirPart && f.coord.Round() >= 3 {
				m.DConj = 1e300
			}
		}
		f.mem.OnError = func(int, error) {}
	}
	whole := newFed(t, blocks, cfg)
	lie(whole)
	want := whole.run(t)
	crashed := newFed(t, blocks, cfg)
	lie(crashed)
	last := crashAt(t, crashed, 10, PhaseGram)
	c, err := Restore(crashed.coord.scheme, last.Setup, last.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	if ci := c.Clients()[0]; ci.Dropped == "" || c.NumTrain() != crashed.coord.NumTrain() {
		t.Fatalf("restored: dropped %q, %d training samples (before the crash %d)", ci.Dropped, c.NumTrain(), crashed.coord.NumTrain())
	}
	g := rejoinSame(t, blocks, crashed.mem)
	g.coord = c
	lie(g)
	refused := false
	g.mem.Observe = func(toServer bool, k int, m *Message) {
		refused = refused || !toServer && k == 0 && m.Code == CodeDropped
	}
	sameRuns(t, g.run(t), want)
	if !refused {
		t.Fatal("the dropped participant was let back in after the restart")
	}
}

// BenchmarkValueChecks times the value checks of one participant's
// direction share and metrics in a federation of 500 sample groups (a
// participant holding one, the metrics pricing eight candidate steps):
// what they add to a round is participants x this.
func BenchmarkValueChecks(b *testing.B) {
	cfg := Defaults()
	cfg.Inner = 64
	c := &Coordinator{cfg: cfg, flow: roundFlow{report: map[int][]int{}}, phaseReport: map[int][]int{}}
	for g := range 500 {
		c.groups = append(c.groups, group{train: 90, size: 100})
		c.clients = append(c.clients, &clientState{groups: []int{g}})
		c.flow.report[g], c.phaseReport[g] = []int{0}, []int{0}
	}
	dir := Message{Kind: KindDirPart, GammaMax: 1.5, DConj: 12.5, DConjCentered: -3}
	met := Message{Kind: KindMetrics, TrainN: 90, HeldN: 10}
	for range 8 {
		met.GridLoss, met.GridConj = append(met.GridLoss, 40), append(met.GridConj, 30)
		met.GridTrainOK, met.GridHeldOK = append(met.GridTrainOK, 80), append(met.GridHeldOK, 9)
	}
	b.ResetTimer()
	for i := range b.N {
		k := i % 500
		if c.checkDirValues(k, dir) != nil || c.checkMetricValues(k, met) != nil {
			b.Fatal("an honest reply refused")
		}
	}
}

// TestReformedFederationConverges: after a drop the federation re-forms
// without the dropped participant's sample group and converges to the
// optimum of the samples that remain, its dual below that optimum and
// never falling after the re-forming.
func TestReformedFederationConverges(t *testing.T) {
	d := testData(240, 10, 4)
	blocks := gridBlocks(d, 3, 2) // client 0 holds part of group 0: samples 0-79
	cfg := Config{Lambda: 1e-2, Rounds: 200, Seed: 5}
	f := newFed(t, blocks, cfg)
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if toServer && k == 0 && m.Kind == KindDirPart && f.coord.Round() >= 3 {
			m.DConj = 1e300
		}
	}
	f.mem.OnError = func(int, error) {}
	h := f.run(t)
	checkDualNeverFalls(t, h, "")
	rest := &dataset.Dataset{Name: "rest", X: dataset.NewDense(160, d.M())}
	copy(rest.X.Data, d.X.Data[80*d.M():])
	rest.Y, rest.IDs, rest.Heldout = d.Y[80:], d.IDs[80:], d.Heldout[80:]
	pstar := optimum(t, rest, cfg.Lambda)
	last := h[len(h)-1]
	if last.Partial || (last.Primal-pstar)/pstar > 1e-3 || last.Dual > pstar*(1+1e-9) {
		t.Fatalf("last round: partial %v, P %.9g, D %.9g; optimum of the remaining samples %.9g", last.Partial, last.Primal, last.Dual, pstar)
	}
	if f.coord.NumTrain() != rest.NumTrain() {
		t.Fatalf("%d training samples after re-forming, want %d", f.coord.NumTrain(), rest.NumTrain())
	}
	t.Logf("P %.9g D %.9g, optimum of the rest %.9g", last.Primal, last.Dual, pstar)
}

// TestInflatedLossIsCaught: a reporter that inflates its groups' loss
// sums passes every range check, but a second holder prices the same
// group. With three holders the liar disagrees with two different
// checkers and is dropped; with two nobody can tell who lies, so the
// group is taken out and both are named; totals that do not add up to
// the groups' sums are impossible. Each way the model handed out stays
// within 5 % of the undisturbed run's true primal.
func TestInflatedLossIsCaught(t *testing.T) {
	d := testData(240, 10, 4)
	inflate := func(v []float64) {
		for i := range v {
			v[i] *= 1e6
		}
	}
	for _, tc := range []struct {
		name    string
		q       int // holders per group
		lie     func(m *Message)
		dropped bool
		lost    bool
	}{
		{"three holders", 3, func(m *Message) { inflate(m.GridLoss); inflate(m.GroupLoss); inflate(m.CheckLoss) }, true, true},
		{"two holders", 2, func(m *Message) { inflate(m.GridLoss); inflate(m.GroupLoss); inflate(m.CheckLoss) }, false, true},
		{"totals apart from the groups' sums", 2, func(m *Message) { inflate(m.GridLoss) }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks := gridBlocks(d, 3, tc.q)
			cfg := Config{Lambda: 1e-2, Rounds: 40, Seed: 5}
			whole := newFed(t, blocks, cfg)
			whole.run(t)
			pWhole, _, _, _ := central.Objectives(d, loss.Hinge{}, cfg.Lambda, whole.coord.Model().W, nil)
			f := newFed(t, blocks, cfg)
			f.mem.Observe = func(toServer bool, k int, m *Message) {
				if toServer && k == 0 && m.Kind == KindMetrics && f.coord.Round() >= 3 {
					tc.lie(m)
				}
			}
			f.mem.OnError = func(int, error) {}
			h := f.run(t)
			checkDualNeverFalls(t, h, "")
			for k, ci := range f.coord.Clients() {
				if (ci.Dropped != "") != (tc.dropped && k == 0) {
					t.Fatalf("participant %d dropped: %q", k, ci.Dropped)
				}
			}
			if f.coord.isLost(0) != tc.lost {
				t.Fatalf("group of the liar lost: %v, want %v", f.coord.isLost(0), tc.lost)
			}
			m := f.coord.Model()
			pm, _, _, _ := central.Objectives(d, loss.Hinge{}, cfg.Lambda, m.W, nil)
			if rel := (pm - pWhole) / pWhole; rel > 0.05 || h[len(h)-1].Partial {
				t.Fatalf("model of round %d: true primal %.4g, undisturbed %.4g; last round partial %v", m.Round, pm, pWhole, h[len(h)-1].Partial)
			}
			t.Logf("model of round %d: true primal %.4g, undisturbed %.4g; notices %q", m.Round, pm, pWhole, f.coord.Notices())
		})
	}
}

// TestInflatedShareIsCaughtWithASchema: in a federation of own files the
// schema bounds every value trained on, so a direction share a
// participant inflates (which would leave its co-holders unable to seal
// x.u) is impossible: it is dropped, and the others train on.
func TestInflatedShareIsCaughtWithASchema(t *testing.T) {
	d := makeOwnData(t, schema.LabelsShared)
	cfg := Defaults()
	cfg.Schema, cfg.Rounds, cfg.Lambda = d.sch, 40, 1e-2
	f := newFed(t, d.blocks, cfg)
	const liar = 2
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if toServer && k == liar && m.Kind == KindDirPart && f.coord.Round() >= 3 {
			for j := range m.DW {
				m.DW[j] *= 1e6
			}
		}
	}
	f.mem.OnError = func(int, error) {}
	h := f.run(t)
	for k, ci := range f.coord.Clients() {
		if (ci.Dropped != "") != (k == liar) {
			t.Fatalf("participant %d dropped: %q", k, ci.Dropped)
		}
	}
	if why := f.coord.Clients()[liar].Dropped; !strings.Contains(why, "direction share") {
		t.Fatalf("dropped for %q", why)
	}
	// The others train on to the end: the last round, or the one that
	// certified the model.
	if last := h[len(h)-1]; last.Partial || !f.coord.Finished() || (len(h) != cfg.Rounds+1 && !f.coord.Converged()) {
		t.Fatalf("%d rounds, the last partial %v, converged %v", len(h), last.Partial, f.coord.Converged())
	}
}
