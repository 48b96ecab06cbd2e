package threshold

import (
	"errors"
	"fmt"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
)

// Sealer seals chunks under the collective public key: Lattigo's public-key
// encryption (u*p + (m/t + e0, e1), u ternary, e Gaussian, from crypto/rand)
// of shared/seal's fixed-point plaintext, so the chunks are the BGV scheme's
// and the server adds them with seal.BGV.Add. It implements seal.Key for
// sealing (seal.SealSlots); it cannot open. Not safe for concurrent use:
// one per goroutine.
type Sealer struct {
	f   *Federation
	enc *rlwe.Encryptor
	buf ring.Poly
}

// NewSealer returns a sealer under the collective public key.
func (f *Federation) NewSealer(cpk *CollectivePublicKey) (*Sealer, error) {
	if cpk == nil || cpk.f != f {
		return nil, errors.New("threshold: collective key of another federation")
	}
	return &Sealer{f: f, enc: rlwe.NewEncryptor(f.params, f.publicKey(cpk.P0, f.ckgCRP)), buf: f.params.RingQ().NewPoly()}, nil
}

// Scheme implements seal.Key.
func (k *Sealer) Scheme() seal.Scheme { return k.f.s }

// Seal implements seal.Key: ChunkLen values on the fixed-point grid within
// ±seal.MaxAbs. The chunk travels unseeded (16 bytes a value): c1 = u*p1 + e1
// is not the expansion of a seed.
func (k *Sealer) Seal(vals []float64) (seal.Chunk, error) {
	if err := k.f.s.EncodeScaled(vals, k.buf); err != nil {
		return nil, fmt.Errorf("threshold: seal: %w", err)
	}
	ct := bgv.NewCiphertext(k.f.params, 1, k.f.params.MaxLevel())
	ct.IsBatched = false
	if err := k.enc.EncryptZero(ct); err != nil {
		return nil, fmt.Errorf("threshold: seal: %w", err)
	}
	rq := k.f.params.RingQ()
	rq.NTT(k.buf, k.buf)
	rq.Add(ct.Value[0], k.buf, ct.Value[0])
	return k.f.s.WrapCiphertext(ct)
}

// Open implements seal.Key: no participant can open a chunk under the
// collective key alone.
func (k *Sealer) Open(seal.Chunk) ([]float64, error) {
	return nil, errors.New("threshold: a chunk under the collective key opens only by switching it to a participant's own key (t switching shares)")
}

var _ seal.Key = (*Sealer)(nil)
