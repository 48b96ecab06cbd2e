package protocol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
)

// TestRestartResumesExactly kills the server at every phase of a round
// (one that recomputes the margins and one that does not), restores it
// from its last checkpoint and lets the same participants reconnect, as
// the pages and hyfed join do: the restored run must record every round
// with the numbers of the uninterrupted one, to the last bit.
func TestRestartResumesExactly(t *testing.T) {
	d := testData(240, 10, 4)
	own := makeOwnData(t, schema.LabelsShared)
	ownCfg := Config{Lambda: 1e-2, Fraction: 0.7, Rounds: 56, Seed: 5, Schema: own.sch}
	for _, tc := range []struct {
		name   string
		blocks []partition.Block
		cfg    Config
	}{
		{"grid", gridBlocks(d, 3, 2), Config{Lambda: 1e-2, Fraction: 0.7, Rounds: 56, Seed: 5}},
		{"own-files", own.blocks, ownCfg}, // a schema: the preparation runs again on the restart
	} {
		whole := newFed(t, tc.blocks, tc.cfg)
		seen := map[int][]string{}
		whole.coord.tracePhase = func(name string) {
			if r := whole.coord.Round(); !slices.Contains(seen[r], name) {
				seen[r] = append(seen[r], name)
			}
		}
		want := whole.run(t)
		for _, r := range []int{7, 50} {
			if len(seen[r]) < 5 {
				t.Fatalf("%s: round %d ran phases %v", tc.name, r, seen[r])
			}
			for _, phase := range seen[r] {
				t.Run(fmt.Sprintf("%s/round%d-%s", tc.name, r, phase), func(t *testing.T) {
					crashed := newFed(t, tc.blocks, tc.cfg)
					last := crashAt(t, crashed, r, phase)
					c, err := Restore(crashed.coord.scheme, last.Setup, last.RoundData)
					if err != nil {
						t.Fatal(err)
					}
					g := rejoinSame(t, tc.blocks, crashed.mem)
					g.coord = c
					got := g.run(t)
					sameRuns(t, got, want)
					if !slices.Equal(g.coord.w, whole.coord.w) {
						t.Fatalf("final w differs from the uninterrupted run's")
					}
				})
			}
		}
	}
}

// TestRestartWithAFreshParticipant restores with one participant made
// afresh (a reloaded page keeps nothing): it cannot resume, is refreshed,
// and the federation still reaches the optimum.
func TestRestartWithAFreshParticipant(t *testing.T) {
	d := testData(240, 10, 4)
	blocks := gridBlocks(d, 3, 2)
	cfg := Config{Lambda: 1e-2, Fraction: 0.7, Rounds: 150, Seed: 5}
	crashed := newFed(t, blocks, cfg)
	last := crashAt(t, crashed, 21, PhaseDirection)
	c, err := Restore(crashed.coord.scheme, last.Setup, last.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	crashed.mem.parts[4] = nil // this one kept nothing
	g := rejoinSame(t, blocks, crashed.mem)
	g.coord = c
	refreshed := 0
	g.mem.Observe = func(toServer bool, client int, m *Message) {
		if !toServer && m.Kind == KindRefresh {
			refreshed++
			if client != 4 {
				t.Errorf("participant %d refreshed; only 4 came back without its state", client)
			}
		}
		if toServer && m.Kind == KindResumed && m.Applied == (client == 4) {
			t.Errorf("participant %d resumed: %v", client, m.Applied)
		}
	}
	h := g.run(t)
	if refreshed != 1 {
		t.Fatalf("%d refreshes, want 1", refreshed)
	}
	pstar := optimum(t, d, cfg.Lambda)
	if gap := (pstar - h[len(h)-1].Dual) / pstar; gap > 1e-2 || gap < -1e-9 {
		t.Fatalf("dual %.9g, P* %.9g: relative gap %.2g", h[len(h)-1].Dual, pstar, gap)
	}
}

// rejoinSame makes a federation whose participants are those of prev
// made afresh with the boundaries prev's kept (nil: none kept).
func rejoinSame(t *testing.T, blocks []partition.Block, prev *Memory) *fed {
	t.Helper()
	mem, err := NewMemory(len(blocks), func(k int) (*Participant, error) {
		key, err := seal.NewKeyFor(seal.Plaintext{Len: 64}, testSecret.Derive(seal.KeyPurpose))
		if err != nil {
			return nil, err
		}
		p, err := NewParticipant(&blocks[k], testSecret, key)
		if err != nil {
			return nil, err
		}
		p.TakeBoundaries(prev.parts[k])
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fed{mem: mem}
}

// sameRuns fails unless got and want record the same rounds with the
// same numbers, bit for bit.
func sameRuns(t *testing.T, got, want []RoundMetrics) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rounds recorded, want %d", len(got), len(want))
	}
	same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
	for i := range got {
		g, w := got[i], want[i]
		if g.Round != w.Round || !same(g.Primal, w.Primal) || !same(g.Dual, w.Dual) || !same(g.TrainAcc, w.TrainAcc) || !same(g.HeldAcc, w.HeldAcc) {
			t.Fatalf("round %d: primal %v dual %v, uninterrupted %v %v", g.Round, g.Primal, g.Dual, w.Primal, w.Dual)
		}
	}
}

// TestRestartResumesAfterASlowDisk: the checkpoints on disk lag six
// rounds behind the federation (a slow disk; the server tells the
// participants which boundary is saved). Restored from the last one
// written, with the same participants back, the run still ends bit for
// bit as the uninterrupted one: they kept every boundary since.
func TestRestartResumesAfterASlowDisk(t *testing.T) {
	d := testData(240, 10, 4)
	blocks := gridBlocks(d, 3, 2)
	cfg := Config{Lambda: 1e-2, Fraction: 0.7, Rounds: 40, Seed: 5}
	want := newFed(t, blocks, cfg).run(t)
	const lag = 6
	f := newFed(t, blocks, cfg)
	f.coord.EnableCheckpoints()
	var written []*Checkpoint // by round
	f.mem.OnReady = func(rd Ready) {
		if rd.Checkpoint == nil {
			return
		}
		var prev *Checkpoint
		if len(written) > 0 {
			prev = written[len(written)-1]
		}
		written = append(written, withSetup(rd.Checkpoint, prev))
		// The disk is lag boundaries behind: what it holds now is older.
		if r := rd.Checkpoint.Round - lag; r >= 0 {
			f.coord.Step(Input{Kind: InputSaved, Round: r})
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.mem.Hook = func() {
		if f.coord.Round() == 25 && f.coord.Phase() == PhaseTrial {
			cancel()
		}
	}
	if err := Serve(ctx, f.coord, f.mem, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	var onDisk *Checkpoint
	for _, cp := range written {
		if cp.Round == 24-lag {
			onDisk = cp
		}
	}
	c, err := Restore(f.coord.scheme, onDisk.Setup, onDisk.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	g := rejoinSame(t, blocks, f.mem)
	g.coord = c
	resumed := 0
	g.mem.Observe = func(toServer bool, k int, m *Message) {
		if toServer && m.Kind == KindResumed && m.Applied {
			resumed++
		}
	}
	sameRuns(t, g.run(t), want)
	if resumed != len(blocks) {
		t.Fatalf("%d participants resumed round %d, want all %d", resumed, onDisk.Round, len(blocks))
	}
}
