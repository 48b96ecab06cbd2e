package threshold

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/mhe"
	"github.com/tuneinsight/lattigo/v5/ring"
	"github.com/tuneinsight/lattigo/v5/ring/ringqp"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
)

// Costs of the key layer (go test ./shared/seal/threshold -run '^$' -bench .).
// Per chunk of 4096 values unless a metric says otherwise.

// BenchmarkSetupParty: one committee member's whole setup (keys, setup
// share, dealing n-1 encrypted Shamir shares, receiving n-1 and adding the
// collective key from n setup shares), the other members' messages made
// beforehand; and the bytes it sends and receives.
func BenchmarkSetupParty(b *testing.B) {
	for _, n := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			f, err := New(thrScheme(b), Config{Federation: "bench", Parties: ids(n), Threshold: (n + 1) / 2})
			if err != nil {
				b.Fatal(err)
			}
			seeds := make([][32]byte, n)
			var setups []*SetupShare
			var others []*Party
			for i := range seeds {
				seeds[i][0], seeds[i][1] = byte(i), byte(i>>8)
				p, _ := newParty(f, PartyID(i+1), seeds[i], link)
				su, _ := p.Setup()
				setups, others = append(setups, su), append(others, p)
			}
			var inbox []*EncryptedShare
			for _, p := range others[1:] {
				d, err := p.Deal(setups)
				if err != nil {
					b.Fatal(err)
				}
				for _, es := range d {
					if es.To == 1 {
						inbox = append(inbox, es)
					}
				}
			}
			var sent, recv int
			for b.Loop() {
				p, err := newParty(f, 1, seeds[0], link)
				if err != nil {
					b.Fatal(err)
				}
				su, _ := p.Setup()
				dealt, err := p.Deal(setups)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Receive(setups, inbox); err != nil {
					b.Fatal(err)
				}
				sb, _ := su.Marshal()
				sent = len(sb)
				for _, es := range dealt {
					eb, _ := es.Marshal()
					sent += len(eb)
				}
				recv = n * len(sb)
				for _, es := range inbox {
					eb, _ := es.Marshal()
					recv += len(eb)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/party")
			b.ReportMetric(float64(sent), "B-sent/party")
			b.ReportMetric(float64(recv), "B-recv/party")
		})
	}
}

// benchFed is a 3-of-8 committee after setup, a sum of two chunks under
// its key, and the shared-key scheme's key for comparison.
func benchFed(b *testing.B) (*Federation, []*Party, seal.Chunk, *seal.BGVKey) {
	f, ps := federation(b, 8, 3)
	sl, _ := ps[0].Sealer()
	c, _ := sl.Seal(values(f.Scheme().ChunkLen(), 1))
	d, _ := sl.Seal(values(f.Scheme().ChunkLen(), 2))
	_ = f.Scheme().Add(c, d)
	k, err := sharedScheme(b).NewKey([32]byte{1})
	if err != nil {
		b.Fatal(err)
	}
	return f, ps, c, k
}

// lattigoSealer is the Sealer of the first threshold key layer, Lattigo's
// public-key encryptor, kept for BenchmarkSeal's comparison.
type lattigoSealer struct {
	f   *Federation
	enc *rlwe.Encryptor
	buf ring.Poly
}

func (k *lattigoSealer) Seal(vals []float64) (seal.Chunk, error) {
	if err := k.f.s.EncodeScaled(vals, k.buf); err != nil {
		return nil, err
	}
	ct := bgv.NewCiphertext(k.f.params, 1, k.f.params.MaxLevel())
	ct.IsBatched = false
	if err := k.enc.EncryptZero(ct); err != nil {
		return nil, err
	}
	rq := k.f.params.RingQ()
	rq.NTT(k.buf, k.buf)
	rq.Add(ct.Value[0], k.buf, ct.Value[0])
	return k.f.s.WrapCiphertext(ct)
}

func newLattigoSealer(f *Federation, cpk *CollectivePublicKey) *lattigoSealer {
	pk := rlwe.NewPublicKey(f.params)
	f.ckg.GenPublicKey(mhe.PublicKeyGenShare{Value: ringqp.Poly{Q: cpk.P0}}, f.ckgCRP, pk)
	return &lattigoSealer{f: f, enc: rlwe.NewEncryptor(f.params, pk), buf: f.params.RingQ().NewPoly()}
}

func perChunk(b *testing.B, unit string) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), unit)
}

// BenchmarkSeal: sealing a chunk under the collective public key (Sealer,
// and Lattigo's encryptor on the same parameters for comparison) vs the
// shared secret key of the shared-key scheme. With -count, the three
// alternate.
func BenchmarkSeal(b *testing.B) {
	f, ps, _, k := benchFed(b)
	vals := values(f.Scheme().ChunkLen(), 3)
	b.Run("threshold", func(b *testing.B) {
		sl, _ := ps[0].Sealer()
		var c seal.Chunk
		for b.Loop() {
			c, _ = sl.Seal(vals)
		}
		perChunk(b, "us/chunk")
		b.ReportMetric(float64(f.Scheme().WireSize(c)), "B/chunk")
	})
	b.Run("threshold-lattigo", func(b *testing.B) {
		sl := newLattigoSealer(f, ps[0].CollectiveKey())
		var c seal.Chunk
		for b.Loop() {
			c, _ = sl.Seal(vals)
		}
		perChunk(b, "us/chunk")
		b.ReportMetric(float64(f.Scheme().WireSize(c)), "B/chunk")
	})
	b.Run("shared", func(b *testing.B) {
		var c seal.Chunk
		for b.Loop() {
			c, _ = k.Seal(vals)
		}
		perChunk(b, "us/chunk")
		b.ReportMetric(float64(k.Scheme().WireSize(c)), "B/chunk")
	})
}

