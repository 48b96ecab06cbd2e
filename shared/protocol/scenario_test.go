package protocol

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestDualNeverDecreases drives the default step with random participation
// and scripted absences (clients leaving mid-phase and coming back): the
// dual must not fall in any round, and whenever the data of every client is
// reachable the metrics must be complete.
func TestDualNeverDecreases(t *testing.T) {
	d := testData(300, 10, 2)
	blocks := gridBlocks(d, 3, 2)
	for _, tc := range []struct {
		name     string
		fraction float64
		script   bool
	}{
		{"fraction 0.5", 0.5, false},
		{"fraction 1 with absences", 1, true},
		{"fraction 0.5 with absences", 0.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFed(t, blocks, Config{Lambda: 1e-2, Inner: 25, Fraction: tc.fraction, Rounds: 120, Seed: 11})
			if tc.script {
				// Client 1 leaves in round 10 during the step phase and
				// returns in round 20; client 4 leaves in round 30 during the
				// direction phase, client 2 in round 31 during metrics; both
				// return at round 50.
				events := []struct {
					round int
					phase string
					k     int
					join  bool
					done  bool
				}{
					{10, PhaseGram, 1, false, false},
					{20, "", 1, true, false},
					{30, PhaseDirection, 4, false, false},
					{31, PhasePrice, 2, false, false},
					{50, "", 4, true, false},
					{50, "", 2, true, false},
				}
				f.mem.Hook = func() {
					for i := range events {
						e := &events[i]
						if e.done || f.coord.Round() < e.round || (e.phase != "" && f.coord.Phase() != e.phase) {
							continue
						}
						e.done = true
						if e.join {
							if err := f.mem.Join(e.k); err != nil {
								t.Fatal(err)
							}
						} else {
							f.mem.Drop(e.k)
						}
					}
				}
			}
			h := f.run(t)
			prev := math.Inf(-1)
			partial := 0
			for _, r := range h {
				if r.Partial {
					partial++
				}
				if math.IsNaN(r.Dual) {
					continue
				}
				if r.Dual < prev-1e-12*math.Abs(prev) {
					t.Fatalf("round %d: dual fell from %.12g to %.12g", r.Round, prev, r.Dual)
				}
				prev = r.Dual
			}
			if tc.script && partial == 0 {
				t.Fatal("absences left no partial round: the script did not run")
			}
			last := h[len(h)-1]
			if last.Partial || !finite(last.Primal) {
				t.Fatalf("last round incomplete after every client returned: %+v", last)
			}
		})
	}
}

