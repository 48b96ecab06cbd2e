package protocol

import (
	"strings"
	"testing"
)

// TestBiasDeclarationIsChecked: the block rule enters the declared bias
// feature's part of the Grams without asking the holders; a participant
// whose block holds that feature with another value refuses the setup and
// names the sample, and a declaration beyond the features is refused.
func TestBiasDeclarationIsChecked(t *testing.T) {
	d := testData(80, 6, 4) // the last feature is 1
	f := newFed(t, gridBlocks(d, 1, 2), Config{Lambda: 1e-2, Inner: 5, Fraction: 1, Rounds: 2, Seed: 1})
	f.run(t)
	p := f.mem.Participant(1) // holds features 3, 4, 5
	setup := *p.setup
	for _, tc := range []struct {
		feature int
		value   float64
		want    string
	}{
		{5, 2, "holds 1 in the bias feature 5, not the federation's 2"},
		{6, 1, "bias feature 6 beyond the block's 6 features"},
	} {
		s := setup
		s.SendNorms = false
		s.Config.BiasFeature, s.Config.BiasValue = tc.feature, tc.value
		_, err := p.Handle(Message{Kind: KindSetup, Setup: &s})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bias feature %d = %v: error %v, want %q", tc.feature, tc.value, err, tc.want)
		}
	}
	s := setup
	s.SendNorms = false
	s.Config.BiasFeature, s.Config.BiasValue = 5, 1
	if _, err := p.Handle(Message{Kind: KindSetup, Setup: &s}); err != nil {
		t.Errorf("the true bias declared: %v", err)
	}
}

// TestBlockPicksFillTheGramsChunks: the picks fill the chunks H's Gram
// takes (the coordinator's layout) and no more, up to MaxBlockPicks.
func TestBlockPicksFillTheGramsChunks(t *testing.T) {
	for _, c := range []struct{ inner, want int }{
		{67, 90}, {90, 90}, {91, 127}, {225, 238}, {449, 452}, {512, 512}, {2000, 512}, {1, 90},
	} {
		if got := BlockPicks(c.inner); got != c.want {
			t.Errorf("BlockPicks(%d) = %d, want %d", c.inner, got, c.want)
		}
	}
	if got := fillPicks(5, 64); got != 10 {
		t.Errorf("fillPicks(5, 64) = %d, want 10", got)
	}
	for _, cl := range []int{16, 64, 4096} {
		for h := 1; h <= MaxBlockPicks; h++ {
			f := fillPicks(h, cl)
			if f < h || f > MaxBlockPicks || gramChunks(f, cl) != gramChunks(h, cl) ||
				f < MaxBlockPicks && gramChunks(f+1, cl) == gramChunks(h, cl) {
				t.Fatalf("fillPicks(%d, %d) = %d: %d chunks for %d", h, cl, f, gramChunks(f, cl), gramChunks(h, cl))
			}
		}
	}
}
