package seal

import (
	"fmt"
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

// BenchmarkBGVOpenSum: opening a sum of n fresh chunks as it travels, with
// c1 as the n seeds (the opener expands them) against c1 held (as it was
// sent before seed sums); and decoding it from the wire, both ways (the
// server decodes every upload and sum).
func BenchmarkBGVOpenSum(b *testing.B) {
	s, k, vals := benchKey(b)
	for _, n := range []int{4, MaxSumSeeds} {
		sum, _ := k.Seal(vals)
		for range n - 1 {
			c, _ := k.Seal(vals)
			if err := s.Add(sum, c); err != nil {
				b.Fatal(err)
			}
		}
		ct, _ := s.Ciphertext(sum)
		held, _ := s.WrapCiphertext(ct)
		for _, v := range []struct {
			name string
			c    Chunk
		}{{"seeds", sum}, {"held", held}} {
			wire, _ := s.Marshal(v.c)
			b.Run(fmt.Sprintf("open-%s-%d", v.name, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := k.Open(v.c); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("decode-%s-%d", v.name, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Unmarshal(wire); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(wire)), "bytes")
			})
		}
	}
}

// BenchmarkBGVExpand: drawing one c1 from its seed.
func BenchmarkBGVExpand(b *testing.B) {
	s, _, _ := benchKey(b)
	c1 := s.params.RingQ().NewPoly()
	seed := make([]byte, seedLen)
	for b.Loop() {
		s.expand(seed, c1)
	}
}

// BenchmarkBGVSmallChunk: sealing and opening a chunk of 48 values (a
// sample group's at 5,000 participants, quadrants:1250), and opening the
// sum of its group's 4 holders' chunks: what does not depend on the values
// (the seed's expansion, the key product, the inverse transform) is most
// of it, so a small chunk costs nearly what a full one does.
func BenchmarkBGVSmallChunk(b *testing.B) {
	s, k, vals := benchKey(b)
	vals = vals[:48]
	b.Run("seal-48", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Seal(vals); err != nil {
				b.Fatal(err)
			}
		}
	})
	one, _ := k.Seal(vals)
	sum := s.Clone(one)
	for range 3 {
		c, _ := k.Seal(vals)
		if err := s.Add(sum, c); err != nil {
			b.Fatal(err)
		}
	}
	for _, v := range []struct {
		name string
		c    Chunk
	}{{"open-48", one}, {"open-48-sum-of-4", sum}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := k.Open(v.c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
