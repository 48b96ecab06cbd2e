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
