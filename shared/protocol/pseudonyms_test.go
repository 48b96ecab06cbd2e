package protocol

import (
	"slices"
	"testing"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// TestOPRFPseudonymsTrainTheSameModel: with OPRF pseudonyms every test
// partition yields the same sample groups, slots and model, bit for bit,
// as with keyed pseudonyms.
func TestOPRFPseudonymsTrainTheSameModel(t *testing.T) {
	d := testData(200, 8, 5)
	for _, tc := range []struct {
		name   string
		blocks []partition.Block
		cfg    Config
	}{
		{"grid 3x2", gridBlocks(d, 3, 2), Config{Lambda: 1e-2, Inner: 8, Rounds: 10, Fraction: 0.7, Seed: 3}},
		{"vertical", gridBlocks(d, 1, 3), Config{Lambda: 1e-2, Inner: 8, Rounds: 10}},
		{"horizontal", gridBlocks(d, 4, 1), Config{Lambda: 1e-2, Inner: 8, Rounds: 10}},
		{"paper grid", gridBlocks(d, 2, 2), Config{Lambda: 1e-2, Step: StepPaper, Inner: 4, Gamma: 0.5, Rounds: 10, Seed: 3}},
		{"one participant", gridBlocks(d, 1, 1), Config{Lambda: 1e-2, Inner: 8, Rounds: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keyed := newFed(t, tc.blocks, tc.cfg)
			h0 := keyed.run(t)
			cfg := tc.cfg
			cfg.Pseudonyms = PseudonymsOPRF
			byOPRF := newFed(t, tc.blocks, cfg)
			sameHistory(t, h0, byOPRF.run(t))
			for k := range tc.blocks {
				c0, c1 := keyed.coord.clients[k], byOPRF.coord.clients[k]
				if !equalInts(c0.slots, c1.slots) || !equalInts(c0.groups, c1.groups) {
					t.Fatalf("participant %d: slots %v groups %v, by OPRF %v %v", k, c0.slots, c0.groups, c1.slots, c1.groups)
				}
				for i, p := range c1.hello.Pseudonyms {
					if p == c0.hello.Pseudonyms[i] {
						t.Fatalf("participant %d's sample %d has the same pseudonym both ways", k, i)
					}
				}
			}
			w0, w1 := keyed.coord.Model().W, byOPRF.coord.Model().W
			for j := range w0 {
				if !sameBits(w0[j], w1[j]) {
					t.Fatalf("weight %d: %v, by OPRF %v", j, w0[j], w1[j])
				}
			}
		})
	}
}

// TestOPRFPhaseAgainAfterADrop: a participant that leaves in the middle of
// the pseudonym phase (here a member, while the others blind) makes it
// start afresh, with a new key, once it is back; the federation then
// trains as with keyed pseudonyms.
func TestOPRFPhaseAgainAfterADrop(t *testing.T) {
	d := testData(160, 8, 6)
	blocks := gridBlocks(d, 2, 2)
	cfg := Config{Lambda: 1e-2, Inner: 6, Rounds: 8}
	h0 := newFed(t, blocks, cfg).run(t)
	cfg.Pseudonyms = PseudonymsOPRF
	f := newFed(t, blocks, cfg)
	setups, dropped := 0, false
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if !toServer && m.Kind == KindOPRFSetup && k == 0 {
			setups++
		}
	}
	f.mem.Hook = func() {
		switch {
		case !dropped && f.coord.Phase() == PhaseOPRFBlind:
			f.mem.Drop(1)
			dropped = true
		case dropped && !f.mem.Connected(1):
			if err := f.mem.Join(1); err != nil {
				t.Fatal(err)
			}
		}
	}
	sameHistory(t, h0, f.run(t))
	if setups != 2 {
		t.Fatalf("%d pseudonym phases, want 2", setups)
	}
}

// TestOPRFRestore: a restored federation with OPRF pseudonyms keeps them
// (the checkpoint holds them; the returning hellos carry none) and takes
// back a participant with the same block, not one with another.
func TestOPRFRestore(t *testing.T) {
	d := testData(160, 8, 6)
	blocks := gridBlocks(d, 2, 2)
	cfg := Config{Lambda: 1e-2, Inner: 6, Rounds: 12, Pseudonyms: PseudonymsOPRF, Tol: NoTol}
	crashed := newFed(t, blocks, cfg)
	cp := crashAt(t, crashed, 5, PhaseGram)
	c, err := Restore(seal.Plaintext{Len: 64}, cp.Setup, cp.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	for k := range blocks {
		if got, want := c.clients[k].hello.Pseudonyms, crashed.coord.clients[k].hello.Pseudonyms; !slices.Equal(got, want) || len(got) == 0 {
			t.Fatalf("participant %d: %d pseudonyms restored, %d before", k, len(got), len(want))
		}
	}
	// Another block of the same shape is refused by its digest.
	other := blocks[2]
	other.IDs = slices.Clone(other.IDs)
	other.IDs[0] += "x"
	p, err := NewParticipant(&other, testSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.AlignByOPRF()
	if err := c.connect(2, p.Hello()); ErrorCode(err) != CodeSchema {
		t.Fatalf("another block returning: %v", err)
	}
	g := newFed(t, blocks, cfg)
	g.coord = c
	if h := g.run(t); len(h) != cfg.Rounds+1 || !g.coord.Finished() {
		t.Fatalf("the restored run recorded %d rounds", len(h))
	}
}

// TestOPRFBatches: a block of more ids than one proof covers goes in
// several batches (here of 7 ids), and the federation trains as with
// keyed pseudonyms.
func TestOPRFBatches(t *testing.T) {
	defer func(b int) { oprfBatch = b }(oprfBatch)
	oprfBatch = 7
	d := testData(100, 6, 2)
	blocks := gridBlocks(d, 2, 2) // 50 ids each: 8 batches
	cfg := Config{Lambda: 1e-2, Inner: 6, Rounds: 5}
	h0 := newFed(t, blocks, cfg).run(t)
	cfg.Pseudonyms = PseudonymsOPRF
	f := newFed(t, blocks, cfg)
	batches := 0
	f.mem.Observe = func(toServer bool, _ int, m *Message) {
		if toServer && m.Kind == KindOPRFBlinded {
			batches += len(m.Keys)
		}
	}
	sameHistory(t, h0, f.run(t))
	if batches != 4*8 {
		t.Fatalf("%d batches, want 8 of each of 4 participants", batches)
	}
}

// TestOPRFCommitteeTakesNativeFirst: participants whose hello says they run
// in a browser tab join the committee only when too few native ones are
// there.
func TestOPRFCommitteeTakesNativeFirst(t *testing.T) {
	d := testData(100, 6, 2)
	blocks := gridBlocks(d, 2, 2)
	cfg := Config{Lambda: 1e-2, Inner: 6, Rounds: 2, Pseudonyms: PseudonymsOPRF}
	f := newFed(t, blocks, cfg)
	for qi := range f.mem.queue { // participants 0 and 1 are tabs
		if e := &f.mem.queue[qi]; e.Kind == EventJoin && e.From < 2 {
			e.Msg.Browser = true
		}
	}
	var members []int
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if !toServer && m.Kind == KindOPRFSetup && k == 0 {
			members = m.OPRF.Members
		}
	}
	f.run(t)
	if !slices.Equal(members, []int{0, 2, 3}) {
		t.Fatalf("committee %v, want the two native participants and the first tab", members)
	}
}
