package seal

import (
	"bytes"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
	"testing"

	"github.com/tuneinsight/lattigo/v5/core/rlwe"
	"github.com/tuneinsight/lattigo/v5/schemes/bgv"
)

// schemes returns both schemes with a key each, for table-driven tests.
func schemes(t testing.TB) []struct {
	name string
	s    Scheme
	k    Key
} {
	t.Helper()
	b, err := NewBGV()
	if err != nil {
		t.Fatal(err)
	}
	bk, err := b.NewKey([32]byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	p := Plaintext{}
	return []struct {
		name string
		s    Scheme
		k    Key
	}{{"plaintext", p, PlainKey{S: p}}, {"bgv", b, bk}}
}

func TestSealSumRestrict(t *testing.T) {
	for _, sc := range schemes(t) {
		t.Run(sc.name, func(t *testing.T) {
			s, k := sc.s, sc.k
			cl := s.ChunkLen()
			// Summands laid over one span: chunk 0 seals slots 0-6, chunk 1
			// slots 0-9 of its own.
			span := []int{0, 5, 6, cl + 9}
			a, err := SealSlots(k, []int{0, 5, cl + 9}, []float64{1, -2.25, 3}, span)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := SealSlots(k, []int{5, 6}, []float64{10, 20}, span)
			sum, err := Sum(s, a, b)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := OpenSlots(k, sum, []int{0, 5, 6, cl + 9, 11, 2*cl + 1})
			want := []float64{1, 7.75, 20, 3, 0, 0}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("sum slot %d = %v, want %v", i, got[i], want[i])
				}
			}
			// The inputs keep their values (a received message can be
			// read again after the server added it up).
			if v, _ := OpenSlots(k, a, []int{0, 5, cl + 9}); v[0] != 1 || v[1] != -2.25 || v[2] != 3 {
				t.Fatalf("Sum changed its first input: %v", v)
			}
			if v, _ := OpenSlots(k, b, []int{5, 6}); v[0] != 10 || v[1] != 20 {
				t.Fatalf("Sum changed its second input: %v", v)
			}
			// Restrict hands out the covering chunks only.
			r := Restrict(s, sum, []int{cl + 9})
			if len(r) != 1 || r[1] == nil {
				t.Fatalf("restricted to chunks %v, want [1]", r.Indexes())
			}
			// AddInto must leave chunks already handed out alone.
			c, _ := SealSlots(k, []int{cl + 9}, []float64{1}, span)
			if err := AddInto(s, sum, c); err != nil {
				t.Fatal(err)
			}
			if v, _ := OpenSlots(k, r, []int{cl + 9}); v[0] != 3 {
				t.Fatal("AddInto changed a chunk handed out before")
			}
			if v, _ := OpenSlots(k, sum, []int{cl + 9}); v[0] != 4 {
				t.Fatalf("AddInto: %v, want 4", v[0])
			}
		})
	}
}

// TestFixedPointExact: sums of sealed values equal, bit for bit, the float64
// sums of the quantized values, in every scheme; that is what keeps an
// encrypted federation on the plaintext one's path.
func TestFixedPointExact(t *testing.T) {
	vals := [][]float64{{0.1, -1.0 / 3, 1e-11, 12345.678}, {math.Pi, -math.E, 0.5, -MaxAbs}, {1e-9, 7, -7, MaxAbs}}
	for _, sc := range schemes(t) {
		t.Run(sc.name, func(t *testing.T) {
			slots := []int{3, 100, 4095, 4096}
			var parts []Vec
			want := make([]float64, len(slots))
			for _, v := range vals {
				p, err := SealSlots(sc.k, slots, v, nil)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, p)
				for i := range v {
					want[i] += Quantize(v[i])
				}
			}
			sum, err := Sum(sc.s, parts...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := OpenSlots(sc.k, sum, slots)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("slot %d: %v, want exactly %v", slots[i], got[i], want[i])
				}
			}
		})
	}
}

