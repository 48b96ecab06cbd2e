package threshold

import (
	"fmt"
	"math"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

// thrScheme is the threshold parameter set.
func thrScheme(t testing.TB) *seal.ThresholdBGV {
	t.Helper()
	s, err := seal.ThresholdScheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sharedScheme is the shared-key BGV scheme, for comparisons.
func sharedScheme(t testing.TB) *seal.BGV {
	t.Helper()
	s, err := seal.ByName("bgv")
	if err != nil {
		t.Fatal(err)
	}
	return s.(*seal.BGV)
}

func ids(n int) []PartyID {
	out := make([]PartyID, n)
	for i := range out {
		out[i] = PartyID(i + 1)
	}
	return out
}

// wire sends a message through its bytes, as the server relays it.
func wire[M interface{ Marshal() ([]byte, error) }](t testing.TB, m M, dec func([]byte) (M, error)) M {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := dec(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// federation runs the whole setup of a t-of-n committee over the wire
// encodings: setup shares to the server and back to everyone, Shamir shares
// routed by recipient.
func federation(t testing.TB, n, thr int) (*Federation, []*Party) {
	t.Helper()
	return federationWith(t, Config{Federation: fmt.Sprintf("test-%d-of-%d", thr, n), Parties: ids(n), Threshold: thr})
}

func federationWith(t testing.TB, cfg Config) (*Federation, []*Party) {
	t.Helper()
	f, err := New(thrScheme(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := len(cfg.Parties)
	parties := make([]*Party, n)
	var setups []*SetupShare
	for i := range parties {
		if parties[i], err = NewParty(f, cfg.Parties[i], link); err != nil {
			t.Fatal(err)
		}
		s, err := parties[i].Setup()
		if err != nil {
			t.Fatal(err)
		}
		setups = append(setups, wire(t, s, f.UnmarshalSetupShare))
	}
	inbox := map[PartyID][]*EncryptedShare{}
	for _, p := range parties {
		shares, err := p.Deal(setups)
		if err != nil {
			t.Fatal(err)
		}
		for _, es := range shares {
			got := wire(t, es, f.UnmarshalEncryptedShare) // the server reads To
			inbox[got.To] = append(inbox[got.To], got)
		}
	}
	for _, p := range parties {
		if err := p.Receive(setups, inbox[p.ID()]); err != nil {
			t.Fatal(err)
		}
		if !p.Ready() {
			t.Fatalf("party %d not ready after setup", p.ID())
		}
	}
	return f, parties
}

// openFor switches c to target's key with the shares of the active parties,
// all over the wire, and returns what the target opens.
func openFor(t testing.TB, f *Federation, byID map[PartyID]*Party, c seal.Chunk, active []PartyID, target *Party) []float64 {
	t.Helper()
	sw, err := switchFor(t, f, byID, c, active, target)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := target.Open(sw)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

func switchFor(t testing.TB, f *Federation, byID map[PartyID]*Party, c seal.Chunk, active []PartyID, target *Party) (*Switched, error) {
	t.Helper()
	tpk := wire(t, target.PublicKey(), f.UnmarshalOwnPublicKey)
	var shares []*SwitchShare
	for _, id := range active {
		sh, err := byID[id].SwitchShare(c, active, tpk)
		if err != nil {
			return nil, err
		}
		shares = append(shares, wire(t, sh, f.UnmarshalSwitchShare))
	}
	sw, err := f.AggregateSwitch(c, shares)
	if err != nil {
		return nil, err
	}
	return wire(t, sw, f.UnmarshalSwitched), nil
}

func byID(ps []*Party) map[PartyID]*Party {
	m := map[PartyID]*Party{}
	for _, p := range ps {
		m[p.ID()] = p
	}
	return m
}

// values returns a chunk of quantized values, distinct per seed, spanning
// the sealable range.
func values(n, seed int) []float64 {
	out := make([]float64, n)
	for i := range out {
		v := math.Sin(float64(i*7+seed*131)) * float64(seed%5+1) * 1000
		out[i] = seal.Quantize(v / 3)
	}
	out[0], out[1] = seal.MaxAbs/2, -seal.MaxAbs/2
	return out
}

// equalBits reports the first slot where got and want differ as float64
// bit patterns, or -1.
func equalBits(got, want []float64) int {
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			return i
		}
	}
	if len(got) != len(want) {
		return len(want)
	}
	return -1
}

// subsets returns every k-subset of ids, ascending.
func subsets(ids []PartyID, k int) [][]PartyID {
	if k == 0 {
		return [][]PartyID{{}}
	}
	var out [][]PartyID
	for i := range ids {
		for _, rest := range subsets(ids[i+1:], k-1) {
			out = append(out, append([]PartyID{ids[i]}, rest...))
		}
	}
	return out
}

// panicTB fails by panicking: for setups made outside a test (sync.Once).
type panicTB struct{ testing.TB }

func (panicTB) Helper()                   {}
func (panicTB) Fatal(a ...any)            { panic(fmt.Sprint(a...)) }
func (panicTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
