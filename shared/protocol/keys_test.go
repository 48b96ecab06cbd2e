package protocol

import (
	"math"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// keyFeds runs the same federation with the shared key and with threshold
// keys and returns both.
func keyFeds(t *testing.T, cfg Config, clients, groups int) (shared, thr *fed) {
	t.Helper()
	d := testData(60, 6, 3)
	blocks := gridBlocks(d, groups, clients/groups)
	bgv, err := seal.ByName("bgv")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := seal.ThresholdScheme()
	if err != nil {
		t.Fatal(err)
	}
	shared = newFedScheme(t, blocks, cfg, bgv)
	cfg.Keys = KeysThreshold
	thr = newFedScheme(t, blocks, cfg, ts)
	return shared, thr
}

// sameRounds fails unless both runs recorded the same rounds, bit for bit.
func sameRounds(t *testing.T, a, b []RoundMetrics) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d rounds against %d", len(a), len(b))
	}
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	for i := range a {
		if !same(a[i].Primal, b[i].Primal) || !same(a[i].Dual, b[i].Dual) || !same(a[i].Gamma, b[i].Gamma) || !same(a[i].HeldAcc, b[i].HeldAcc) {
			t.Fatalf("round %d: shared key P=%v D=%v gamma=%v, threshold keys P=%v D=%v gamma=%v",
				a[i].Round, a[i].Primal, a[i].Dual, a[i].Gamma, b[i].Primal, b[i].Dual, b[i].Gamma)
		}
	}
}

// TestThresholdSameAsShared: HyFDCA's default step with 2-of-3 threshold
// keys over four participants trains to the same rounds as the shared key,
// bit for bit.
func TestThresholdSameAsShared(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1}
	sh, thr := keyFeds(t, cfg, 4, 2)
	want := sh.run(t)
	got := thr.run(t)
	sameRounds(t, want, got)
	for i, v := range sh.coord.W() {
		if math.Float64bits(v) != math.Float64bits(thr.coord.W()[i]) {
			t.Fatalf("w[%d] = %v with threshold keys, %v with the shared key", i, thr.coord.W()[i], v)
		}
	}
	last := got[len(got)-1]
	t.Logf("final P = %.12g; bytes in/out a round: shared %d/%d, threshold %d/%d", last.Primal,
		want[len(want)-1].BytesIn, want[len(want)-1].BytesOut, last.BytesIn, last.BytesOut)
}
