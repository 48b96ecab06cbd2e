package threshold

import (
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/tuneinsight/lattigo/v5/core/rlwe"

	"github.com/hyfed/hyfed/shared/seal"
)

// sumChunks seals each of vals under sealers in turn, adds the chunks with
// the scheme's Add (as the server does) and returns the sum and the
// plaintext sums.
func sumChunks(t testing.TB, s seal.Scheme, keys []seal.Key, vals [][]float64) (seal.Chunk, []float64) {
	t.Helper()
	want := make([]float64, s.ChunkLen())
	var sum seal.Chunk
	for i, v := range vals {
		c, err := keys[i%len(keys)].Seal(v)
		if err != nil {
			t.Fatal(err)
		}
		for j := range v {
			want[j] += v[j]
		}
		if sum == nil {
			sum = c
		} else if err := s.Add(sum, c); err != nil {
			t.Fatal(err)
		}
	}
	return sum, want
}

// TestOpenExact: chunks sealed under the collective key by several parties,
// added by the server's seal.ThresholdBGV.Add, switched with the shares of
// any t members to any participant, open bit for bit to the plaintext sums
// and to what the shared-key scheme opens for the same chunks, for every
// active subset.
func TestOpenExact(t *testing.T) {
	shared := sharedScheme(t)
	sk, err := shared.NewKey([32]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ n, t, sealers int }{{2, 2, 2}, {3, 2, 3}, {5, 3, 2}, {4, 4, 1}} {
		t.Run(fmt.Sprintf("%d-of-%d", tc.t, tc.n), func(t *testing.T) {
			f, parties := federation(t, tc.n, tc.t)
			t.Logf("%d-of-%d: fresh noise sd %.0f, opened sum of %d: sd 2^%.1f of bound 2^%.1f, flood 2^%d, max sums %.2g",
				tc.t, tc.n, f.FreshNoiseStd(), tc.sealers, math.Log2(f.NoiseStd(tc.sealers)), math.Log2(f.NoiseBound()), f.FloodBits(), f.maxSums())
			var keys []seal.Key
			var vals [][]float64
			for i := 0; i < tc.sealers; i++ {
				sl, err := parties[i%tc.n].Sealer()
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, sl)
				vals = append(vals, values(f.Scheme().ChunkLen(), i+1))
			}
			sum, want := sumChunks(t, f.Scheme(), keys, vals)
			sharedSum, _ := sumChunks(t, shared, []seal.Key{sk}, vals)
			sharedGot, err := sk.Open(sharedSum)
			if err != nil {
				t.Fatal(err)
			}
			if i := equalBits(sharedGot, want); i >= 0 {
				t.Fatalf("shared key: slot %d = %v, want %v", i, sharedGot[i], want[i])
			}
			m := byID(parties)
			for _, active := range subsets(f.Members(), tc.t) {
				for _, target := range parties {
					got := openFor(t, f, m, sum, active, target)
					if i := equalBits(got, sharedGot); i >= 0 {
						t.Fatalf("active %v, target %d: slot %d = %v, want %v", active, target.ID(), i, got[i], want[i])
					}
				}
			}
		})
	}
}

// TestOpenLongSum: a sum of 2,000 chunks sealed under the collective key
// of a 3-of-5 committee (small values, so the sum stays in the exact range)
// opens bit for bit to the plaintext sum and the shared-key scheme's.
func TestOpenLongSum(t *testing.T) {
	const k = 2000
	f, parties := federation(t, 5, 3)
	sl, _ := parties[1].Sealer()
	n := f.Scheme().ChunkLen()
	vals := make([][]float64, k)
	for i := range vals {
		v := values(n, i+1)
		for j := range v {
			v[j] = seal.Quantize(v[j] / 1000)
		}
		v[0], v[1] = 60, -60 // 2,000 x 60 = 120,000 < 2^17
		vals[i] = v
	}
	sum, want := sumChunks(t, f.Scheme(), []seal.Key{sl}, vals)
	shared := sharedScheme(t)
	sk, _ := shared.NewKey([32]byte{9})
	sharedSum, _ := sumChunks(t, shared, []seal.Key{sk}, vals)
	sharedGot, _ := sk.Open(sharedSum)
	if i := equalBits(sharedGot, want); i >= 0 {
		t.Fatalf("shared key: slot %d = %v, want %v", i, sharedGot[i], want[i])
	}
	got := openFor(t, f, byID(parties), sum, []PartyID{1, 4, 5}, parties[2])
	if i := equalBits(got, want); i >= 0 {
		t.Fatalf("slot %d = %v, want %v", i, got[i], want[i])
	}
	t.Logf("sum of %d: noise sd 2^%.1f, bound 2^%.1f, failure below 2^%.0f", k, math.Log2(f.NoiseStd(k)), math.Log2(f.NoiseBound()), f.FailureLog2(k))
}

