// Package mix holds SplitMix64's finaliser, the one cheap bijective hash
// the federation uses where a draw must follow from a few integers alone
// (a round, a group, a client) rather than from a generator's state.
package mix

// SplitMix64 is SplitMix64's finaliser: a fixed, well-spread bijection of
// the 64-bit words.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
