package mix

import "testing"

// TestSplitMix64 pins the first outputs of SplitMix64 seeded with 0 (the
// reference generator's state advances by the same constant the finaliser
// adds): picks and buckets derived from it stay where they were.
func TestSplitMix64(t *testing.T) {
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	for i, w := range want {
		if got := SplitMix64(uint64(i) * 0x9e3779b97f4a7c15); got != w {
			t.Errorf("SplitMix64 at step %d: %#x, want %#x", i, got, w)
		}
	}
}
