package protocol

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/loss"
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
			// Its groups can no longer be scored: the rounds after the drop
			// are partial, and the model is the best scored before it.
			if !h[len(h)-1].Partial || m.Round > dropRound(h) {
				t.Fatalf("after the drop: last round partial %v, model of round %d", h[len(h)-1].Partial, m.Round)
			}
			t.Logf("dropped: %s; true primal of the last iterate %.4g, of the model (round %d) %.4g, P* %.4g; %d rejoins; last round partial %v", infos[liar].Dropped, p, m.Round, pm, opt.Primal, back, h[len(h)-1].Partial)
		})
	}
}

// TestDroppedStaysDroppedAfterARestart: the checkpoint carries the drop.
func TestDroppedStaysDroppedAfterARestart(t *testing.T) {
	d := testData(240, 10, 4)
	blocks := gridBlocks(d, 3, 2)
	cfg := Config{Lambda: 1e-2, Rounds: 30, Seed: 5}
	f := newFed(t, blocks, cfg)
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if toServer && k == 0 && m.Kind == KindDirPart && f.coord.Round() >= 3 {
			m.DConj = 1e300
		}
	}
	f.mem.OnError = func(int, error) {}
	last := crashAt(t, f, 10, PhaseGram)
	c, err := Restore(f.coord.scheme, last.Setup, last.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	if ci := c.Clients()[0]; ci.Dropped == "" {
		t.Fatal("the restored federation forgot the drop")
	}
	hello := f.mem.Participant(0).Hello()
	r := c.Step(Input{Kind: InputJoin, From: 0, Msg: hello})
	if len(r.Envelopes) != 1 || r.Envelopes[0].Msg.Code != CodeDropped {
		t.Fatalf("the dropped participant came back after the restart: %+v", r.Envelopes)
	}
}

// dropRound is the last round recorded whole (not partial).
func dropRound(h []RoundMetrics) int {
	last := -1
	for _, r := range h {
		if !r.Partial {
			last = r.Round
		}
	}
	return last
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
