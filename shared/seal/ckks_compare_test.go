package seal

import (
	"testing"

	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/schemes/ckks"
)

// The alternatives docs/encryption.md weighs, measured beside BGV: CKKS with
// Lattigo's own encryptor (one 60-bit prime, conjugate-invariant ring: 4096
// real slots), and the masking a mixed layout would need (a plaintext
// multiply and a rescale, which costs CKKS a second prime).

func ckksSetup(b *testing.B, logQ []int) (ckks.Parameters, *rlwe.SecretKey, *ckks.Encoder, []float64) {
	p, err := ckks.NewParametersFromLiteral(ckks.ParametersLiteral{LogN: 12, LogQ: logQ, LogDefaultScale: 40, RingType: ring.ConjugateInvariant})
	if err != nil {
		b.Fatal(err)
	}
	sk := rlwe.NewKeyGenerator(p).GenSecretKeyNew()
	vals := make([]float64, p.MaxSlots())
	for i := range vals {
		vals[i] = float64(i%97) / 7
	}
	return p, sk, ckks.NewEncoder(p), vals
}

func BenchmarkCKKSEncrypt(b *testing.B) {
	p, sk, ecd, vals := ckksSetup(b, []int{60})
	enc := rlwe.NewEncryptor(p, sk)
	pt := ckks.NewPlaintext(p, p.MaxLevel())
	var ct *rlwe.Ciphertext
	for b.Loop() {
		if err := ecd.Encode(vals, pt); err != nil {
			b.Fatal(err)
		}
		ct, _ = enc.EncryptNew(pt)
	}
	perValue(b, p.MaxSlots())
	// c0 and a seed, as BGV travels.
	b.ReportMetric(float64(ct.Value[0].N()*(ct.Level()+1)*8)/float64(p.MaxSlots()), "bytes/value")
}

func BenchmarkCKKSDecrypt(b *testing.B) {
	p, sk, ecd, vals := ckksSetup(b, []int{60})
	pt := ckks.NewPlaintext(p, p.MaxLevel())
	_ = ecd.Encode(vals, pt)
	ct, _ := rlwe.NewEncryptor(p, sk).EncryptNew(pt)
	dec := rlwe.NewDecryptor(p, sk)
	out := make([]float64, p.MaxSlots())
	for b.Loop() {
		dec.Decrypt(ct, pt)
		if err := ecd.Decode(pt, out); err != nil {
			b.Fatal(err)
		}
	}
	perValue(b, p.MaxSlots())
}

// BenchmarkCKKSMask: what masking a chunk to one client's slots costs the
// server (per value of the chunk), on the two-prime parameters it needs.
func BenchmarkCKKSMask(b *testing.B) {
	p, sk, ecd, vals := ckksSetup(b, []int{55, 40})
	pt := ckks.NewPlaintext(p, p.MaxLevel())
	_ = ecd.Encode(vals, pt)
	ct, _ := rlwe.NewEncryptor(p, sk).EncryptNew(pt)
	mask := make([]float64, p.MaxSlots())
	for i := 0; i < len(mask)/2; i++ {
		mask[i] = 1
	}
	mpt := ckks.NewPlaintext(p, p.MaxLevel())
	mpt.Scale = rlwe.NewScale(p.Q()[p.MaxLevel()])
	if err := ecd.Encode(mask, mpt); err != nil {
		b.Fatal(err)
	}
	eval := ckks.NewEvaluator(p, nil)
	out := ckks.NewCiphertext(p, 1, p.MaxLevel())
	low := ckks.NewCiphertext(p, 1, p.MaxLevel()-1)
	for b.Loop() {
		if err := eval.Mul(ct, mpt, out); err != nil {
			b.Fatal(err)
		}
		if err := eval.Rescale(out, low); err != nil {
			b.Fatal(err)
		}
	}
	perValue(b, p.MaxSlots())
}
