package seal

import (
	"testing"
)

// The per-value costs of the BGV scheme on full chunks; b.ReportMetric
// prints microseconds and bytes per value next to Go's ns/op.
func benchKey(b *testing.B) (*BGV, *BGVKey, []float64) {
	s, err := NewBGV()
	if err != nil {
		b.Fatal(err)
	}
	k, err := s.NewKey([32]byte{1})
	if err != nil {
		b.Fatal(err)
	}
	vals := make([]float64, s.ChunkLen())
	for i := range vals {
		vals[i] = Quantize(float64(i%97) / 7)
	}
	return s, k, vals
}

func perValue(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(b.N*n), "us/value")
}

func BenchmarkBGVEncrypt(b *testing.B) {
	s, k, vals := benchKey(b)
	var c Chunk
	for b.Loop() {
		c, _ = k.Seal(vals)
	}
	perValue(b, s.ChunkLen())
	b.ReportMetric(float64(s.WireSize(c))/float64(s.ChunkLen()), "bytes/value")
}

func BenchmarkBGVDecrypt(b *testing.B) {
	s, k, vals := benchKey(b)
	c, _ := k.Seal(vals)
	for b.Loop() {
		if _, err := k.Open(c); err != nil {
			b.Fatal(err)
		}
	}
	perValue(b, s.ChunkLen())
}

func BenchmarkBGVAdd(b *testing.B) {
	s, k, vals := benchKey(b)
	c, _ := k.Seal(vals)
	acc := s.Clone(c)
	for b.Loop() {
		if err := s.Add(acc, c); err != nil {
			b.Fatal(err)
		}
	}
	perValue(b, s.ChunkLen())
	b.ReportMetric(float64(s.WireSize(acc))/float64(s.ChunkLen()), "bytes/value")
}
