package protocol

import (
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// TestClientsReceiveOnlyTheirOwnSlots records every sealed vector sent to a
// client and opens it: no slot of a sample the client does not hold may
// carry a value. (With the plaintext scheme anyone can open them; with real
// encryption only participants can, which is why this matters.) Under
// the block rule a client also receives the summed Grams of its updating
// groups' picks: only chunks of the Grams of groups it holds.
func TestClientsReceiveOnlyTheirOwnSlots(t *testing.T) {
	d := testData(200, 8, 12)
	for _, step := range []string{StepBlock, StepPaper} {
		f := newFed(t, gridBlocks(d, 2, 2), Config{Lambda: 1e-2, Step: step, Inner: 10, Fraction: 0.7, Rounds: 20, Seed: 3})
		checkOwnSlots(t, f, step)
	}
}

// TestClientsReceiveOnlyTheirOwnSlotsAt5000: the same at the shape of
// quadrants:1250, 1,250 sample groups of 4 holders each (5,000 clients),
// two rounds of the default step, with chunks of BGV's 4,096 slots.
func TestClientsReceiveOnlyTheirOwnSlotsAt5000(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 clients in process")
	}
	f := newFedScheme(t, gridBlocks(testData(5000, 8, 12), 1250, 4), Config{Lambda: 1e-2, Inner: 4, Rounds: 2, Seed: 3}, seal.Plaintext{Len: 4096})
	checkOwnSlots(t, f, StepBlock)
	if len(f.coord.groups) != 1250 {
		t.Fatalf("%d sample groups, want 1,250", len(f.coord.groups))
	}
}

// checkOwnSlots runs f, opening every sealed vector the clients receive.
func checkOwnSlots(t *testing.T, f *fed, step string) {
	t.Helper()
	key := seal.PlainKey{S: f.coord.Scheme().(seal.Plaintext)}
	checked, grams := 0, 0
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if toServer {
			return
		}
		own := map[int]bool{}
		if len(f.coord.clients) > k && f.coord.clients[k].slots != nil {
			for _, s := range f.coord.clients[k].slots {
				own[s] = true
			}
		}
		if m.Kind == KindGramSum {
			per := gramChunks(blockPicks(f.coord.cfg), key.S.ChunkLen())
			for ci := range m.Sealed {
				if _, ok := f.coord.clients[k].localGroup[ci/per]; !ok {
					t.Fatalf("%s: client %d got the Gram chunk %d of group %d, which it does not hold", step, k, ci, ci/per)
				}
				grams++
			}
			return
		}
		for _, v := range []seal.Vec{m.Sealed, m.Alpha} {
			for ci, c := range v {
				vals, err := key.Open(c)
				if err != nil {
					t.Fatal(err)
				}
				for off, x := range vals {
					slot := ci*key.S.ChunkLen() + off
					if x != 0 && !own[slot] {
						t.Fatalf("%s: client %d got a %s message carrying slot %d it does not hold", step, k, m.Kind, slot)
					}
				}
				checked++
			}
		}
	}
	f.run(t)
	if checked == 0 || (step == StepBlock) != (grams > 0) {
		t.Fatalf("%s: %d sealed vectors and %d Gram chunks observed", step, checked, grams)
	}
}
