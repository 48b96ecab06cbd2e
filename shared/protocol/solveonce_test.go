package protocol

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// TestSolveOnce: under SolveOnce each updating group's Gram goes to one of
// its holders only, that holder's sealed directions go to all of the
// group's holders, and the run keeps the block step's guarantees (the dual
// never falls, the gap closes) on both losses with partial participation;
// it follows the run in which every holder solves to the quantization of
// the directions.
func TestSolveOnce(t *testing.T) {
	d := testData(400, 12, 4)
	for _, lossName := range []string{"hinge", "logistic"} {
		t.Run(lossName, func(t *testing.T) {
			var hist [2][]RoundMetrics
			for i, once := range []bool{false, true} {
				cfg := Config{Lambda: 1e-2, Loss: lossName, Inner: 12, Fraction: 0.75, Rounds: 120, Seed: 2,
					SharedDirections: 4, EveryHolderSolves: Off(!once), BiasFeature: d.M() - 1, BiasValue: 1}
				f := newFed(t, gridBlocks(d, 4, 2), cfg) // 4 sample groups of 2 holders
				gramSums := map[int]map[int]int{}        // round -> group -> gram-sums sent for it
				solved, centered := 0, 0
				f.mem.Observe = func(toServer bool, k int, m *Message) {
					switch {
					case !toServer && m.Kind == KindGramSum:
						if gramSums[m.Round] == nil {
							gramSums[m.Round] = map[int]int{}
						}
						for _, lg := range m.Groups {
							gramSums[m.Round][f.coord.clients[k].groups[lg]]++
						}
					case toServer && m.Kind == KindSolved:
						solved++
					case !toServer && m.Kind == KindDirection && len(m.Alpha) > 0:
						centered++
					}
				}
				hist[i] = f.run(t)
				for r, groups := range gramSums {
					for gi, n := range groups {
						if once && n != 1 || !once && n != 2 {
							t.Fatalf("solve-once %v, round %d: group %d's Gram went to %d holders", once, r, gi, n)
						}
					}
				}
				if once != (solved > 0) || once != (centered > 0) {
					t.Fatalf("solve-once %v: %d solved messages, %d centered directions sent", once, solved, centered)
				}
				checkDualNeverFalls(t, hist[i], fmt.Sprintf("solve-once %v, ", once))
				last := hist[i][len(hist[i])-1]
				if !(last.Gap >= 0 && last.Gap < 1e-3*last.Primal) {
					t.Fatalf("solve-once %v, last round: P=%v D=%v gap %v", once, last.Primal, last.Dual, last.Gap)
				}
			}
			a, b := hist[0][len(hist[0])-1], hist[1][len(hist[1])-1]
			if math.Abs(a.Dual-b.Dual) > 1e-4*math.Abs(a.Dual) {
				t.Fatalf("final dual %v with every holder solving, %v with one solver a group", a.Dual, b.Dual)
			}
		})
	}
}

