package threshold

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
)

var link = bytes.Repeat([]byte{0x5a}, 32)

// TestDropoutAndRestart: with 3-of-5, two members that never return after
// setup do not block opening; a member whose tab reloads restores its state
// from storage (encrypted by the link secret) and takes part as before, with
// the same setup share and keys.
func TestDropoutAndRestart(t *testing.T) {
	f, parties := federation(t, 5, 3)
	s := f.Scheme()
	sl, _ := parties[0].Sealer()
	vals := values(s.ChunkLen(), 4)
	c, _ := sl.Seal(vals)

	// Parties 2 and 4 drop for good; party 3 reloads.
	stored, err := parties[2].Save(link)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Restore(f, stored, link)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := parties[2].Setup()
	b, _ := back.Setup()
	ab, _ := a.Marshal()
	bb, _ := b.Marshal()
	if !bytes.Equal(ab, bb) || !back.Ready() {
		t.Fatal("restored party has another setup share or is not ready")
	}
	live := map[PartyID]*Party{1: parties[0], 3: back, 5: parties[4]}
	for _, target := range []*Party{parties[0], back} {
		got := openFor(t, f, live, c, []PartyID{1, 3, 5}, target)
		if i := equalBits(got, vals); i >= 0 {
			t.Fatalf("target %d: slot %d = %v, want %v", target.ID(), i, got[i], vals[i])
		}
	}
	// The restored party still seals under the same collective key.
	sl2, err := back.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := sl2.Seal(vals)
	if got := openFor(t, f, live, c2, []PartyID{1, 3, 5}, parties[4]); equalBits(got, vals) >= 0 {
		t.Fatal("a chunk the restored party sealed does not open")
	}
}

// TestFewerThanT: the server refuses fewer (or more) than t shares, shares
// for different chunks, targets or active sets; a party refuses an active
// set that is not exactly t committee members with itself among them.
func TestFewerThanT(t *testing.T) {
	f, parties := federation(t, 5, 3)
	s := f.Scheme()
	sl, _ := parties[0].Sealer()
	c, _ := sl.Seal(values(s.ChunkLen(), 1))
	d, _ := sl.Seal(values(s.ChunkLen(), 2))
	tpk := parties[0].PublicKey()
	active := []PartyID{2, 3, 4}
	var shares []*SwitchShare
	for _, id := range active {
		sh, err := parties[id-1].SwitchShare(c, active, tpk)
		if err != nil {
			t.Fatal(err)
		}
		shares = append(shares, sh)
	}
	other, _ := parties[4].SwitchShare(c, []PartyID{2, 3, 5}, tpk)
	forD, _ := parties[3].SwitchShare(d, active, tpk)
	toTwo, _ := parties[3].SwitchShare(c, active, parties[1].PublicKey())
	for name, set := range map[string][]*SwitchShare{
		"t-1 shares":       shares[:2],
		"one share":        shares[:1],
		"t+1 shares":       append(shares[:3:3], other),
		"duplicate":        {shares[0], shares[1], shares[1]},
		"other active":     {shares[0], shares[1], other},
		"other chunk":      {shares[0], shares[1], forD},
		"other target":     {shares[0], shares[1], toTwo},
		"nil":              {shares[0], shares[1], nil},
		"no shares at all": nil,
	} {
		if _, err := f.AggregateSwitch(c, set); err == nil {
			t.Errorf("%s: aggregated", name)
		}
	}
	if _, err := f.AggregateSwitch(c, shares); err != nil {
		t.Fatal(err)
	}
	for name, act := range map[string][]PartyID{
		"t-1 members":    {2, 3},
		"t+1 members":    {1, 2, 3, 4},
		"not ascending":  {3, 2, 4},
		"non-member":     {2, 3, 9},
		"without itself": {1, 3, 4},
	} {
		if _, err := parties[1].SwitchShare(c, act, tpk); err == nil {
			t.Errorf("%s: party 2 made a share", name)
		}
	}
}