// BenchmarkSwitchShare: one active member's share for one chunk.
func BenchmarkSwitchShare(b *testing.B) {
	f, ps, c, _ := benchFed(b)
	active := []PartyID{1, 2, 3}
	tpk := ps[4].PublicKey()
	var sh *SwitchShare
	for b.Loop() {
		var err error
		if sh, err = ps[0].SwitchShare(c, active, tpk); err != nil {
			b.Fatal(err)
		}
	}
	perChunk(b, "us/chunk")
	m, _ := sh.Marshal()
	b.ReportMetric(float64(len(m)), "B/share")
	_ = f
}

// BenchmarkAggregateSwitch: the server's work per chunk (t = 3 shares,
// checks included) and per share.
func BenchmarkAggregateSwitch(b *testing.B) {
	f, ps, c, _ := benchFed(b)
	active := []PartyID{1, 2, 3}
	var shares []*SwitchShare
	for _, id := range active {
		sh, _ := ps[id-1].SwitchShare(c, active, ps[4].PublicKey())
		shares = append(shares, sh)
	}
	var sw *Switched
	for b.Loop() {
		var err error
		if sw, err = f.AggregateSwitch(c, shares); err != nil {
			b.Fatal(err)
		}
	}
	perChunk(b, "us/chunk")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(shares)), "us/share")
	m, _ := sw.Marshal()
	b.ReportMetric(float64(len(m)), "B/switched")
}

// BenchmarkOpen: the entitled participant opening a switched chunk with its
// own key vs today's shared-key Open of a chunk.
func BenchmarkOpen(b *testing.B) {
	f, ps, c, k := benchFed(b)
	active := []PartyID{1, 2, 3}
	sw, err := switchFor(b, f, byID(ps), c, active, ps[4])
	if err != nil {
		b.Fatal(err)
	}
	b.Run("threshold", func(b *testing.B) {
		for b.Loop() {
			if _, err := ps[4].Open(sw); err != nil {
				b.Fatal(err)
			}
		}
		perChunk(b, "us/chunk")
	})
	shared, _ := k.Seal(values(f.Scheme().ChunkLen(), 1))
	_ = k.Scheme().Add(shared, shared) // a sum, as the server sends it
	b.Run("shared", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Open(shared); err != nil {
				b.Fatal(err)
			}
		}
		perChunk(b, "us/chunk")
	})
}

// BenchmarkInterleaved: every operation of both key modes once per
// iteration, in turn, timed one by one, so that load from elsewhere on the
// machine falls on both alike; it reports the median microseconds of each
// and the bytes of each message (go test -run '^$' -bench Interleaved).
// Committee 3-of-8; the opened chunk is a sum of two.
func BenchmarkInterleaved(b *testing.B) {
	f, ps, c, k := benchFed(b)
	vals := values(f.Scheme().ChunkLen(), 3)
	sl, _ := ps[0].Sealer()
	lat := newLattigoSealer(f, ps[0].CollectiveKey())
	active := []PartyID{1, 2, 3}
	target := ps[4]
	tpk := target.PublicKey()
	shared, _ := k.Seal(vals)
	sharedSum := k.Scheme().Clone(shared)
	_ = k.Scheme().Add(sharedSum, shared)
	ops := []struct {
		name string
		run  func() error
	}{
		{"seal-shared", func() error { _, err := k.Seal(vals); return err }},
		{"seal-threshold", func() error { _, err := sl.Seal(vals); return err }},
		{"seal-threshold-lattigo", func() error { _, err := lat.Seal(vals); return err }},
		{"switch-share", func() error { _, err := ps[0].SwitchShare(c, active, tpk); return err }},
		{"aggregate-t3", nil}, // set below
		{"open-threshold", nil},
		{"open-shared", func() error { _, err := k.Open(sharedSum); return err }},
	}
	var shares []*SwitchShare
	for _, id := range active {
		sh, _ := ps[id-1].SwitchShare(c, active, tpk)
		shares = append(shares, sh)
	}
	sw, err := f.AggregateSwitch(c, shares)
	if err != nil {
		b.Fatal(err)
	}
	ops[4].run = func() error { _, err := f.AggregateSwitch(c, shares); return err }
	ops[5].run = func() error { _, err := target.Open(sw); return err }
	times := make([][]float64, len(ops))
	for b.Loop() {
		for i, op := range ops {
			start := time.Now()
			if err := op.run(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], float64(time.Since(start).Nanoseconds())/1000)
		}
	}
	for i, op := range ops {
		slices.Sort(times[i])
		b.ReportMetric(times[i][len(times[i])/2], op.name+"-us")
	}
	fresh, _ := sl.Seal(vals)
	shm, _ := shares[0].Marshal()
	swm, _ := sw.Marshal()
	b.ReportMetric(float64(f.Scheme().WireSize(fresh)), "fresh-threshold-B")
	b.ReportMetric(float64(k.Scheme().WireSize(shared)), "fresh-shared-B")
	b.ReportMetric(float64(k.Scheme().WireSize(sharedSum)), "sum-shared-B")
	b.ReportMetric(float64(len(shm)), "switch-share-B")
	b.ReportMetric(float64(len(swm)), "switched-B")
}