// phaseNoise returns the noise of ct under sk against the plaintext vals:
// the centered coefficients of c0 + c1*s - m/t mod Q (CRT over both primes).
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
	return centered(f, ph.Coeffs)
}

// centered returns the integers in (-Q/2, Q/2] with the given residues.
func centered(f *Federation, rows [][]uint64) []float64 {
	xs := centeredBig(f, rows)
	out := make([]float64, len(xs))
	for j, x := range xs {
		out[j], _ = new(big.Float).SetInt(x).Float64()
	}
	return out
}

// centeredBig is centered, exactly.
func centeredBig(f *Federation, rows [][]uint64) []*big.Int {
	qs := f.params.Q()
	Q := big.NewInt(1)
	for _, q := range qs {
		Q.Mul(Q, new(big.Int).SetUint64(q))
	}
	half := new(big.Int).Rsh(Q, 1)
	// x = sum r_i (Q/q_i) ((Q/q_i)^-1 mod q_i) mod Q
	var basis []*big.Int
	for _, q := range qs {
		qi := new(big.Int).SetUint64(q)
		hat := new(big.Int).Div(Q, qi)
		inv := new(big.Int).ModInverse(new(big.Int).Mod(hat, qi), qi)
		basis = append(basis, hat.Mul(hat, inv))
	}
	out := make([]*big.Int, len(rows[0]))
	tmp := new(big.Int)
	for j := range out {
		x := new(big.Int)
		for i := range qs {
			x.Add(x, tmp.Mul(basis[i], tmp.SetUint64(rows[i][j])))
		}
		x.Mod(x, Q)
		if x.Cmp(half) > 0 {
			x.Sub(x, Q)
		}
		out[j] = x
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
// key and of switched sums matches the model MaxSums rests on (within 10%),
// with the default flooding (which dominates a switched chunk's noise) and
// with flooding of 2^1 (which shows the rest of a switching share's noise).
func TestNoiseModel(t *testing.T) {
	for _, tc := range []struct{ n, t, flood int }{{3, 2, 1}, {8, 3, 1}, {3, 2, 0}, {8, 4, 0}} {
		f, parties := federationWith(t, Config{Federation: "noise", Parties: ids(tc.n), Threshold: tc.t, FloodBits: tc.flood})
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
		switched := phaseNoise(t, f, sw.Chunk, target.own, vals)
		gotF, gotS := stddev(fresh), stddev(switched)
		t.Logf("%d-of-%d, flood 2^%d: fresh noise sd %.0f (model %.0f), switched sum of %d: %.4g (model %.4g); bound 2^%.1f, max sums %.3g",
			tc.t, tc.n, f.FloodBits(), gotF, f.FreshNoiseStd(), k, gotS, f.NoiseStd(k), math.Log2(f.NoiseBound()), f.maxSums())
		if math.Abs(gotF/f.FreshNoiseStd()-1) > 0.1 || math.Abs(gotS/f.NoiseStd(k)-1) > 0.1 {
			t.Errorf("measured noise departs from the model by more than 10%%")
		}
	}
}

// TestMaxSums: with the default flooding, every committee of 2 to 1024
// members at t = 2 and t = n/2 opens sums of at least 10^6 chunks (in
// fact above 10^28) with failure probability below 2^-40; the table of
// docs/encryption.md (go test -run MaxSums -v).
func TestMaxSums(t *testing.T) {
	s := thrScheme(t)
	t.Logf("%5s %5s %6s %10s %10s %14s %12s %10s %13s", "n", "t", "flood", "fresh sd", "MaxSums", "sd(10^6) bits", "fail(10^6)", "smudge(1)", "smudge(10^6)")
	for _, n := range []int{2, 3, 5, 8, 16, 32, 128, 1024} {
		ts := []int{2}
		if h := (n + 1) / 2; h > 2 {
			ts = append(ts, h)
		}
		for _, thr := range ts {
			f, err := New(s, Config{Federation: "sums", Parties: ids(n), Threshold: thr})
			if err != nil {
				t.Fatal(err)
			}
			const million = 1_000_000
			fail := f.FailureLog2(million)
			t.Logf("%5d %5d %6d %10.0f %10.2g %14.1f %12.0f %10.1f %13.1f", n, thr, f.FloodBits(), f.FreshNoiseStd(), f.maxSums(),
				math.Log2(f.NoiseStd(million)), fail, f.SmudgingLog2(1), f.SmudgingLog2(million))
			if f.MaxSums() < million || fail > -40 {
				t.Errorf("%d-of-%d: MaxSums %d, failure at 10^6 sums 2^%.0f", thr, n, f.MaxSums(), fail)
			}
		}
	}
	if _, err := New(s, Config{Federation: "x", Parties: ids(3), Threshold: 2, FloodBits: MaxFloodBits}); err == nil {
		t.Error("accepted flooding beyond the noise budget")
	}
}