func TestSealRefusesBadInput(t *testing.T) {
	for _, sc := range schemes(t) {
		t.Run(sc.name, func(t *testing.T) {
			k := sc.k
			for _, v := range []float64{math.NaN(), math.Inf(1), 2 * MaxAbs} {
				if _, err := SealSlots(k, []int{1}, []float64{v}, nil); err == nil {
					t.Errorf("sealed %v", v)
				}
			}
			if _, err := SealSlots(k, []int{1, 2}, []float64{1}, nil); err == nil {
				t.Error("sealed mismatched slots")
			}
			if _, err := SealSlots(k, []int{-1}, []float64{1}, nil); err == nil {
				t.Error("sealed a negative slot")
			}
			if _, err := k.Seal(nil); err == nil {
				t.Error("sealed a chunk of no values")
			}
			if _, err := k.Seal(make([]float64, k.Scheme().ChunkLen()+1)); err == nil {
				t.Error("sealed a chunk longer than ChunkLen")
			}
			if _, err := SealSlots(k, []int{1, 7}, []float64{1, 2}, []int{0, 1, 2}); err == nil {
				t.Error("sealed a slot past the span")
			}
		})
	}
	if err := (Plaintext{Len: 4}).Add(&PlainChunk{V: make([]float64, 3)}, &PlainChunk{V: make([]float64, 4)}); err == nil {
		t.Error("added chunks of different lengths")
	}
}

