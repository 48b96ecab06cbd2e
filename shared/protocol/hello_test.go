package protocol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// runWithLiar runs four honest blocks and a lying one (registered first)
// under an organizer's start: the start refuses the liar alone, named,
// and a second start runs the honest four to the end.
func runWithLiar(t *testing.T, liar partition.Block) *fed {
	t.Helper()
	d := testData(80, 6, 3)
	blocks := append([]partition.Block{liar}, gridBlocks(d, 2, 2)...)
	f := newFed(t, blocks, Config{Lambda: 1e-2, Rounds: 5, Seed: 1})
	f.coord.HoldStart()
	var refused []int
	f.mem.OnError = func(k int, err error) { refused = append(refused, k) }
	if err := Serve(context.Background(), f.coord, f.mem, nil); !errors.Is(err, ErrIdle) {
		t.Fatalf("registration: %v", err)
	}
	r := f.coord.Step(Input{Kind: InputStart})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := f.mem.Deliver(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if f.coord.Started() {
		t.Fatal("the federation started with the liar")
	}
	notes := strings.Join(f.coord.Notices(), "\n")
	if !strings.Contains(notes, "participant 0") || strings.Contains(notes, "participant 1") {
		t.Fatalf("notices %q: want the liar (participant 0) named alone", notes)
	}
	if info := f.coord.Clients(); info[0].Refused == "" || info[1].Refused != "" {
		t.Fatalf("refused: %q, %q", info[0].Refused, info[1].Refused)
	}
	r = f.coord.Step(Input{Kind: InputStart})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := f.mem.Deliver(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := Serve(context.Background(), f.coord, f.mem, nil); err != nil {
		t.Fatal(err)
	}
	if h := f.coord.History(); len(h) != 6 || h[5].Partial {
		t.Fatalf("%d rounds recorded after the second start", len(h))
	}
	return f
}

// TestHelloClaimingFeaturesRefusedAlone: a first hello that claims a
// million features does not become the federation's feature count: the
// start refuses it alone and the others train.
func TestHelloClaimingFeaturesRefusedAlone(t *testing.T) {
	liar := partition.Block{NumFeatures: 1_000_000, Features: []int{0}, IDs: []string{"x"}, Y: []float64{1}, Heldout: []bool{false},
		X: dataset.NewDense(1, 1)}
	liar.X.Data[0] = 1
	f := runWithLiar(t, liar)
	if f.coord.numFeatures != 6 {
		t.Fatalf("feature count %d", f.coord.numFeatures)
	}
}

// TestHelloFlippingAHeldOutFlagRefusedAlone: a hello that holds the samples
// of a group with one held-out flag flipped is refused alone: the flag the
// other holders give stands.
func TestHelloFlippingAHeldOutFlagRefusedAlone(t *testing.T) {
	d := testData(80, 6, 3)
	b := gridBlocks(d, 2, 2)[0] // group 0, features 0-2, as block 0 holds them: a second holder
	liar := partition.Block{NumFeatures: b.NumFeatures, Features: b.Features, IDs: b.IDs, Y: b.Y, X: b.X,
		Heldout: append([]bool(nil), b.Heldout...)}
	liar.Heldout[0] = !liar.Heldout[0]
	runWithLiar(t, liar)
}

// TestHelloAboveMaxFeaturesRefused: a hello may not ask for more features
// than a federation takes.
func TestHelloAboveMaxFeaturesRefused(t *testing.T) {
	c, err := NewCoordinator(Config{Clients: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := Message{Kind: KindHello, Pseudonyms: []string{"a"}, Heldout: []bool{false}, Features: []int{0}, NumFeatures: MaxFeatures + 1}
	if err := c.connect(0, h); err == nil || ErrorCode(err) != CodeBadField {
		t.Fatalf("got %v", err)
	}
}

// TestFeatureHeldTwiceRefusesBoth: a participant that joins twice with
// the same block, or claims samples another holds with the same
// features, is refused together with the participant it collides with,
// both named; the others stay, and a federation of dealt entries shares
// features by design.
func TestFeatureHeldTwiceRefusesBoth(t *testing.T) {
	d := testData(120, 8, 4)
	blocks := gridBlocks(d, 2, 2) // 0: group 0 features 0-3, 1: group 0 features 4-7, 2 and 3: group 1
	claim := blocks[0]            // group 0's first features, on group 1's samples
	claim.IDs = slices.Clone(blocks[2].IDs)
	claim.Y = slices.Clone(blocks[2].Y)
	claim.Heldout = slices.Clone(blocks[2].Heldout)
	claim.X = dataset.NewDense(len(claim.IDs), blocks[0].X.Cols)
	for _, tc := range []struct {
		name   string
		extra  partition.Block
		victim int
		dealt  bool
	}{
		{"the same block twice", blocks[1], 1, false},
		{"samples another holds", claim, 2, false},
		{"dealt entries", blocks[1], -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append(slices.Clone(blocks), tc.extra)
			cfg := Config{Lambda: 1e-2, Rounds: 2, Seed: 1, Clients: len(all), DealtEntries: tc.dealt}
			c, err := NewCoordinator(cfg, seal.Plaintext{Len: 64})
			if err != nil {
				t.Fatal(err)
			}
			c.SetNamer(func(k int) string { return fmt.Sprintf("P%d", k) })
			var r Ready
			for k := range all {
				p, err := NewParticipant(&all[k], testSecret, nil)
				if err != nil {
					t.Fatal(err)
				}
				r = c.Step(Input{Kind: InputJoin, From: k, Msg: p.Hello()})
			}
			liar := len(all) - 1
			refused := map[int]string{}
			for _, e := range r.Envelopes {
				if e.Msg.Kind == KindError {
					refused[e.To] = e.Msg.Err
				}
			}
			if tc.victim < 0 {
				if len(refused) != 0 || !c.Started() {
					t.Fatalf("dealt entries refused: %v", refused)
				}
				return
			}
			if len(refused) != 2 || refused[liar] == "" || refused[tc.victim] == "" {
				t.Fatalf("refused %v, want P%d and P%d", refused, tc.victim, liar)
			}
			for _, why := range refused {
				if !strings.Contains(why, fmt.Sprintf("P%d", tc.victim)) || !strings.Contains(why, fmt.Sprintf("P%d", liar)) {
					t.Fatalf("refusal %q does not name both", why)
				}
			}
		})
	}
}
