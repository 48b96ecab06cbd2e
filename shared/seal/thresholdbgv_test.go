package seal

import (
	"bytes"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
)

func thrScheme(t testing.TB) *ThresholdBGV {
	t.Helper()
	s, err := ThresholdScheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestThresholdBGVSecurity: Lattigo builds any parameter set it is given,
// so this checks the threshold set against the homomorphic-encryption
// standard's 128-bit table: log2(Q*P) within the bound for its ring degree,
// a uniform ternary secret and error of standard deviation at least 3.2
// (the table's assumptions), and the same ring degree and plaintext modulus
// as the shared-key set (so sums decode alike).
func TestThresholdBGVSecurity(t *testing.T) {
	s := thrScheme(t)
	p := s.Params()
	bound, ok := MaxLogQ128[p.LogN()]
	if !ok {
		t.Fatalf("no 128-bit bound for ring degree 2^%d", p.LogN())
	}
	t.Logf("ring degree 2^%d, log2 QP = %.9f (Q = %v, P = %v), 128-bit bound %d", p.LogN(), p.LogQP(), p.Q(), p.P(), bound)
	if p.LogQP() > float64(bound) {
		t.Errorf("log2 QP = %.4f exceeds the 128-bit bound %d at ring degree 2^%d", p.LogQP(), bound, p.LogN())
	}
	// Exactly: Q*P < 2^bound.
	qp := big.NewInt(1)
	for _, m := range append(p.Q(), p.P()...) {
		qp.Mul(qp, new(big.Int).SetUint64(m))
	}
	if qp.BitLen() > bound {
		t.Errorf("Q*P has %d bits, more than %d", qp.BitLen(), bound)
	}
	if xs, ok := p.Xs().(ring.Ternary); !ok || xs.P != 2.0/3 || xs.H != 0 {
		t.Errorf("secret distribution %#v, want uniform ternary", p.Xs())
	}
	if xe, ok := p.Xe().(ring.DiscreteGaussian); !ok || xe.Sigma < 3.2 {
		t.Errorf("error distribution %#v, want a Gaussian of sigma >= 3.2", p.Xe())
	}
	b, _ := NewBGV()
	if p.LogN() != b.Params().LogN() || p.PlaintextModulus() != b.Params().PlaintextModulus() {
		t.Error("ring degree or plaintext modulus differ from the shared-key set")
	}
	// The shared-key set is within the table too.
	if b.Params().LogQP() > float64(MaxLogQ128[b.Params().LogN()]) {
		t.Errorf("shared-key set: log2 QP = %.4f", b.Params().LogQP())
	}
}

// skSeal encrypts vals under sk with Lattigo's secret-key encryptor and
// EncodeScaled: a valid chunk of the threshold set for the tests.
func skSeal(t testing.TB, s *ThresholdBGV, sk *rlwe.SecretKey, vals []float64) Chunk {
	t.Helper()
	ct := bgv.NewCiphertext(s.params, 1, s.params.MaxLevel())
	ct.IsBatched = false
	if err := rlwe.NewEncryptor(s.params, sk).EncryptZero(ct); err != nil {
		t.Fatal(err)
	}
	m := s.params.RingQ().NewPoly()
	if err := s.EncodeScaled(vals, m); err != nil {
		t.Fatal(err)
	}
	s.params.RingQ().NTT(m, m)
	s.params.RingQ().Add(ct.Value[0], m, ct.Value[0])
	c, err := s.WrapCiphertext(ct)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestThresholdBGVOpenExact: a sum of chunks of the threshold set opens to
// the plaintext sum and to what the shared-key scheme opens for the same
// values, bit for bit, also after a trip over the wire.
func TestThresholdBGVOpenExact(t *testing.T) {
	s := thrScheme(t)
	sk, err := s.NewSecretKey([32]byte{3})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewBGV()
	bk, _ := b.NewKey([32]byte{4})
	n := s.ChunkLen()
	want := make([]float64, n)
	var sum, bsum Chunk
	for k := range 40 {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = Quantize(math.Sin(float64(i*13+k*7)) * 3000)
		}
		vals[0], vals[1] = MaxAbs/64, -MaxAbs/64
		for i := range vals {
			want[i] += vals[i]
		}
		c, bc := skSeal(t, s, sk, vals), mustSeal(t, bk, vals)
		if sum == nil {
			sum, bsum = c, bc
		} else {
			if err := s.Add(sum, c); err != nil {
				t.Fatal(err)
			}
			_ = b.Add(bsum, bc)
		}
	}
	wb, err := s.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.Unmarshal(wb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Open(sk, back)
	if err != nil {
		t.Fatal(err)
	}
	bgot, _ := bk.Open(bsum)
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) || math.Float64bits(got[i]) != math.Float64bits(bgot[i]) {
			t.Fatalf("slot %d: threshold set %v, shared key %v, plaintext %v", i, got[i], bgot[i], want[i])
		}
	}
	if len(wb) != s.WireSize(sum) || len(wb) != 8+4*n*8 {
		t.Errorf("wire size %d, WireSize %d", len(wb), s.WireSize(sum))
	}
}

