package threshold

import (
	"bytes"
	"encoding/binary"
	"strings"
	"sync"
	"testing"
)

// samples holds one valid encoding of every message of a 2-of-3 federation.
type samples struct {
	f                                                *Federation
	setup, own, collective, shamir, sw, switched, st []byte
}

var sampleOnce = sync.OnceValue(func() *samples {
	f, ps := federation(panicTB{}, 3, 2)
	s := &samples{f: f}
	must := func(b []byte, err error) []byte {
		if err != nil {
			panic(err)
		}
		return b
	}
	su, _ := ps[0].Setup()
	s.setup = must(su.Marshal())
	s.own = must(ps[1].PublicKey().Marshal())
	s.collective = must(ps[0].CollectiveKey().Marshal())
	var setups []*SetupShare
	for _, p := range ps {
		x, _ := p.Setup()
		setups = append(setups, x)
	}
	dealt, _ := ps[0].Deal(setups)
	s.shamir = must(dealt[0].Marshal())
	sl, _ := ps[0].Sealer()
	c, _ := sl.Seal(values(f.Scheme().ChunkLen(), 1))
	a, _ := ps[0].SwitchShare(c, []PartyID{1, 2}, ps[2].PublicKey())
	b, _ := ps[1].SwitchShare(c, []PartyID{1, 2}, ps[2].PublicKey())
	s.sw = must(a.Marshal())
	swd, err := f.AggregateSwitch(c, []*SwitchShare{a, b})
	if err != nil {
		panic(err)
	}
	s.switched = must(swd.Marshal())
	s.st = must(ps[0].Save(link))
	return s
})

func (s *samples) decoders() map[string]struct {
	good []byte
	dec  func([]byte) (interface{ Marshal() ([]byte, error) }, error)
} {
	f := s.f
	type m = interface{ Marshal() ([]byte, error) }
	wrap := func(g func([]byte) (m, error)) func([]byte) (m, error) { return g }
	return map[string]struct {
		good []byte
		dec  func([]byte) (interface{ Marshal() ([]byte, error) }, error)
	}{
		"setup":      {s.setup, wrap(func(b []byte) (m, error) { return f.UnmarshalSetupShare(b) })},
		"own":        {s.own, wrap(func(b []byte) (m, error) { return f.UnmarshalOwnPublicKey(b) })},
		"collective": {s.collective, wrap(func(b []byte) (m, error) { return f.UnmarshalCollectivePublicKey(b) })},
		"shamir":     {s.shamir, wrap(func(b []byte) (m, error) { return f.UnmarshalEncryptedShare(b) })},
		"switch":     {s.sw, wrap(func(b []byte) (m, error) { return f.UnmarshalSwitchShare(b) })},
		"switched":   {s.switched, wrap(func(b []byte) (m, error) { return f.UnmarshalSwitched(b) })},
	}
}

// TestWireRoundTrip: every message decodes and encodes back to its bytes;
// sizes as the docs give them.
func TestWireRoundTrip(t *testing.T) {
	s := sampleOnce()
	for name, d := range s.decoders() {
		m, err := d.dec(d.good)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := m.Marshal()
		if err != nil || !bytes.Equal(again, d.good) {
			t.Fatalf("%s: does not encode back (%v)", name, err)
		}
		t.Logf("%-10s %6d bytes", name, len(d.good))
	}
}

