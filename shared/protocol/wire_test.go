package protocol

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

func wireSample(t testing.TB) (seal.Scheme, Message) {
	s, err := seal.NewBGV()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.NewKey(testSecret.Derive(seal.KeyPurpose))
	v, err := seal.SealSlots(k, []int{3, 4100}, []float64{0.5, -2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := Message{Kind: KindIP, Round: 7, Report: []int{0}, Grid: []float64{0, 0.25}, Sealed: v,
		Setup: &Setup{Slots: []int{1, 2}, Config: Config{Lambda: 1e-3, Step: StepPaper, Clients: 2}}}
	if err := m.Setup.Config.Validate(); err != nil { // as a coordinator sends it
		t.Fatal(err)
	}
	return s, m
}

func TestWireRoundTrip(t *testing.T) {
	s, m := wireSample(t)
	b, err := EncodeMessage(s, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMessage(s, b, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != m.Kind || got.Round != m.Round || !reflect.DeepEqual(got.Grid, m.Grid) || got.Setup.Config != m.Setup.Config {
		t.Fatalf("decoded %+v", got)
	}
	k, _ := s.(*seal.BGV).NewKey(testSecret.Derive(seal.KeyPurpose))
	vals, err := seal.OpenSlots(k, got.Sealed, []int{3, 4100})
	if err != nil || vals[0] != 0.5 || vals[1] != -2 {
		t.Fatalf("sealed values %v, %v", vals, err)
	}
	if got.Alpha != nil {
		t.Fatal("absent Alpha decoded as present")
	}
}

// TestAppendMessage: a frame appended to a buffer in use (the server's
// pooled ones) is EncodeMessage's frame after what the buffer held, and
// reusing the buffer for a smaller frame leaves no trace of the larger.
func TestAppendMessage(t *testing.T) {
	s, m := wireSample(t)
	want, err := EncodeMessage(s, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendMessage([]byte("prefix"), s, m)
	if err != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("appended after a prefix: %d bytes, %v", len(got), err)
	}
	small := Message{Kind: KindDone, Round: 3}
	again, err := AppendMessage(got[:0], s, small)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := DecodeMessage(s, again, DefaultLimits); err != nil || d.Kind != KindDone || d.Round != 3 || d.Sealed != nil {
		t.Fatalf("the reused buffer decodes to %+v, %v", d, err)
	}
}

func TestWireRefuses(t *testing.T) {
	s, m := wireSample(t)
	good, _ := EncodeMessage(s, m)
	hdrLen := binary.LittleEndian.Uint32(good[3:])
	withHeader := func(h string) []byte {
		out := []byte{'h', 'm', WireVersion}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(h)))
		out = append(out, h...)
		return append(out, make([]byte, 4*(2+len(floatFields(&Message{}))))...) // no sealed or per-feature vectors
	}
	// withW is a frame of kind ip whose W section holds raw bytes w.
	withW := func(w []byte) []byte {
		out := withHeader(`{"Kind":"ip"}`)
		at := len(out) - 16 // W's length, the first of the four
		out = append(out[:at:at], binary.LittleEndian.AppendUint32(nil, uint32(len(w)))...)
		out = append(out, w...)
		return append(out, make([]byte, 12)...)
	}
	nan := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.5)), math.Float64bits(math.NaN()))
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"empty":         {nil, "magic"},
		"version":       {append([]byte{'h', 'm', 9}, good[3:]...), "version 9"},
		"version 1":     {append([]byte{'h', 'm', 1}, good[3:]...), "envelope version 1, this build speaks 3"},
		"version 2":     {append([]byte{'h', 'm', 2}, good[3:]...), "envelope version 2, this build speaks 3"},
		"NaN weight":    {withW(nan), "W[1] is NaN"},
		"ragged floats": {withW(make([]byte, 7)), "W of 7 bytes"},
		"too long":      {good, "exceeds the limit"},
		"header length": {append(append([]byte(nil), good[:3]...), 0xff, 0xff, 0xff, 0x7f), "claims"},
		"unknown field": {withHeader(`{"Kind":"ip","Evil":1}`), "unknown field"},
		"not finite":    {withHeader(`{"Kind":"ip","Grid":[NaN]}`), "header"},
		"trailing":      {append(append([]byte(nil), good...), 1), "after the message"},
		"bad chunk":     {append(append([]byte(nil), good[:7+hdrLen+4+11]...), append([]byte{0}, good[7+hdrLen+4+12:]...)...), "sealed vector"},
	}
	for name, c := range cases {
		lim := DefaultLimits
		if name == "too long" {
			lim.MaxBytes = len(good) - 1
		}
		_, err := DecodeMessage(s, c.b, lim)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, c.want)
		}
	}
	m.W = []float64{math.Inf(1)}
	if _, err := EncodeMessage(s, m); err == nil {
		t.Error("encoded an infinite weight")
	}
}