// TestSolvedRefused: the coordinator refuses a solver's directions for a
// group it was not sent the Gram of, chunks of the wrong length, and a
// centered direction in a round without one.
func TestSolvedRefused(t *testing.T) {
	d := testData(200, 8, 3)
	cfg := Config{Lambda: 1e-2, Inner: 8, Rounds: 4, Seed: 1}
	f := newFed(t, gridBlocks(d, 2, 2), cfg)
	key, err := seal.NewKeyFor(f.coord.Scheme(), testSecret.Derive(seal.KeyPurpose))
	if err != nil {
		t.Fatal(err)
	}
	checked := false
	f.mem.Hook = func() {
		c := f.coord
		if checked || c.phase == nil || c.phase.reply != KindSolved {
			return
		}
		checked = true
		var solver, gi int = -1, -1
		for k, gs := range c.flow.solves {
			for g := range gs {
				solver, gi = k, g
			}
		}
		other := -1
		for g := range c.groups {
			if !c.flow.solves[solver][g] {
				other = g
			}
		}
		if solver < 0 || other < 0 {
			t.Fatalf("solver %d, a group it does not solve %d", solver, other)
		}
		grp := func(g int) []int {
			out := make([]int, c.groups[g].size)
			for i := range out {
				out[i] = c.groups[g].start + i
			}
			return out
		}
		sealed := func(g int, span []int) seal.Vec {
			v, err := seal.SealSlots(key, grp(g)[:1], []float64{0.5}, span)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		for name, tc := range map[string]struct {
			m    Message
			want string
		}{
			"another group's": {Message{Kind: KindSolved, Sealed: sealed(other, grp(other))}, "outside the groups the client solves"},
			"short":           {Message{Kind: KindSolved, Sealed: sealed(gi, grp(gi)[:1])}, "values, its layout"},
		} {
			if err := c.check(solver, tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
			}
		}
		saved := c.flow.groupSteps
		c.flow.groupSteps = false
		if err := c.check(solver, Message{Kind: KindSolved, Sealed: sealed(gi, grp(gi)), Alpha: sealed(gi, grp(gi))}); err == nil ||
			!strings.Contains(err.Error(), "without group steps") {
			t.Errorf("centered direction without group steps: %v", err)
		}
		c.flow.groupSteps = saved
	}
	f.run(t)
	if !checked {
		t.Fatal("no solve phase seen")
	}
}

// TestSolveOnceHolderLeaves: a holder that is not its group's solver leaves
// while the solvers work; the round goes on at once with the other groups
// (it is not waited for in the direction phase), and the holder comes back.
func TestSolveOnceHolderLeaves(t *testing.T) {
	d := testData(300, 10, 5)
	cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 12, Seed: 4}
	f := newFed(t, gridBlocks(d, 3, 2), cfg) // 3 sample groups of 2 holders
	left, back := -1, false
	f.mem.Hook = func() {
		c := f.coord
		switch {
		case left < 0 && c.Round() == 5 && c.phase != nil && c.phase.reply == KindSolved && len(c.phase.waiting) > 0:
			for _, k := range c.flow.targets {
				if c.flow.solves[k] == nil {
					// The leave reaches the coordinator before the solvers'
					// replies (the memory transport would queue it after).
					left = k
					c.disconnect(k)
					f.mem.Drop(k)
					return
				}
			}
		case left >= 0 && !back && c.Round() >= 8:
			back = true
			if err := f.mem.Join(left); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := f.run(t)
	if left < 0 || !back {
		t.Fatalf("no holder left during the solve (left %d, back %v)", left, back)
	}
	if h[5].Updated != 2 || h[5].Gamma == 0 {
		t.Fatalf("round 5: %d groups updated, step %v; want the 2 groups without the holder that left, and a step", h[5].Updated, h[5].Gamma)
	}
	checkDualNeverFalls(t, h, "")
	if len(h) != cfg.Rounds+1 {
		t.Fatalf("%d rounds recorded, want %d", len(h), cfg.Rounds+1)
	}
}

// countingKey counts the chunks a participant opens.
type countingKey struct {
	seal.Key
	opened *atomic.Int64
}

func (k countingKey) Open(c seal.Chunk) ([]float64, error) {
	k.opened.Add(1)
	return k.Key.Open(c)
}

// TestSolverKeepsItsDirections: a group's solver does not open the chunks
// of its own directions when they come back in the direction message; it
// uses what it sealed, and the run is the one in which it opens them,
// round for round.
func TestSolverKeepsItsDirections(t *testing.T) {
	d := testData(400, 12, 4)
	cfg := Config{Lambda: 1e-2, Inner: 12, Fraction: 0.75, Rounds: 30, Seed: 2,
		SharedDirections: 4, BiasFeature: d.M() - 1, BiasValue: 1}
	blocks := gridBlocks(d, 4, 2)
	var hist [2][]RoundMetrics
	var opened [2]atomic.Int64
	for i, forget := range []bool{false, true} {
		cfg.Clients = len(blocks)
		scheme := seal.Plaintext{Len: 64}
		c, err := NewCoordinator(cfg, scheme)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := NewMemory(len(blocks), func(k int) (*Participant, error) {
			key, err := seal.NewKeyFor(scheme, testSecret.Derive(seal.KeyPurpose))
			if err != nil {
				return nil, err
			}
			return NewParticipant(&blocks[k], testSecret, countingKey{key, &opened[i]})
		})
		if err != nil {
			t.Fatal(err)
		}
		kept := 0
		mem.Observe = func(toServer bool, k int, m *Message) {
			if toServer || m.Kind != KindDirection || mem.parts[k].kept == nil {
				return
			}
			kept++
			if forget { // as a solver that opens its own chunks
				mem.parts[k].kept = nil
			}
		}
		f := &fed{coord: c, mem: mem}
		hist[i] = f.run(t)
		if kept == 0 {
			t.Fatal("no solver kept its directions")
		}
	}
	sameRounds(t, hist[0], hist[1])
	if !(opened[0].Load() < opened[1].Load()) {
		t.Fatalf("solvers that keep their directions opened %d chunks, solvers that open them %d", opened[0].Load(), opened[1].Load())
	}
}
