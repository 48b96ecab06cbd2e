package seal

// MaxSealedWireSize is the most bytes a chunk of n values that a Key of
// scheme s seals takes on the wire, or a sum of such chunks that keeps its
// summands' seeds (at most MaxSumSeeds): every chunk a participant sends.
// Larger sums travel whole, and only the server forms them. A scheme whose
// chunks do not span (threshold keys) seals ChunkLen values whatever n. 0
// for a scheme it does not know.
func MaxSealedWireSize(s Scheme, n int) int {
	n = min(max(n, 1), s.ChunkLen())
	switch s := s.(type) {
	case *BGV:
		return s.wireLen(MaxSumSeeds, n)
	case *ThresholdBGV:
		return s.wireLen()
	case Plaintext:
		return chunkHeader + 2 + 8*n
	}
	return 0
}
