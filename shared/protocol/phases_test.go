package protocol

import (
	"slices"
	"strings"
	"testing"
)

// TestPhasesRunInTableOrder: every round runs phases of roundPhases in the
// table's order, exactly those its variant names: the table is the round.
func TestPhasesRunInTableOrder(t *testing.T) {
	d := testData(80, 6, 3)
	order := map[string]int{}
	for i, p := range roundPhases {
		order[p.name] = i
	}
	steady := []string{PhaseGram, PhaseSolve, PhaseDirection, PhaseTrial, PhasePrice, PhaseApply}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // a steady round's phases (round 3)
	}{
		{"default", Config{Lambda: 1e-2, Inner: 5, Rounds: 4, Seed: 1}, steady},
		{"every holder solving", Config{Lambda: 1e-2, Inner: 5, Rounds: 4, Seed: 1, EveryHolderSolves: true},
			[]string{PhaseGram, PhaseDirection, PhaseTrial, PhasePrice, PhaseApply}},
		{"sealed primal", Config{Lambda: 1e-2, Inner: 5, Rounds: 4, Seed: 1, SealPrimal: true},
			[]string{PhaseGram, PhaseSolve, PhaseDirection, PhaseOpen, PhaseTrial, PhasePrice, PhaseApply}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFed(t, gridBlocks(d, 2, 2), tc.cfg)
			byRound := map[int][]string{}
			f.coord.tracePhase = func(name string) {
				byRound[f.coord.round] = append(byRound[f.coord.round], name)
			}
			f.run(t)
			for r := 1; r <= tc.cfg.Rounds; r++ {
				ph := byRound[r]
				for i := 1; i < len(ph); i++ {
					if order[ph[i]] <= order[ph[i-1]] {
						t.Fatalf("round %d runs %s after %s: %v", r, ph[i], ph[i-1], ph)
					}
				}
			}
			if got := byRound[3]; !slices.Equal(got, tc.want) {
				t.Errorf("round 3 runs %s, want %s", strings.Join(got, " "), strings.Join(tc.want, " "))
			}
			if got := byRound[0]; !slices.Equal(got, []string{PhaseSetup, PhaseMargins, PhaseScore}) {
				t.Errorf("before round 1: %v", got)
			}
		})
	}
}

// TestPhaseSpecsComplete: every phase has its reply and is listed once.
func TestPhaseSpecsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range append(slices.Clone(roundPhases), otherPhases...) {
		if seen[p.name] || p.reply == "" || p.request == "" || p.when == "" {
			t.Errorf("phase %+v: listed twice, or without its request, reply or when", p)
		}
		seen[p.name] = true
	}
	for _, name := range Phases {
		if !seen[name] {
			t.Errorf("Phases lists %q, which no spec has", name)
		}
	}
}
