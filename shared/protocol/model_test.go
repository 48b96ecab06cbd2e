package protocol

import (
	"math"
	"testing"
)

// TestModelIsTheBestIterate: the model the coordinator hands out is the w
// of the round with the lowest primal so far, bit for bit, with that
// round's metrics; rounds without a primal (a participant away) never
// become it, and before the first round it is the current iterate.
func TestModelIsTheBestIterate(t *testing.T) {
	d := testData(300, 9, 8)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"hyfed", Config{Lambda: 1e-2, Inner: 30, Fraction: 0.5, Rounds: 120, Seed: 3}},
		{"paper", Config{Lambda: 1e-2, Step: StepPaper, Inner: 10, Gamma: 1, Fraction: 0.7, Rounds: 120, Seed: 3}},
		{"hyfed sealed primal", Config{Lambda: 1e-2, Inner: 30, Rounds: 120, Seed: 3, SealPrimal: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFed(t, gridBlocks(d, 2, 3), tc.cfg)
			if m := f.coord.Model(); m.Best || !math.IsNaN(m.Primal) {
				t.Fatalf("before any round: model %+v", m)
			}
			var ws [][]float64 // w after each recorded round
			f.mem.Hook = func() {
				if n := len(f.coord.History()); n > len(ws) {
					ws = append(ws, append([]float64(nil), f.coord.W()...))
				}
				switch r := f.coord.Round(); {
				case r >= 30 && r < 45 && f.mem.Connected(4):
					f.mem.Drop(4)
				case r >= 45 && !f.mem.Connected(4):
					if err := f.mem.Join(4); err != nil {
						t.Fatal(err)
					}
				}
			}
			h := f.run(t)
			if len(h) == len(ws)+1 { // the last round ends the run: no event after it
				ws = append(ws, append([]float64(nil), f.coord.W()...))
			}
			m := f.coord.Model()
			b := bestRound(h)
			if b < 0 || !m.Best || m.Round != b || m.Primal != h[b].Primal || m.HeldAcc != h[b].HeldAcc || m.TrainAcc != h[b].TrainAcc {
				t.Fatalf("model: round %d P %v best %v; lowest primal recorded: round %d", m.Round, m.Primal, m.Best, b)
			}
			partial := 0
			for _, r := range h {
				if r.Partial {
					partial++
				}
			}
			if partial == 0 {
				t.Fatal("no round without a primal: the scenario does not test them")
			}
			if b >= len(ws) {
				t.Fatalf("w of round %d not captured (%d rounds)", b, len(ws))
			}
			for i, v := range ws[b] {
				if m.W[i] != v {
					t.Fatalf("model w[%d] = %v, w of round %d: %v", i, m.W[i], b, v)
				}
			}
			m.W[0] += 1 // a copy: the coordinator's model stays
			if f.coord.Model().W[0] == m.W[0] {
				t.Fatal("Model returned the coordinator's own slice")
			}
			t.Logf("model: round %d of %d, P %.9g; last P %.9g", m.Round, len(h)-1, m.Primal, h[len(h)-1].Primal)
		})
	}
}