func mustSeal(t testing.TB, k Key, vals []float64) Chunk {
	t.Helper()
	c, err := k.Seal(vals)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestThresholdBGVDecodeEdges: the 128-bit reconstruction decodes every
// plaintext residue m in (-t/2, t/2) under the largest noise e that
// decryption allows, |m + t e| <= (Q-1)/2, of either sign, and not one
// beyond it.
func TestThresholdBGVDecodeEdges(t *testing.T) {
	s := thrScheme(t)
	sk, _ := s.NewSecretKey([32]byte{5})
	Q := new(big.Int).Mul(new(big.Int).SetUint64(thrQ1), new(big.Int).SetUint64(thrQ2))
	T := new(big.Int).SetUint64(bgvT)
	tInv := new(big.Int).ModInverse(T, Q)
	halfQ := new(big.Int).Rsh(Q, 1)
	maxM := int64((bgvT - 1) / 2)
	ms := []int64{0, 1, -1, 123456789, -987654321, maxM, -maxM, maxM - 1}
	// The largest noise that opens m: floor(((Q-1)/2 - |m|)/t).
	largest := func(m int64) *big.Int {
		e := new(big.Int).Sub(halfQ, big.NewInt(absInt(m)))
		return e.Div(e, T)
	}
	rq := s.params.RingQ()
	// A chunk whose phase under sk is m t^-1 + e: c1 = 0, c0 = phase.
	chunk := func(ms []int64, es []*big.Int) Chunk {
		ct := bgv.NewCiphertext(s.params, 1, s.params.MaxLevel())
		ct.IsBatched = false
		x := new(big.Int)
		for j := range s.ChunkLen() {
			m, e := ms[j%len(ms)], es[j%len(es)]
			x.Mul(big.NewInt(m), tInv)
			x.Add(x, e)
			x.Mod(x, Q)
			for i, q := range []uint64{thrQ1, thrQ2} {
				ct.Value[0].Coeffs[i][j] = new(big.Int).Mod(x, new(big.Int).SetUint64(q)).Uint64()
			}
		}
		rq.NTT(ct.Value[0], ct.Value[0])
		c, err := s.WrapCiphertext(ct)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, m := range ms {
		// Against m's sign the noise could be larger still.
		for _, e := range []*big.Int{largest(m), new(big.Int).Neg(largest(m)), big.NewInt(0)} {
			got, err := s.Open(sk, chunk([]int64{m}, []*big.Int{e}))
			if err != nil {
				t.Fatal(err)
			}
			if want := float64(m) / fixedOne; got[0] != want || got[4095] != want {
				t.Fatalf("m = %d, e = %v: opened %v, want %v", m, e, got[0], want)
			}
		}
	}
	// One more than the largest noise, in m's direction, wraps.
	for _, m := range []int64{maxM, -maxM, 0} {
		e := new(big.Int).Add(largest(m), big.NewInt(1))
		if m < 0 {
			e.Neg(e)
		}
		got, _ := s.Open(sk, chunk([]int64{m}, []*big.Int{e}))
		if got[0] == float64(m)/fixedOne {
			t.Errorf("m = %d opened exactly beyond the noise bound", m)
		}
	}
}

func absInt(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestThresholdBGVWire: a chunk of one parameter set is never decoded or
// added as one of the other; every header field, length and coefficient
// (each against its own prime) is checked.
func TestThresholdBGVWire(t *testing.T) {
	s := thrScheme(t)
	sk, _ := s.NewSecretKey([32]byte{6})
	c := skSeal(t, s, sk, make([]float64, s.ChunkLen()))
	good, err := s.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewBGV()
	bk, _ := b.NewKey([32]byte{7})
	bc := mustSeal(t, bk, make([]float64, b.ChunkLen()))
	bsum := b.Clone(bc)
	_ = b.Add(bsum, bc)
	for _, x := range []Chunk{bc, bsum} {
		wire, _ := b.Marshal(x)
		if _, err := s.Unmarshal(wire); err == nil || !strings.Contains(err.Error(), "parameter set 2, want 3") {
			t.Errorf("threshold set decoded a shared-key chunk: %v", err)
		}
		if err := s.Add(c, x); err == nil {
			t.Error("threshold set added a shared-key chunk")
		}
		if err := b.Add(x, c); err == nil {
			t.Error("shared-key set added a threshold chunk")
		}
		if _, err := s.Marshal(x); err == nil {
			t.Error("threshold set marshalled a shared-key chunk")
		}
	}
	if _, err := b.Unmarshal(good); err == nil || !strings.Contains(err.Error(), "parameter set 3, want 2") {
		t.Errorf("shared-key set decoded a threshold chunk: %v", err)
	}
	if _, err := b.Marshal(c); err == nil {
		t.Error("shared-key set marshalled a threshold chunk")
	}
	if _, err := s.Open(sk, bc); err == nil {
		t.Error("opened a shared-key chunk with a threshold key")
	}
	le := func(v uint64) []byte {
		out := make([]byte, 8)
		for i := range out {
			out[i] = byte(v >> (8 * i))
		}
		return out
	}
	row1 := chunkHeader + s.ChunkLen()*8 // first coefficient mod q2 of c0
	for name, bad := range map[string][]byte{
		"magic":            patch(good, 0, 'x'),
		"version":          patch(good, 2, 2),
		"parameter set":    patch(good, 3, bgvID),
		"ring degree":      patch(good, 4, 13),
		"level":            patch(good, 5, 0),
		"elements":         patch(good, 6, 3),
		"flags":            patch(good, 7, flagSeeded),
		"short":            good[:len(good)-1],
		"long":             append(bytes.Clone(good), 0),
		"header":           good[:5],
		"q1 coefficient":   append(append(bytes.Clone(good[:chunkHeader]), le(thrQ1)...), good[chunkHeader+8:]...),
		"q2 coefficient":   append(append(bytes.Clone(good[:row1]), le(thrQ2)...), good[row1+8:]...),
		"q2 row, q1 value": append(append(bytes.Clone(good[:row1]), le(thrQ1-1)...), good[row1+8:]...),
	} {
		if _, err := s.Unmarshal(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	back, err := s.Unmarshal(good)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := s.Marshal(back)
	if !bytes.Equal(again, good) {
		t.Error("does not encode back")
	}
}

// FuzzThresholdUnmarshal: whatever arrives, the threshold set's decoder
// returns a chunk or an error, never panics, and what it accepts encodes
// back to the same bytes.
func FuzzThresholdUnmarshal(f *testing.F) {
	s, err := ThresholdScheme()
	if err != nil {
		f.Fatal(err)
	}
	sk, _ := s.NewSecretKey([32]byte{})
	good, _ := s.Marshal(skSeal(f, s, sk, make([]float64, s.ChunkLen())))
	f.Add(good)
	f.Add(good[:chunkHeader])
	b, _ := NewBGV()
	bk, _ := b.NewKey([32]byte{})
	bw, _ := b.Marshal(mustSeal(f, bk, make([]float64, b.ChunkLen())))
	f.Add(bw)
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := s.Unmarshal(in)
		if err != nil {
			return
		}
		out, err := s.Marshal(c)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("accepted chunk does not encode back (%v)", err)
		}
	})
}