// FuzzDecodeMessage: any bytes give a message or an error, never a panic;
// what decodes encodes again and decodes to the same message.
func FuzzDecodeMessage(f *testing.F) {
	s, m := wireSample(f)
	b, _ := EncodeMessage(s, m)
	f.Add(b)
	small, _ := EncodeMessage(s, Message{Kind: KindWeights, Round: 1, W: []float64{1, -0.5}})
	f.Add(small)
	keys, _ := EncodeMessage(s, keysSample())
	f.Add(keys)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(s, b, Limits{MaxBytes: 1 << 20, MaxChunks: 4})
		if err != nil {
			return
		}
		again, err := EncodeMessage(s, m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		if _, err := DecodeMessage(s, again, Limits{MaxBytes: 1 << 20, MaxChunks: 4}); err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		checkNoAlias(t, s, b, m, again)
	})
}

// checkNoAlias overwrites the frame b that decoded to m and checks that m
// still encodes to enc: the server decodes frames read into pooled buffers
// and reuses them (server/ws.go), so a decoded message must not share
// memory with its frame.
func checkNoAlias(t *testing.T, s seal.Scheme, b []byte, m Message, enc []byte) {
	t.Helper()
	for i := range b {
		b[i] ^= 0x5a
	}
	after, err := EncodeMessage(s, m)
	if err != nil {
		t.Fatalf("after overwriting its frame, the decoded message does not encode: %v", err)
	}
	if !bytes.Equal(after, enc) {
		t.Fatal("overwriting the frame changed the decoded message: it shares memory with the frame")
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	s, m := wireSample(t)
	m.Alpha = m.Sealed
	m.W, m.DW = []float64{1, 2}, []float64{3}
	// In this order: the plaintext case replaces the BGV chunks.
	for _, c := range []struct {
		name string
		sc   seal.Scheme
	}{{"bgv", s}, {"plaintext", seal.Plaintext{}}} {
		name, sc := c.name, c.sc
		if name == "plaintext" {
			k, err := seal.NewKeyFor(sc, [32]byte{1})
			if err != nil {
				t.Fatal(err)
			}
			if m.Sealed, err = seal.SealSlots(k, []int{3}, []float64{0.5}, nil); err != nil {
				t.Fatal(err)
			}
			m.Alpha = m.Sealed
		}
		b, err := EncodeMessage(sc, m)
		if err != nil {
			t.Fatal(err)
		}
		enc := bytes.Clone(b)
		got, err := DecodeMessage(sc, b, DefaultLimits)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkNoAlias(t, sc, b, got, enc)
	}
}

// keysSample is a switch request: JSON fields and key-layer messages.
func keysSample() Message {
	return Message{Kind: KindSwitch, Round: 2, Batch: 5, ActiveSet: []int{1, 3}, Targets: []int{4},
		Jobs: [][2]int{{0, 0}, {0, 1}}, Keys: [][]byte{[]byte("own key"), {}, []byte("chunk 2")}}
}

// TestWireKeys: the key-layer messages of the threshold keys travel in
// their own section, after the sealed vectors, and come back as sent; a
// frame without them is a shared-key frame, byte for byte; bad counts and
// lengths are refused.
func TestWireKeys(t *testing.T) {
	s, m := wireSample(t)
	plain, _ := EncodeMessage(s, m)
	m.Keys = nil
	if again, _ := EncodeMessage(s, m); !reflect.DeepEqual(plain, again) {
		t.Fatal("an empty Keys field changed the frame")
	}
	k := keysSample()
	b, err := EncodeMessage(s, k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMessage(s, b, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Keys, k.Keys) || got.Batch != 5 || !reflect.DeepEqual(got.Jobs, k.Jobs) || !reflect.DeepEqual(got.ActiveSet, k.ActiveSet) {
		t.Fatalf("decoded %+v", got)
	}
	if n := k.WireSize(s); n < 8*3+len("own key")+len("chunk 2") {
		t.Errorf("WireSize %d leaves the key messages out", n)
	}
	tail := len(b) - (4 + 4 + len("own key") + 4 + 4 + len("chunk 2"))
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"zero count": {append(b[:tail:tail], 0, 0, 0, 0), "0 key messages"},
		"count":      {append(b[:tail:tail], 9, 0, 0, 0, 1, 0, 0, 0), "9 key messages"},
		"short":      {b[:len(b)-1], "key message 2"},
		"stub":       {append(b[:tail:tail], 1, 0), "bytes after the message"},
	} {
		if _, err := DecodeMessage(s, c.b, DefaultLimits); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, c.want)
		}
	}
}