func TestBGVKeys(t *testing.T) {
	s, err := NewBGV()
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := s.NewKey([32]byte{7})
	k2, _ := s.NewKey([32]byte{7}) // another participant of the same federation
	other, _ := s.NewKey([32]byte{8})
	v, err := SealSlots(k1, []int{0, 1}, []float64{0.25, -3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := OpenSlots(k2, v, []int{0, 1})
	if got[0] != 0.25 || got[1] != -3 {
		t.Fatalf("same secret opens %v", got)
	}
	bad, _ := OpenSlots(other, v, []int{0, 1})
	if math.Abs(bad[0]-0.25) < 1 && math.Abs(bad[1]+3) < 1 {
		t.Fatalf("another secret opened %v", bad)
	}
	// Every ciphertext has its own seed, even for equal values.
	a, _ := k1.Seal(make([]float64, s.ChunkLen()))
	b, _ := k1.Seal(make([]float64, s.ChunkLen()))
	if bytes.Equal(a.(*Cipher).seeds[0], b.(*Cipher).seeds[0]) {
		t.Fatal("two ciphertexts share a seed")
	}
}

func TestWireRoundTrip(t *testing.T) {
	for _, sc := range schemes(t) {
		t.Run(sc.name, func(t *testing.T) {
			s, k := sc.s, sc.k
			cl := s.ChunkLen()
			fresh, _ := SealSlots(k, []int{1, cl + 2}, []float64{0.5, -4}, nil)
			summed, _ := SealSlots(k, []int{1, cl + 2}, []float64{0.5, -4}, nil)
			more, _ := SealSlots(k, []int{1}, []float64{1}, nil)
			summed, _ = Sum(s, summed, more) // no longer seedable
			for name, v := range map[string]Vec{"fresh": fresh, "summed": summed} {
				b, err := MarshalVec(s, v)
				if err != nil {
					t.Fatal(err)
				}
				size := 7
				for _, c := range v {
					size += 8 + s.WireSize(c)
				}
				if len(b) != size {
					t.Errorf("%s: %d bytes, WireSize says %d", name, len(b), size)
				}
				back, err := UnmarshalVec(s, b, 4)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, _ := OpenSlots(k, back, []int{1, cl + 2})
				want, _ := OpenSlots(k, v, []int{1, cl + 2})
				if got[0] != want[0] || got[1] != want[1] {
					t.Fatalf("%s: decoded %v, want %v", name, got, want)
				}
			}
			fb, _ := s.Marshal(fresh[0])
			sb, _ := s.Marshal(summed[0])
			if sc.name == "bgv" && len(fb) >= len(sb) {
				t.Errorf("fresh chunk %d bytes, summed %d: the seed should halve it", len(fb), len(sb))
			}
		})
	}
}

// TestSeedSums: a sum of fresh chunks keeps their seeds up to MaxSumSeeds
// and travels as c0 and the seeds; past that, or added to a chunk whose
// c1 is held, it adds up c1. Either way it opens to the exact sum, on the
// wire and off it, through Lattigo's decryptor too, and adding to a clone
// leaves the original as it was.
func TestSeedSums(t *testing.T) {
	s, err := NewBGV()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.NewKey([32]byte{7})
	cl := s.ChunkLen()
	poly := packedLen(cl)
	for _, n := range []int{1, 2, MaxSumSeeds, MaxSumSeeds + 1, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var sum Chunk
			want := make([]float64, cl)
			for i := 0; i < n; i++ {
				vals := make([]float64, cl)
				for j := range vals {
					vals[j] = Quantize(float64((i*31+j*7)%97-48) / 8)
					want[j] += vals[j]
				}
				c, err := k.Seal(vals)
				if err != nil {
					t.Fatal(err)
				}
				if sum == nil {
					sum = c
					continue
				}
				before := s.Clone(sum)
				beforeVals, _ := k.Open(before)
				next := s.Clone(sum)
				if err := s.Add(next, c); err != nil {
					t.Fatal(err)
				}
				if again, _ := k.Open(before); !slices.Equal(again, beforeVals) {
					t.Fatal("adding to a clone changed the original")
				}
				sum = next
			}
			wantSize := chunkHeader + 2 + 2*poly
			switch {
			case n == 1:
				wantSize = chunkHeader + seedLen + 2 + poly
			case n <= MaxSumSeeds:
				wantSize = chunkHeader + 1 + n*seedLen + 2 + poly
			}
			b, err := s.Marshal(sum)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != wantSize || s.WireSize(sum) != wantSize {
				t.Fatalf("sum of %d: %d bytes (WireSize %d), want %d", n, len(b), s.WireSize(sum), wantSize)
			}
			back, err := s.Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]Chunk{"sum": sum, "decoded": back} {
				got, err := k.Open(c)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s of %d opens to other values", name, n)
				}
			}
			ct, err := s.Ciphertext(back)
			if err != nil {
				t.Fatal(err)
			}
			pt := bgv.NewPlaintext(s.params, s.params.MaxLevel())
			pt.IsBatched = false
			rlwe.NewDecryptor(s.params, k.sk).Decrypt(ct, pt)
			got := make([]int64, cl)
			if err := bgv.NewEncoder(s.params).Decode(pt, got); err != nil {
				t.Fatal(err)
			}
			for j := range got {
				if float64(got[j])/fixedOne != want[j] {
					t.Fatalf("Lattigo opens slot %d of the sum of %d as %v, want %v", j, n, float64(got[j])/fixedOne, want[j])
				}
			}
			// A chunk whose c1 is held (Lattigo's) plus the seeds.
			held, err := s.WrapCiphertext(ct)
			if err != nil {
				t.Fatal(err)
			}
			both := s.Clone(held)
			if err := s.Add(both, back); err != nil {
				t.Fatal(err)
			}
			if s.WireSize(both) != chunkHeader+2+2*poly {
				t.Fatalf("held c1 plus seeds travels as %d bytes", s.WireSize(both))
			}
			got2, _ := k.Open(both)
			for j := range got2 {
				if got2[j] != 2*want[j] {
					t.Fatalf("held plus seeds, slot %d: %v, want %v", j, got2[j], 2*want[j])
				}
			}
		})
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	s, _ := NewBGV()
	k, _ := s.NewKey([32]byte{1})
	c, _ := k.Seal(make([]float64, s.ChunkLen()))
	good, _ := s.Marshal(c)
	q0 := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	cases := map[string][]byte{
		"empty":       nil,
		"magic":       append([]byte("xx"), good[2:]...),
		"version":     patch(good, 2, 9),
		"param id":    patch(good, 3, 0),
		"ring degree": patch(good, 4, 13),
		"level":       patch(good, 5, 1),
		"elements":    patch(good, 6, 3),
		"flags":       patch(good, 7, 4),
		"both flags":  patch(good, 7, flagSeeded|flagSeeds),
		"short":       good[:len(good)-1],
		"long":        append(append([]byte(nil), good...), 0),
		"coefficient": append(append([]byte(nil), good[:chunkHeader+seedLen+2]...), append(q0, good[chunkHeader+seedLen+10:]...)...),
	}
	// A sum of seeds: a count byte, then the seeds.
	sum := s.Clone(c)
	if err := s.Add(sum, c); err != nil {
		t.Fatal(err)
	}
	two, _ := s.Marshal(sum)
	if two[7] != flagSeeds || two[chunkHeader] != 2 {
		t.Fatalf("a sum of two fresh chunks has flags %#x, count %d", two[7], two[chunkHeader])
	}
	cases["seed count 1"] = patch(two, chunkHeader, 1)
	cases["seed count 0"] = patch(two, chunkHeader, 0)
	cases["seed count 3"] = patch(two, chunkHeader, 3)
	cases["seed count over the cap"] = patch(two, chunkHeader, MaxSumSeeds+1)
	cases["no seed count"] = patch(good[:chunkHeader], 7, flagSeeds)
	for name, b := range cases {
		if _, err := s.Unmarshal(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p := Plaintext{Len: 4}
	pb, _ := p.Marshal(&PlainChunk{V: []float64{1, 2, 3, 4}})
	nan := append([]byte(nil), pb...)
	copy(nan[chunkHeader:], []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	if _, err := p.Unmarshal(nan); err == nil {
		t.Error("plaintext chunk with NaN accepted")
	}
	if _, err := s.Unmarshal(pb); err == nil {
		t.Error("BGV accepted a plaintext chunk")
	}
	v, _ := MarshalVec(s, Vec{3: c})
	if _, err := UnmarshalVec(s, v, 3); err == nil {
		t.Error("chunk index beyond the layout accepted")
	}
}

func patch(b []byte, i int, v byte) []byte {
	out := append([]byte(nil), b...)
	out[i] = v
	return out
}

func TestPadLayout(t *testing.T) {
	starts, total := PadLayout(4, []int{3, 4, 5, 1})
	want := []int{0, 4, 8, 16}
	for i := range want {
		if starts[i] != want[i] {
			t.Fatalf("starts %v, want %v", starts, want)
		}
	}
	if total != 20 {
		t.Fatalf("total %d, want 20", total)
	}
}

// TestBGVIsLattigoBGV: what BGVKey seals, Lattigo's own BGV decryptor and
// encoder open, so the hand-written encryption is the scheme's.
func TestBGVIsLattigoBGV(t *testing.T) {
	s, _ := NewBGV()
	k, _ := s.NewKey([32]byte{9})
	vals := make([]float64, s.ChunkLen())
	for i := range vals {
		vals[i] = Quantize(float64(i%13-6) * 1.37)
	}
	c, err := k.Seal(vals)
	if err != nil {
		t.Fatal(err)
	}
	dec := rlwe.NewDecryptor(s.params, k.sk)
	pt := bgv.NewPlaintext(s.params, s.params.MaxLevel())
	pt.IsBatched = false
	ct, err := s.Ciphertext(c)
	if err != nil {
		t.Fatal(err)
	}
	dec.Decrypt(ct, pt)
	got := make([]int64, s.ChunkLen())
	if err := bgv.NewEncoder(s.params).Decode(pt, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if float64(got[i])/fixedOne != v {
			t.Fatalf("slot %d: Lattigo opens %v, sealed %v", i, float64(got[i])/fixedOne, v)
		}
	}
}

// TestNoiseDistribution: the encryption noise has the spread the security
// level assumes (standard deviation at least 3.2) and stays small enough for
// the decryption margin.
func TestNoiseDistribution(t *testing.T) {
	r := mrand.NewChaCha8([32]byte{3})
	const n = 200000
	sum, sq := 0.0, 0.0
	for i := 0; i < n; i++ {
		v := float64(noiseSample(r))
		if math.Abs(v) > 21 {
			t.Fatalf("noise %v beyond 21", v)
		}
		sum += v
		sq += v * v
	}
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	if math.Abs(mean) > 0.05 || sd < 3.2 || sd > 3.3 {
		t.Fatalf("noise mean %.3f, sd %.3f: want 0 and 3.24", mean, sd)
	}
}

// TestVecSize: VecSize is MarshalVec's length, so a frame sized with it never
// grows, and AppendVec after a prefix gives the prefix and MarshalVec's bytes.
func TestVecSize(t *testing.T) {
	schemes := []Scheme{Plaintext{}}
	if b, err := NewBGV(); err == nil {
		schemes = append(schemes, b)
	} else {
		t.Fatal(err)
	}
	for _, s := range schemes {
		key, err := NewKeyFor(s, [32]byte{1})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 3} {
			slots := make([]int, n)
			vals := make([]float64, n)
			for i := range slots {
				slots[i] = i * s.ChunkLen() // one value in each of n chunks
				vals[i] = float64(i) + 0.5
			}
			v, err := SealSlots(key, slots, vals, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n == 3 { // a sum (under BGV: c0 and two seeds)
				sum := Vec{}
				if err := AddInto(s, sum, v); err != nil {
					t.Fatal(err)
				}
				if err := AddInto(s, sum, v); err != nil {
					t.Fatal(err)
				}
				v = sum
			}
			b, err := MarshalVec(s, v)
			if err != nil {
				t.Fatal(err)
			}
			if got := VecSize(s, v); got != len(b) {
				t.Errorf("%s, %d chunks: VecSize %d, MarshalVec wrote %d bytes", s.Name(), n, got, len(b))
			}
			a, err := AppendVec([]byte("prefix"), s, v)
			if err != nil {
				t.Fatal(err)
			}
			if string(a[:6]) != "prefix" || string(a[6:]) != string(b) {
				t.Errorf("%s, %d chunks: AppendVec after a prefix differs from MarshalVec", s.Name(), n)
			}
		}
	}
}

// TestSumOrderFree: a sum built as replies arrive (Accumulate, in any
// order) has the same bytes as one built at the end in index order, for
// sums that keep their seeds and for those that hold c1, and under the
// plaintext scheme.
func TestSumOrderFree(t *testing.T) {
	bgv, err := NewBGV()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    Scheme
		n    int
	}{
		{"bgv seeds", bgv, 5},
		{"bgv held", bgv, MaxSumSeeds + 3},
		{"plaintext", Plaintext{Len: 64}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewKeyFor(tc.s, [32]byte{3})
			if err != nil {
				t.Fatal(err)
			}
			cl := tc.s.ChunkLen()
			vs := make([]Vec, tc.n)
			for i := range vs {
				vals := make([]float64, 2*cl)
				slots := make([]int, 2*cl)
				for j := range vals {
					vals[j] = Quantize(float64((i*13+j*5)%41-20) / 4)
					slots[j] = j
				}
				v, err := SealSlots(k, slots, vals, nil)
				if err != nil {
					t.Fatal(err)
				}
				vs[i] = v
			}
			inOrder, err := Sum(tc.s, vs...)
			if err != nil {
				t.Fatal(err)
			}
			arrived := Vec{}
			for _, i := range []int{3, 0, tc.n - 1, 1} {
				if err := Accumulate(tc.s, arrived, vs[i]); err != nil {
					t.Fatal(err)
				}
			}
			for i := range vs {
				if i != 3 && i != 0 && i != tc.n-1 && i != 1 {
					if err := Accumulate(tc.s, arrived, vs[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			for ci, c := range inOrder {
				a, err := tc.s.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				b, err := tc.s.Marshal(arrived[ci])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("chunk %d: %d bytes summed in index order differ from the sum in arrival order (%d bytes)", ci, len(a), len(b))
				}
			}
			// The terms are left as they were.
			again, err := Sum(tc.s, vs...)
			if err != nil {
				t.Fatal(err)
			}
			for ci := range again {
				a, _ := tc.s.Marshal(again[ci])
				b, _ := tc.s.Marshal(inOrder[ci])
				if !bytes.Equal(a, b) {
					t.Errorf("chunk %d: summing changed a term", ci)
				}
			}
		})
	}
}