func patched(b []byte, off int, v ...byte) []byte {
	out := bytes.Clone(b)
	copy(out[off:], v)
	return out
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// TestUnmarshalRefuses: each decoder refuses a broken header, length and
// every field, with an error naming it.
func TestUnmarshalRefuses(t *testing.T) {
	s := sampleOnce()
	ff := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	h := headerLen
	cases := []struct {
		msg, name string
		b         []byte
		want      string
	}{
		{"setup", "magic", patched(s.setup, 0, 'x'), "magic"},
		{"setup", "version", patched(s.setup, 2, 9), "version"},
		{"setup", "type", patched(s.setup, 3, msgOwnKey), "message type"},
		{"setup", "tag", patched(s.setup, 4, 0, 0, 0), "another federation"},
		{"setup", "short", s.setup[:len(s.setup)-1], "field auth own"},
		{"setup", "no tags", s.setup[:len(s.setup)-3*macLen], "field auth x25519"},
		{"setup", "long", append(bytes.Clone(s.setup), 0), "after the last field"},
		{"setup", "header", s.setup[:5], "header"},
		{"setup", "from 0", patched(s.setup, h, u32(0)...), "field from"},
		{"setup", "from outsider", patched(s.setup, h, u32(9)...), "field from"},
		{"setup", "ckg coefficient", patched(s.setup, h+4+32, ff...), "field ckg"},
		{"setup", "own coefficient", patched(s.setup, len(s.setup)-3*macLen-8, ff...), "field own"},
		{"own", "id 0", patched(s.own, h, u32(0)...), "field id"},
		{"own", "p0", patched(s.own, h+4, ff...), "field p0"},
		{"own", "short", s.own[:h+4+100], "field p0"},
		{"own", "tag short", s.own[:len(s.own)-1], "field auth"},
		{"collective", "p0", patched(s.collective, h+8, ff...), "field p0"},
		{"collective", "long", append(bytes.Clone(s.collective), 1, 2), "after the last field"},
		{"shamir", "from outsider", patched(s.shamir, h, u32(7)...), "field from"},
		{"shamir", "to outsider", patched(s.shamir, h+4, u32(7)...), "field to"},
		{"shamir", "to itself", patched(s.shamir, h+4, u32(1)...), "field to"},
		{"shamir", "short box", s.shamir[:len(s.shamir)-1], "field box"},
		{"switch", "from", patched(s.sw, h, u32(5)...), "field from"},
		{"switch", "target 0", patched(s.sw, h+4, u32(0)...), "field target"},
		{"switch", "active count", patched(s.sw, h+8, 3, 0), "field active count"},
		{"switch", "active outsider", patched(s.sw, h+10, u32(8)...), "field active[0]"},
		{"switch", "active order", patched(s.sw, h+10, append(u32(2), u32(1)...)...), "field active"},
		{"switch", "sender not active", patched(s.sw, h+10, append(u32(2), u32(3)...)...), "not in the active set"},
		{"switch", "value coefficient", patched(s.sw, h+10+8+32, ff...), "field value[0]"},
		{"switch", "value[1] short", s.sw[:len(s.sw)-8], "field value[1]"},
		{"switched", "to 0", patched(s.switched, h, u32(0)...), "field to"},
		{"switched", "chunk", patched(s.switched, h+4, 'x'), "field chunk"},
		{"switched", "chunk short", s.switched[:len(s.switched)-1], "field chunk"},
	}
	decs := s.decoders()
	for _, c := range cases {
		_, err := decs[c.msg].dec(c.b)
		if err == nil {
			t.Errorf("%s/%s: accepted", c.msg, c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s: error %q does not name %q", c.msg, c.name, err, c.want)
		}
	}
	// A message of one kind is not another.
	if _, err := s.f.UnmarshalSwitchShare(s.setup); err == nil {
		t.Error("a setup share decoded as a switching share")
	}
}

// fuzzDecoder: whatever arrives, a decoder returns a message or an error,
// never panics, and what it accepts encodes back to the same bytes.
func fuzzDecoder(f *testing.F, msg string) {
	s := sampleOnce()
	d := s.decoders()[msg]
	f.Add(d.good)
	f.Add(d.good[:headerLen])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := d.dec(b)
		if err != nil {
			return
		}
		again, err := m.Marshal()
		if err != nil {
			t.Fatalf("accepted %s does not encode: %v", msg, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted %s encodes to other bytes", msg)
		}
	})
}

func FuzzUnmarshalSetupShare(f *testing.F)          { fuzzDecoder(f, "setup") }
func FuzzUnmarshalOwnPublicKey(f *testing.F)        { fuzzDecoder(f, "own") }
func FuzzUnmarshalCollectivePublicKey(f *testing.F) { fuzzDecoder(f, "collective") }
func FuzzUnmarshalEncryptedShare(f *testing.F)      { fuzzDecoder(f, "shamir") }
func FuzzUnmarshalSwitchShare(f *testing.F)         { fuzzDecoder(f, "switch") }
func FuzzUnmarshalSwitched(f *testing.F)            { fuzzDecoder(f, "switched") }

// FuzzRestore: a stored state that is not one Save wrote under this link
// secret is refused, never panics.
func FuzzRestore(f *testing.F) {
	s := sampleOnce()
	f.Add(s.st)
	f.Add(s.st[:stateHeader])
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Restore(s.f, b, link)
		if err == nil && p == nil {
			t.Fatal("nil party without an error")
		}
	})
}
