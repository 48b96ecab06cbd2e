package threshold

import (
	"math"
	"testing"

	"github.com/tuneinsight/lattigo/v5/core/rlwe"

	"github.com/hyfed/hyfed/shared/seal"
)

// TestOpenExact: chunks sealed under the collective key by several parties,
// added by the server's seal.BGV.Add, switched with the shares of any t
// members to any participant, open to the plaintext sums bit for bit, for
// every active subset.
func TestOpenExact(t *testing.T) {
	for _, tc := range []struct{ n, t, sealers int }{{2, 2, 2}, {3, 2, 3}, {5, 3, 2}, {4, 4, 1}} {
		t.Run("", func(t *testing.T) {
			f, parties := federation(t, tc.n, tc.t)
			t.Logf("%d-of-%d: fresh noise sd %.0f, opened sum of %d: sd %.0f of bound %.0f, max sums %d",
				tc.t, tc.n, f.FreshNoiseStd(), tc.sealers, f.NoiseStd(tc.sealers), f.NoiseBound(), f.MaxSums())
			s := f.Scheme()
			want := make([]float64, s.ChunkLen())
			var sum seal.Chunk
			for i := 0; i < tc.sealers; i++ {
				sl, err := parties[i%tc.n].Sealer()
				if err != nil {
					t.Fatal(err)
				}
				vals := values(s.ChunkLen(), i+1)
				c, err := sl.Seal(vals)
				if err != nil {
					t.Fatal(err)
				}
				for j := range vals {
					want[j] += vals[j]
				}
				if sum == nil {
					sum = c
				} else if err := s.Add(sum, c); err != nil {
					t.Fatal(err)
				}
			}
			m := byID(parties)
			for _, active := range subsets(f.Members(), tc.t) {
				for _, target := range parties {
					got := openFor(t, f, m, sum, active, target)
					if i := equalBits(got, want); i >= 0 {
						t.Fatalf("active %v, target %d: slot %d = %v, want %v", active, target.ID(), i, got[i], want[i])
					}
				}
			}
		})
	}
}

// phaseNoise returns the noise of ct under sk against the plaintext vals:
// the centered coefficients of c0 + c1*s - m/t.
func phaseNoise(t testing.TB, f *Federation, c seal.Chunk, sk *rlwe.SecretKey, vals []float64) []float64 {
	t.Helper()
	ct, err := f.s.Ciphertext(c)
	if err != nil {
		t.Fatal(err)
	}
	rq := f.params.RingQ()
	ph := rq.NewPoly()
	rq.MulCoeffsMontgomery(ct.Value[1], sk.Value.Q, ph)
	rq.Add(ph, ct.Value[0], ph)
	rq.INTT(ph, ph)
	m := rq.NewPoly()
	if err := f.s.EncodeScaled(vals, m); err != nil {
		t.Fatal(err)
	}
	rq.Sub(ph, m, ph)
	q := f.params.Q()[0]
	out := make([]float64, len(ph.Coeffs[0]))
	for i, v := range ph.Coeffs[0] {
		if v > q/2 {
			out[i] = -float64(q - v)
		} else {
			out[i] = float64(v)
		}
	}
	return out
}

func stddev(v []float64) float64 {
	s, sq := 0.0, 0.0
	for _, x := range v {
		s += x
		sq += x * x
	}
	n := float64(len(v))
	return math.Sqrt(sq/n - (s/n)*(s/n))
}

// TestNoiseModel: the measured noise of fresh chunks under the collective
// key and of switched sums matches the model MaxSums rests on (within 10%).
func TestNoiseModel(t *testing.T) {
	for _, tc := range []struct{ n, t int }{{3, 2}, {8, 3}} {
		f, parties := federation(t, tc.n, tc.t)
		// The collective secret, which no party holds: for the test only.
		s := rlwe.NewSecretKey(f.params)
		for _, p := range parties {
			f.params.RingQ().Add(s.Value.Q, p.sk.Value.Q, s.Value.Q)
		}
		sl, _ := parties[0].Sealer()
		vals := values(f.s.ChunkLen(), 3)
		for i := range vals {
			vals[i] = seal.Quantize(vals[i] / 4) // k times stays sealable
		}
		const k = 3
		var sum seal.Chunk
		var fresh []float64
		for i := 0; i < k; i++ {
			c, err := sl.Seal(vals)
			if err != nil {
				t.Fatal(err)
			}
			fresh = append(fresh, phaseNoise(t, f, c, s, vals)...)
			if sum == nil {
				sum = c
			} else {
				_ = f.s.Add(sum, c)
			}
		}
		for i := range vals {
			vals[i] *= k
		}
		target := parties[tc.n-1]
		sw, err := switchFor(t, f, byID(parties), sum, f.Members()[:tc.t], target)
		if err != nil {
			t.Fatal(err)
		}
		switched := phaseNoise(t, f, sw.Chunk, target.own.SecretKey(), vals)
		gotF, gotS := stddev(fresh), stddev(switched)
		t.Logf("%d-of-%d: fresh noise sd %.0f (model %.0f), switched sum of %d: %.0f (model %.0f); bound %.0f, max sums %d",
			tc.t, tc.n, gotF, f.FreshNoiseStd(), k, gotS, f.NoiseStd(k), f.NoiseBound(), f.MaxSums())
		if math.Abs(gotF/f.FreshNoiseStd()-1) > 0.1 || math.Abs(gotS/f.NoiseStd(k)-1) > 0.1 {
			t.Errorf("measured noise departs from the model by more than 10%%")
		}
	}
}