// TestDropAndReturnReachesSameOptimum: a federation whose clients come and
// go ends at the centralized optimum.
func TestDropAndReturnReachesSameOptimum(t *testing.T) {
	d := testData(300, 10, 5)
	const lambda = 1e-2
	pstar := optimum(t, d, lambda)
	f := newFed(t, gridBlocks(d, 2, 2), Config{Lambda: lambda, Inner: 20, Rounds: 500, Seed: 5})
	f.mem.Hook = func() {
		r := f.coord.Round()
		switch {
		case r >= 40 && r < 120 && f.mem.Connected(0):
			f.mem.Drop(0)
		case r >= 120 && !f.mem.Connected(0):
			if err := f.mem.Join(0); err != nil {
				t.Fatal(err)
			}
		case r >= 200 && r < 260 && f.mem.Connected(3):
			f.mem.Drop(3)
		case r >= 260 && !f.mem.Connected(3):
			if err := f.mem.Join(3); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := f.run(t)
	last := h[len(h)-1]
	rel := (last.Primal - pstar) / pstar
	if !(rel < 1e-4) {
		t.Fatalf("relative loss %.3g after drops and returns, want < 1e-4", rel)
	}
	if last.Gap > 1e-3*pstar {
		t.Fatalf("duality gap %.3g still open", last.Gap)
	}
}

func TestPaperRuleRunsAndImproves(t *testing.T) {
	d := testData(300, 10, 3)
	for _, fr := range []float64{1, 0.5} {
		f := newFed(t, gridBlocks(d, 2, 2), Config{Lambda: 1e-2, Step: StepPaper, Inner: 2, Gamma: 0.5, Fraction: fr, Rounds: 300, Seed: 2})
		h := f.run(t)
		if !(h[len(h)-1].Primal < h[0].Primal*0.9) {
			t.Fatalf("fraction %v: paper rule did not reduce P: %.4g -> %.4g", fr, h[0].Primal, h[len(h)-1].Primal)
		}
	}
}

// TestBadMessagesChangeNothing sends out-of-phase and replayed messages
// in the middle of a run; each gets an error back and the run ends
// exactly where an undisturbed run ends. (A malformed reply to the phase
// waiting for it is the participant's reply: TestBadReplyEndsItsPhase.)
func TestBadMessagesChangeNothing(t *testing.T) {
	d := testData(200, 8, 4)
	blocks := gridBlocks(d, 2, 2)
	cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 30, Seed: 9}
	clean := newFed(t, blocks, cfg).run(t)

	f := newFed(t, blocks, cfg)
	var errorsSeen []string
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if !toServer && m.Kind == KindError {
			errorsSeen = append(errorsSeen, m.Err)
		}
	}
	f.mem.OnError = func(int, error) {} // participants see the errors; the run goes on
	injected := false
	var lastDelta *Message
	f.mem.Hook = func() {
		if f.coord.Round() == 5 && f.coord.Phase() == PhaseDirection && !injected {
			injected = true
			bad := []Message{
				{Kind: KindDelta, Round: 5},                                     // replay of a finished phase
				{Kind: KindDirPart, Round: 4, DW: make([]float64, 4)},           // wrong round
				{Kind: KindMetrics, Round: 5, GridTrainOK: []int{3}, TrainN: 1}, // out of phase and inconsistent
				{Kind: KindHello}, // second hello while connected
			}
			for _, m := range bad {
				out := f.coord.Step(Input{Kind: InputMessage, From: 0, Msg: m})
				if err := f.mem.Deliver(context.Background(), out); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	_ = lastDelta
	got := f.run(t)
	if len(errorsSeen) != 4 {
		t.Fatalf("got %d error replies, want 4: %q", len(errorsSeen), errorsSeen)
	}
	for _, e := range errorsSeen {
		if strings.TrimSpace(e) == "" {
			t.Fatal("empty error message")
		}
	}
	a, b := clean[len(clean)-1], got[len(got)-1]
	if a.Primal != b.Primal || a.Dual != b.Dual {
		t.Fatalf("bad messages changed the run: P %v vs %v, D %v vs %v", a.Primal, b.Primal, a.Dual, b.Dual)
	}
}

func TestWrongSecretIsRejected(t *testing.T) {
	d := testData(100, 6, 6)
	blocks := gridBlocks(d, 1, 2)
	f := newFed(t, blocks, Config{Lambda: 1e-2, Inner: 5, Rounds: 1, Seed: 1})
	h := blocks[0]
	p, err := NewParticipant(&h, [32]byte{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCoordinator(Config{Lambda: 1e-2, Inner: 5, Rounds: 1, Clients: 2}, f.coord.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	c.Step(Input{Kind: InputJoin, From: 0, Msg: f.mem.Participant(0).Hello()})
	out := c.Step(Input{Kind: InputJoin, From: 1, Msg: p.Hello()}).Envelopes
	if len(out) != 1 || out[0].Msg.Kind != KindError || out[0].Msg.Code != CodeWrongSecret || !strings.Contains(out[0].Msg.Err, "secret") {
		t.Fatalf("wrong secret: got %+v", out)
	}
}

// TestOneClientH1DualNeverDecreases: with one client and H=1 each round is
// one exact coordinate step, under either rule.
func TestOneClientH1DualNeverDecreases(t *testing.T) {
	d := testData(120, 6, 8)
	for _, step := range []string{StepBlock, StepPaper} {
		f := newFed(t, gridBlocks(d, 1, 1), Config{Lambda: 1e-2, Step: step, Inner: 1, Rounds: 300, Seed: 4})
		h := f.run(t)
		for i := 1; i < len(h); i++ {
			if h[i].Dual < h[i-1].Dual-1e-13 {
				t.Fatalf("%s: dual fell in round %d: %.15g -> %.15g", step, h[i].Round, h[i-1].Dual, h[i].Dual)
			}
		}
		if !(h[len(h)-1].Dual > h[0].Dual) {
			t.Fatalf("%s: dual did not rise", step)
		}
	}
}

// TestDeadlineDropsAStalledClient: a client whose messages are lost in the
// middle of round 5 is cut off at the phase deadline; the round applies
// nothing for its group, the rest carry on, and after it reconnects the
// federation ends at the optimum with a dual that never fell.
func TestDeadlineDropsAStalledClient(t *testing.T) {
	d := testData(300, 10, 13)
	const lambda = 1e-2
	pstar := optimum(t, d, lambda)
	f := newFed(t, gridBlocks(d, 2, 2), Config{Lambda: lambda, Inner: 20, Rounds: 400, Seed: 8, NoGroupSteps: true, EveryHolderSolves: true, SharedDirections: NoDirections})
	stalled, rejoined := false, false
	f.mem.Lose = func(to int, m *Message) bool {
		if to == 2 && f.coord.Round() == 5 && (m.Kind == KindDirection || m.Kind == KindGramSum) {
			stalled = true
		}
		return to == 2 && stalled && !rejoined
	}
	f.mem.Hook = func() {
		if stalled && !rejoined && f.coord.Round() >= 8 && !f.mem.Connected(2) {
			rejoined = true
			if err := f.mem.Join(2); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := f.run(t)
	if !stalled || !rejoined {
		t.Fatalf("scenario did not run: stalled %v rejoined %v", stalled, rejoined)
	}
	if h[5].Gamma != 0 || !h[5].Partial {
		t.Fatalf("round 5 applied a step (gamma %v) or was complete without client 2", h[5].Gamma)
	}
	for i := 1; i < len(h); i++ {
		if finite(h[i].Dual) && finite(h[i-1].Dual) && h[i].Dual < h[i-1].Dual-1e-12 {
			t.Fatalf("dual fell in round %d", h[i].Round)
		}
	}
	if rel := (h[len(h)-1].Primal - pstar) / pstar; !(rel < 1e-3) {
		t.Fatalf("relative loss %.3g", rel)
	}
}