func TestFrameParts(t *testing.T) {
	s := seal.Plaintext{}
	m := Message{Kind: KindDelta, Round: 3, HatW: []float64{1, 2}}
	f, err := EncodeMessage(s, m)
	if err != nil {
		t.Fatal(err)
	}
	hdr, sealed, ok := FrameParts(f)
	if !ok || hdr+sealed != len(f) || sealed != 8 { // two empty sealed vectors: two lengths
		t.Fatalf("FrameParts = %d, %d, %v for a frame of %d bytes", hdr, sealed, ok, len(f))
	}
	// The plaintext parts: the JSON header and the per-feature vectors,
	// HatW's numbers among them.
	plain, ok := FramePlain(f)
	if !ok || len(plain) != hdr || !bytes.Contains(plain, []byte(`"Kind":"delta"`)) ||
		!bytes.Contains(plain, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(1)), math.Float64bits(2))) {
		t.Fatalf("FramePlain = %q", plain)
	}
	for _, bad := range [][]byte{nil, []byte("hm"), []byte("xx\x01\x00\x00\x00\x00"), append([]byte("hm\x01\xff\x00\x00\x00"), 1)} {
		if _, _, ok := FrameParts(bad); ok {
			t.Errorf("FrameParts(%q) ok", bad)
		}
	}
}

// BenchmarkEncodeMessage encodes a message carrying a 25-chunk BGV sum (a
// 452-pick Gram's, as a server sends it to every holder of the group): the
// server encodes every message it sends, so its bytes copied and allocated
// per frame show in every round.
//
//	go test ./shared/protocol -run '^$' -bench EncodeMessage -benchmem
func BenchmarkEncodeMessage(b *testing.B) {
	s, err := seal.NewBGV()
	if err != nil {
		b.Fatal(err)
	}
	key, err := seal.NewKeyFor(s, [32]byte{7})
	if err != nil {
		b.Fatal(err)
	}
	const chunks = 25
	slots := make([]int, chunks)
	vals := make([]float64, chunks)
	for i := range slots {
		slots[i], vals[i] = i*s.ChunkLen(), 1
	}
	one, err := seal.SealSlots(key, slots, vals, nil)
	if err != nil {
		b.Fatal(err)
	}
	sum := seal.Vec{}
	for range 2 {
		if err := seal.AddInto(s, sum, one); err != nil {
			b.Fatal(err)
		}
	}
	m := Message{Kind: KindGramSum, Round: 3, Sealed: sum}
	b.ResetTimer()
	for range b.N {
		out, err := EncodeMessage(s, m)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}
