package protocol

import (
	"math"
	"sync"
	"testing"

	"github.com/hyfed/hyfed/shared/partition"
)

// TestSoleHolderKeepsItsGram: a sample group with one holder (a horizontal
// partition) exchanges no Gram: no gram-part and no gram-sum message
// carries a chunk, and the federation still converges with a dual that
// never falls. Its holder solves on its rows when they are sparse and
// against the Gram it computes when they are dense: the two forms are one
// model, so the runs agree to the rounding for the first rounds.
func TestSoleHolderKeepsItsGram(t *testing.T) {
	d := testData(400, 8, 21)
	dense := gridBlocks(d, 4, 1)
	sparse := make([]partition.Block, len(dense))
	for k, b := range dense {
		sparse[k] = b
		sparse[k].X = b.X.Sparsify()
	}
	cfg := Config{Lambda: 1e-2, Step: StepBlock, SharedDirections: 4, Inner: 60, Fraction: 0.8, Rounds: 40, Seed: 3}
	runs := map[string][]RoundMetrics{}
	for name, blocks := range map[string][]partition.Block{"dense": dense, "sparse": sparse} {
		f := newFed(t, blocks, cfg)
		var mu sync.Mutex
		f.mem.Observe = func(toServer bool, k int, m *Message) {
			mu.Lock()
			defer mu.Unlock()
			if (m.Kind == KindGramPart || m.Kind == KindGramSum) && len(m.Sealed) > 0 {
				t.Errorf("%s: a %s message to or from client %d carries %d Gram chunks of groups it holds alone", name, m.Kind, k, len(m.Sealed))
			}
		}
		h := f.run(t)
		checkDualNeverFalls(t, h, name)
		p := f.mem.Participant(0)
		if got := p.onRows(0, p.groupTrain[0][:cfg.Inner]); got != (name == "sparse") {
			t.Errorf("%s: client 0 solves on its rows: %v", name, got)
		}
		runs[name] = h
	}
	pstar := optimum(t, d, cfg.Lambda)
	for _, name := range []string{"dense", "sparse"} {
		h := runs[name]
		if rel := (h[len(h)-1].Primal - pstar) / pstar; !(rel < 1e-3) {
			t.Errorf("%s: relative loss %v after %d rounds", name, rel, cfg.Rounds)
		}
	}
	for r := 1; r <= 5; r++ {
		a, b := runs["dense"][r].Primal, runs["sparse"][r].Primal
		if math.Abs(a-b) > 1e-6*math.Abs(a) {
			t.Errorf("round %d: primal %v on the Gram, %v on the rows", r, a, b)
		}
	}
}