// TestPersistence: state round trip before and after setup; another link
// secret, another federation, a changed byte are refused with clear errors.
func TestPersistence(t *testing.T) {
	f, parties := federation(t, 3, 2)
	p := parties[1]
	stored, err := p.Save(link)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stored state: %d bytes", len(stored))
	back, err := Restore(f, stored, link)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != p.ID() || !equalPoly(back.tsk.Q, p.tsk.Q) || !equalPoly(back.cpk.P0, p.cpk.P0) || !equalPoly(back.sk.Value.Q, p.sk.Value.Q) ||
		!equalPoly(back.own.Value.Q, p.own.Value.Q) || !bytes.Equal(back.x.Bytes(), p.x.Bytes()) {
		t.Fatal("restored state differs")
	}
	// Before setup ends: only the seed.
	fresh, _ := NewParty(f, 2, link)
	early, _ := fresh.Save(link)
	if r, err := Restore(f, early, link); err != nil || r.Ready() {
		t.Fatalf("restore before setup: %v, ready %v", err, r != nil && r.Ready())
	}
	// Outside the committee: own key and collective key.
	outsider, _ := NewParty(f, 77, link)
	_ = outsider.SetCollectiveKey(p.CollectiveKey())
	ob, _ := outsider.Save(link)
	if r, err := Restore(f, ob, link); err != nil || !r.Ready() || r.sk != nil {
		t.Fatalf("outsider restore: %v", err)
	}

	wrong := bytes.Repeat([]byte{0x5b}, 32)
	if _, err := Restore(f, stored, wrong); !errors.Is(err, ErrWrongLinkSecret) {
		t.Errorf("wrong link secret: %v", err)
	} else if !strings.Contains(err.Error(), "link secret") {
		t.Errorf("unclear error: %v", err)
	}
	flipped := bytes.Clone(stored)
	flipped[len(flipped)-40] ^= 1
	if _, err := Restore(f, flipped, link); err == nil {
		t.Error("tampered state restored")
	}
	idChanged := bytes.Clone(stored)
	idChanged[stateHeader-4] ^= 1
	if _, err := Restore(f, idChanged, link); err == nil {
		t.Error("state with a changed party id restored")
	}
	g, _ := New(thrScheme(t), Config{Federation: "another", Parties: ids(3), Threshold: 2})
	if _, err := Restore(g, stored, link); err == nil || !strings.Contains(err.Error(), "another federation") {
		t.Errorf("other federation: %v", err)
	}
	if _, err := p.Save([]byte("short")); err == nil {
		t.Error("saved under a 5-byte link secret")
	}
	if _, err := NewParty(f, 2, []byte("short")); err == nil {
		t.Error("a party with a 5-byte link secret")
	}
	if _, err := Restore(f, stored[:20], link); err == nil {
		t.Error("truncated state restored")
	}
}

// TestOutsider: a participant outside the key committee seals under the
// collective key the server aggregated and has sums switched to it.
func TestOutsider(t *testing.T) {
	f, parties := federation(t, 3, 2)
	var setups []*SetupShare
	for _, p := range parties {
		s, _ := p.Setup()
		setups = append(setups, s)
	}
	cpk, err := f.AggregatePublicKey(setups)
	if err != nil {
		t.Fatal(err)
	}
	if !equalPoly(cpk.P0, parties[0].CollectiveKey().P0) {
		t.Fatal("server and members aggregate different keys")
	}
	out, _ := NewParty(f, 100, link)
	if _, err := out.Setup(); err == nil {
		t.Fatal("an outsider made a setup share")
	}
	if err := out.SetCollectiveKey(wire(t, cpk, f.UnmarshalCollectivePublicKey)); err != nil {
		t.Fatal(err)
	}
	// Or, checking the shares the key is made of.
	checked, _ := NewParty(f, 101, link)
	if err := checked.AcceptSetups(setups); err != nil {
		t.Fatal(err)
	}
	if !equalPoly(checked.CollectiveKey().P0, cpk.P0) {
		t.Fatal("an outsider aggregates another key")
	}
	sl, _ := out.Sealer()
	vals := values(f.Scheme().ChunkLen(), 5)
	c, _ := sl.Seal(vals)
	if got := openFor(t, f, byID(parties), c, []PartyID{1, 3}, out); equalBits(got, vals) >= 0 {
		t.Fatal("outsider's sum did not open for it")
	}
	if _, err := out.SwitchShare(c, []PartyID{1, 3}, out.PublicKey()); err == nil {
		t.Fatal("an outsider made a switching share")
	}
}

// TestSetupRefuses: a member refuses a setup in which the server replaced
// its own share, a missing or duplicated share, and a Shamir share that was
// tampered with or redirected.
func TestSetupRefuses(t *testing.T) {
	f, err := New(thrScheme(t), Config{Federation: "refuse", Parties: ids(3), Threshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ps []*Party
	var setups []*SetupShare
	for i := 1; i <= 3; i++ {
		p, _ := NewParty(f, PartyID(i), link)
		s, _ := p.Setup()
		ps, setups = append(ps, p), append(setups, s)
	}
	impostor, _ := NewParty(f, 1, link) // another instance of member 1, with the link secret
	fake, _ := impostor.Setup()
	if _, err := ps[0].Deal([]*SetupShare{fake, setups[1], setups[2]}); err == nil {
		t.Error("dealt with a replaced own setup share")
	}
	if _, err := ps[0].Deal(setups[:2]); err == nil {
		t.Error("dealt with a missing setup share")
	}
	if _, err := ps[0].Deal([]*SetupShare{setups[0], setups[1], setups[1]}); err == nil {
		t.Error("dealt with a duplicated setup share")
	}
	// A share redirected to another recipient, or with a flipped bit.
	var two, three []*EncryptedShare
	for _, p := range ps {
		d, _ := p.Deal(setups)
		for _, es := range d {
			if es.To == 2 {
				two = append(two, es)
			} else if es.To == 3 {
				three = append(three, es)
			}
		}
	}
	redirected := *two[0] // 1 -> 2
	redirected.To = 3
	if err := ps[2].Receive(setups, []*EncryptedShare{&redirected, three[1]}); err == nil {
		t.Error("accepted a share redirected to another recipient")
	}
	flipped := *two[0]
	flipped.Box = bytes.Clone(flipped.Box)
	flipped.Box[100] ^= 1
	if err := ps[1].Receive(setups, []*EncryptedShare{&flipped, two[1]}); err == nil || !strings.Contains(err.Error(), "does not decrypt") {
		t.Errorf("accepted a tampered share: %v", err)
	}
	if err := ps[1].Receive(setups, two[:1]); err == nil {
		t.Error("completed setup with a missing share")
	}
	if err := ps[1].Receive(setups, two); err != nil {
		t.Fatal(err)
	}
}

// TestSetupAuthenticated: the server, which lacks the link secret, swaps a
// member's X25519 key (to read the Shamir shares dealt to it), its
// collective-key share or its own public key (to have sums switched to a key
// of its own), or moves a field between two genuine setups of one member;
// every receiver (members in Deal and Receive, a participant outside the
// committee in AcceptSetups) refuses, naming the member and the field. A
// member refuses to make a switching share towards an own public key the
// server swapped. A share tagged under another federation's link secret is
// refused likewise.
func TestSetupAuthenticated(t *testing.T) {
	f, err := New(thrScheme(t), Config{Federation: "auth", Parties: ids(3), Threshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ps []*Party
	var setups []*SetupShare
	for i := 1; i <= 3; i++ {
		p, _ := NewParty(f, PartyID(i), link)
		s, _ := p.Setup()
		ps, setups = append(ps, p), append(setups, wire(t, s, f.UnmarshalSetupShare))
	}
	// The server's keys: its own X25519 key and key pair, made as a party
	// would, tagged under a link secret of its choosing.
	server, _ := NewParty(f, 2, bytes.Repeat([]byte{0x33}, 32))
	srv, _ := server.Setup()
	again, _ := NewParty(f, 2, link) // a second genuine instance of member 2
	other, _ := again.Setup()

	forge := map[string]func(s *SetupShare){
		"x25519": func(s *SetupShare) { s.X25519 = srv.X25519 },
		"ckg":    func(s *SetupShare) { s.CKG = srv.CKG },
		"own":    func(s *SetupShare) { s.Own = srv.Own },
		// every field and tag of the server's own setup under id 2
		"x25519 ": func(s *SetupShare) { *s = *srv },
		// X25519 key and its tag from another genuine setup of member 2
		"ckg ": func(s *SetupShare) { s.X25519, s.Auth[0] = other.X25519, other.Auth[0] },
	}
	outsider, _ := NewParty(f, 50, link)
	for name, change := range forge {
		field := strings.TrimSpace(name)
		forged := *setups[1]
		change(&forged)
		set := []*SetupShare{setups[0], wire(t, &forged, f.UnmarshalSetupShare), setups[2]}
		check := func(who string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s accepted a setup with member 2's %s swapped", who, name)
			} else if !strings.Contains(err.Error(), "party 2") || !strings.Contains(err.Error(), "field "+field) {
				t.Errorf("%s, %s swapped: error %q names no member 2 or field %s", who, name, err, field)
			}
		}
		_, err := ps[0].Deal(set)
		check("member 1 (Deal)", err)
		check("member 3 (Receive)", ps[2].Receive(set, nil))
		check("outsider (AcceptSetups)", outsider.AcceptSetups(set))
	}
	// The whole genuine set passes.
	if _, err := ps[0].Deal(setups); err != nil {
		t.Fatal(err)
	}
	if err := outsider.AcceptSetups(setups); err != nil {
		t.Fatal(err)
	}

	// A switching share towards a swapped own public key.
	fs, parties := federation(t, 3, 2)
	sl, _ := parties[0].Sealer()
	c, _ := sl.Seal(values(fs.Scheme().ChunkLen(), 1))
	victim := wire(t, parties[2].PublicKey(), fs.UnmarshalOwnPublicKey)
	evil, _ := NewParty(fs, 3, bytes.Repeat([]byte{0x33}, 32))
	swapped := *victim
	swapped.P0 = evil.PublicKey().P0
	if _, err := parties[0].SwitchShare(c, []PartyID{1, 2}, &swapped); err == nil || !strings.Contains(err.Error(), "party 3") || !strings.Contains(err.Error(), "field p0") {
		t.Errorf("switching share towards a swapped own key: %v", err)
	}
	if _, err := parties[0].SwitchShare(c, []PartyID{1, 2}, evil.PublicKey()); err == nil {
		t.Error("switching share towards a key tagged under another link secret")
	}
	if _, err := parties[0].SwitchShare(c, []PartyID{1, 2}, victim); err != nil {
		t.Fatal(err)
	}
}

// TestSwitchShares: one request of several jobs (two chunks, two targets,
// a chunk for both) gives the shares SwitchShare gives one by one: each
// set of t opens its chunk for its target exactly; a job naming no target
// or chunk and a swapped target key are refused.
func TestSwitchShares(t *testing.T) {
	f, parties := federation(t, 3, 2)
	s := f.Scheme()
	sl, _ := parties[0].Sealer()
	va, vb := values(s.ChunkLen(), 1), values(s.ChunkLen(), 2)
	a, _ := sl.Seal(va)
	b, _ := sl.Seal(vb)
	chunks := []seal.Chunk{a, b}
	targets := []*OwnPublicKey{parties[0].PublicKey(), parties[2].PublicKey()}
	jobs := [][2]int{{0, 0}, {1, 0}, {1, 1}}
	active := []PartyID{2, 3}
	byMember := map[PartyID][]*SwitchShare{}
	for _, id := range active {
		shares, err := parties[id-1].SwitchShares(chunks, active, targets, jobs)
		if err != nil {
			t.Fatal(err)
		}
		byMember[id] = shares
	}
	for n, job := range jobs {
		sw, err := f.AggregateSwitch(chunks[job[1]], []*SwitchShare{byMember[2][n], byMember[3][n]})
		if err != nil {
			t.Fatal(err)
		}
		got, err := parties[[]int{0, 2}[job[0]]].Open(sw)
		if err != nil {
			t.Fatal(err)
		}
		if i := equalBits(got, [][]float64{va, vb}[job[1]]); i >= 0 {
			t.Fatalf("job %d: slot %d differs", n, i)
		}
	}
	if _, err := parties[1].SwitchShares(chunks, active, targets, [][2]int{{2, 0}}); err == nil || !strings.Contains(err.Error(), "job 0") {
		t.Errorf("a job naming target 2 of 2: %v", err)
	}
	evil, _ := NewParty(f, 3, bytes.Repeat([]byte{0x33}, 32))
	swapped := *targets[1]
	swapped.P0 = evil.PublicKey().P0
	if _, err := parties[1].SwitchShares(chunks, active, []*OwnPublicKey{targets[0], &swapped}, jobs[:1]); err == nil || !strings.Contains(err.Error(), "party 3") {
		t.Errorf("a request with a swapped target key: %v", err)
	}
}
