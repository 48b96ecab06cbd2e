package protocol

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/seal"
)

// keyFeds runs the same federation (groups sample groups x q feature
// blocks) with the shared key and with threshold keys and returns both.
func keyFeds(t *testing.T, cfg Config, groups, q int) (shared, thr *fed) {
	t.Helper()
	d := testData(60, 6, 3)
	blocks := gridBlocks(d, groups, q)
	bgv, err := seal.ByName("bgv")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := seal.ThresholdScheme()
	if err != nil {
		t.Fatal(err)
	}
	shared = newFedScheme(t, blocks, cfg, bgv)
	cfg.Keys = KeysThreshold
	thr = newFedScheme(t, blocks, cfg, ts)
	return shared, thr
}

// sameRounds fails unless both runs recorded the same rounds, bit for bit.
func sameRounds(t *testing.T, a, b []RoundMetrics) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d rounds against %d", len(a), len(b))
	}
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	for i := range a {
		if !same(a[i].Primal, b[i].Primal) || !same(a[i].Dual, b[i].Dual) || !same(a[i].Gamma, b[i].Gamma) || !same(a[i].HeldAcc, b[i].HeldAcc) {
			t.Fatalf("round %d: P=%v D=%v gamma=%v in the first run, P=%v D=%v gamma=%v in the second",
				a[i].Round, a[i].Primal, a[i].Dual, a[i].Gamma, b[i].Primal, b[i].Dual, b[i].Gamma)
		}
	}
}

// TestThresholdSameAsShared: with 2-of-3 threshold keys over four
// participants every rule and step (HyFDCA's block, hyfed and paper steps,
// sealed primal, partial participation, FedAvg, HyFEM-Prox, FedHybrid)
// trains to the same rounds and the same w as with the shared key, bit for
// bit: the switched sums open to the very values.
func TestThresholdSameAsShared(t *testing.T) {
	for name, cfg := range map[string]Config{
		"block":                             {Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1},
		"block, one solver a group":         {Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1},
		"paper":                             {Lambda: 0.05, Step: StepPaper, Inner: 3, Rounds: 3, Seed: 1, Gamma: 0.5},
		"seal-primal":                       {Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1, SealPrimal: true},
		"paper sealed primal, fraction 0.6": {Lambda: 0.05, Step: StepPaper, Inner: 3, Rounds: 4, Seed: 2, SealPrimal: true, Fraction: 0.6},
		"fedavg":                            {Algo: averaging.FedAvg, Lambda: 1e-2, Rounds: 3, Inner: 5, StepA: 0.3, StepB: 1, Seed: 5},
		"hyfem-prox":                        {Algo: averaging.HyFEMProx, Lambda: 1e-2, Rounds: 3, Inner: 5, StepA: 0.2, StepB: 1, Mu: 0.1, Seed: 3},
		"fedhybrid":                         {Algo: fedhybrid.Name, Loss: "logistic", Lambda: 1e-2, Rounds: 3, Inner: 1, Mu: 0.05},
	} {
		t.Run(name, func(t *testing.T) {
			groups, q := 2, 2
			if cfg.Algo == fedhybrid.Name {
				groups, q = 4, 1 // horizontal
			}
			sh, thr := keyFeds(t, cfg, groups, q)
			switches := 0
			thr.mem.Observe = func(toServer bool, _ int, m *Message) {
				if !toServer && m.Kind == KindSwitch {
					switches++
				}
			}
			want := sh.run(t)
			got := thr.run(t)
			if switches == 0 {
				t.Fatal("no switch request: nothing went through the threshold keys")
			}
			sameRounds(t, want, got)
			for i, v := range sh.coord.W() {
				if math.Float64bits(v) != math.Float64bits(thr.coord.W()[i]) {
					t.Fatalf("w[%d] = %v with threshold keys, %v with the shared key", i, thr.coord.W()[i], v)
				}
			}
			last := len(got) - 1
			t.Logf("final P = %.12g; %d switch requests; bytes in/out in round %d: shared %d/%d, threshold %d/%d", got[last].Primal, switches,
				last, want[last].BytesIn, want[last].BytesOut, got[last].BytesIn, got[last].BytesOut)
		})
	}
}

// observedChunk is a chunk that crossed the server: its receiver or
// sender, and whether the server received it (else it sent it).
type observedChunk struct {
	client   int
	toServer bool
	request  bool // in a switch request: a sum under the collective key
	c        seal.Chunk
}

// observeChunks records every chunk of sealed vectors and switch requests
// that passes the server.
func observeChunks(t *testing.T, f *fed, s seal.Scheme) *[]observedChunk {
	var seen []observedChunk
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		for _, v := range []seal.Vec{m.Sealed, m.Alpha} {
			for _, ci := range v.Indexes() {
				seen = append(seen, observedChunk{client: k, toServer: toServer, c: v[ci]})
			}
		}
		if m.Kind == KindSwitch { // sums under the collective key, to a member
			for _, b := range m.Keys[len(m.OwnKeys):] {
				c, err := s.Unmarshal(b)
				if err != nil {
					t.Fatal(err)
				}
				seen = append(seen, observedChunk{client: k, request: true, c: c})
			}
		}
	}
	return &seen
}

// plausible returns the share of a chunk's values that open to a number of
// magnitude below 100 (an error counts as none): the test federations seal
// small values (and zeros in the padding of a threshold chunk's 4,096
// slots), while a key that does not open a chunk finds values spread over
// the whole fixed-point range of ±2^17, below 100 with probability 0.08%.
func plausible(key seal.Key, c seal.Chunk) float64 {
	vals, err := key.Open(c)
	if err != nil || len(vals) == 0 {
		return 0
	}
	n := 0
	for _, v := range vals {
		if math.Abs(v) < 100 {
			n++
		}
	}
	return float64(n) / float64(len(vals))
}

// TestThresholdServerView: everything the server of a threshold federation
// saw (every participant's sealed uploads, the sums it asked members to
// switch, the switched sums it sent) opens with no single participant's
// key, except a switched sum with the key of the participant it was sent to.
// So the server with any one participant (t-1 = 1 of a 2-of-3 committee)
// opens nothing of another's; the key layer's TestCollusion plays the
// coalitions' other attacks (combining shares, switching with fewer than t).
// With the shared key, the same check finds that one participant's key
// opens everything the server saw.
func TestThresholdServerView(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 2, Seed: 1, SealPrimal: true}
	sh, thr := keyFeds(t, cfg, 2, 2)
	seenSh := observeChunks(t, sh, sh.coord.Scheme())
	seenThr := observeChunks(t, thr, thr.coord.Scheme())
	sh.run(t)
	thr.run(t)

	key0 := sh.mem.Participant(0).key
	for _, o := range *seenSh {
		if z := plausible(key0, o.c); z < 0.9 {
			t.Fatalf("shared key: participant 0's key opens a chunk the server saw to only %.0f%% plausible values", 100*z)
		}
	}
	n := len(thr.mem.parts)
	opened, refused := 0, 0
	for _, o := range *seenThr {
		for k := range n {
			z := plausible(thr.mem.Participant(k).key, o.c)
			entitled := !o.toServer && !o.request && o.client == k // a sum switched to k
			switch {
			case entitled && z >= 0.9:
				opened++
			case entitled:
				t.Fatalf("participant %d opens a sum switched to it to only %.0f%% plausible values", k, 100*z)
			case z > 0.01:
				t.Fatalf("participant %d's key opens a chunk the server %s participant %d (%.1f%% plausible values; switch request: %v)",
					k, map[bool]string{true: "received from", false: "sent to"}[o.toServer], o.client, 100*z, o.request)
			default:
				refused++
			}
		}
	}
	if opened == 0 || refused == 0 {
		t.Fatalf("%d chunks opened by their receivers, %d refused", opened, refused)
	}
	t.Logf("%d chunks seen by the server; %d openings by the receiver, %d attempts by other keys found nothing", len(*seenThr), opened, refused)
}

// TestThresholdDropAndReturn: a committee member (participant 1 of the
// 2-of-3 committee 0, 1, 2) leaves in the middle of round 2's switching and
// comes back in round 4 as a fresh tab, without its share. The request it
// owed is asked again of the other two; back, it gets a new own key and the
// collective key (checked against the setup shares' tags), takes part
// again (its sums switched to its new key), and no longer switches; the
// federation runs every round with finite metrics. Then member 0 leaves for
// good as well: with one member left of t = 2, the federation stops with an
// error that says so.
func TestThresholdDropAndReturn(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 6, Seed: 1, Quorum: 0.5}
	_, thr := keyFeds(t, cfg, 2, 2)
	dropped, back := false, false
	owed, rejoins := false, 0
	thr.mem.Lose = func(to int, m *Message) bool { // its tab hangs on the request, then closes
		if m.Kind == KindSwitch && to == 1 && thr.coord.Round() == 2 && !owed {
			owed = true
			return true
		}
		return false
	}
	thr.mem.Observe = func(toServer bool, k int, m *Message) {
		if !toServer && m.Kind == KindKeySetup && m.KeySetup.Rejoin {
			rejoins++
		}
	}
	thr.mem.Hook = func() {
		switch {
		case !dropped && owed:
			dropped = true
			thr.mem.Drop(1)
		case dropped && !back && thr.coord.Round() == 4:
			back = true
			if err := thr.mem.Join(1); err != nil {
				t.Fatal(err)
			}
		}
	}
	hist := thr.run(t)
	if !dropped || !back || rejoins != 1 || len(thr.coord.keys.retired) == 0 {
		t.Fatalf("script did not run: dropped %v, back %v, %d key rejoins, %d requests asked again", dropped, back, rejoins, len(thr.coord.keys.retired))
	}
	last := hist[len(hist)-1]
	if len(hist) != cfg.Rounds+1 || !finite(last.Primal) || last.Partial {
		t.Fatalf("%d rounds recorded, the last P=%v partial %v", len(hist), last.Primal, last.Partial)
	}
	if !thr.coord.keys.lost[1] || !thr.coord.Clients()[1].Ready {
		t.Fatalf("member 1 back: lost %v, ready %v", thr.coord.keys.lost[1], thr.coord.Clients()[1].Ready)
	}

	// Members 0 and 1 come back without their shares: one member holds
	// its share, t = 2.
	_, thr = keyFeds(t, cfg, 2, 2)
	thr.mem.OnError = func(int, error) {}
	var stopped string
	thr.mem.Observe = func(toServer bool, k int, m *Message) {
		if !toServer && m.Kind == KindError && m.Code == CodeStopped {
			stopped = m.Err
		}
	}
	gone := false
	thr.mem.Hook = func() {
		switch {
		case thr.coord.Round() == 2 && !gone:
			gone = true
			thr.mem.Drop(0)
			thr.mem.Drop(1)
		case gone && !thr.mem.Connected(0) && !thr.coord.Finished():
			for _, k := range []int{0, 1} {
				if err := thr.mem.Join(k); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	thr.run(t)
	if !strings.Contains(stopped, "1 of the key committee's members still hold their shares, t = 2 are needed") {
		t.Fatalf("with one member left: %q", stopped)
	}
}

// TestThresholdSetupDrop: a member that leaves during the key setup stops
// it; when it is back the setup runs again for everyone, and the
// federation trains as if nothing happened (bit for bit as the shared key).
func TestThresholdSetupDrop(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 2, Seed: 1}
	sh, thr := keyFeds(t, cfg, 2, 2)
	setups, dropped, back := 0, false, false
	thr.mem.Observe = func(toServer bool, _ int, m *Message) {
		if !toServer && m.Kind == KindKeySetup {
			setups++
		}
	}
	thr.mem.Hook = func() {
		switch {
		case !dropped && thr.coord.Phase() == PhaseKeys:
			dropped = true
			thr.mem.Drop(2)
		case dropped && !back && thr.coord.Phase() == "":
			back = true
			if err := thr.mem.Join(2); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := thr.run(t)
	if setups != 8 || !back {
		t.Fatalf("%d key-setup messages (want two setups of 4), back %v", setups, back)
	}
	sameRounds(t, sh.run(t), got)
}

// TestThresholdRestore: the server dies mid-round; its coordinator comes
// back from the last checkpoint (which carries the key committee and the
// setup shares), and the participants come back as reloaded tabs: three
// restore their party from the stored key state, one (member 2) lost it.
// The members with their stored state switch again (member 2 no longer),
// every round is recorded once, the rounds before the checkpoint are those
// of the uninterrupted run and the last one is complete.
func TestThresholdRestore(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 8, Seed: 1}
	_, whole := keyFeds(t, cfg, 2, 2)
	want := whole.run(t)
	_, crashed := keyFeds(t, cfg, 2, 2)
	last := crashAt(t, crashed, 5, PhaseDirection)
	if last.Round != 4 {
		t.Fatalf("last checkpoint of round %d, want 4", last.Round)
	}
	states := make([][]byte, 4)
	for k := range states {
		var err error
		if states[k], err = crashed.mem.Participant(k).KeyState(); err != nil || states[k] == nil {
			t.Fatalf("participant %d: key state %d bytes, %v", k, len(states[k]), err)
		}
	}
	c, err := Restore(crashed.coord.Scheme(), last.Setup, last.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	_, g := keyFeds(t, cfg, 2, 2)
	g.coord = c
	for k := range states {
		if k != 2 { // member 2's tab lost its storage
			g.mem.Participant(k).RestoreKeyState(states[k])
		}
	}
	h := g.run(t)
	if len(h) != cfg.Rounds+1 {
		t.Fatalf("%d rounds recorded, want %d", len(h), cfg.Rounds+1)
	}
	for i, r := range h {
		if r.Round != i || (i <= 4 && math.Float64bits(r.Primal) != math.Float64bits(want[i].Primal)) {
			t.Fatalf("round %d (entry %d): P %v, uninterrupted %v", r.Round, i, r.Primal, want[i].Primal)
		}
	}
	if r := h[len(h)-1]; r.Partial || !finite(r.Primal) {
		t.Fatalf("last round: P %v, partial %v", r.Primal, r.Partial)
	}
	if lost := c.keys.lost; !lost[2] || lost[0] || lost[1] {
		t.Fatalf("members without their share after the restart: %v, want member 2 only", lost)
	}
}

// TestThresholdBadKeyMessages: switching shares from outside the active
// set, for no open request, malformed or of the wrong count, and key setup
// replies out of phase are refused with errors that say what was wrong,
// and the run ends bit for bit where an undisturbed one ends.
func TestThresholdBadKeyMessages(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1}
	_, clean := keyFeds(t, cfg, 2, 2)
	want := clean.run(t)
	_, f := keyFeds(t, cfg, 2, 2)
	var errs []string
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if !toServer && m.Kind == KindError {
			errs = append(errs, m.Err)
		}
	}
	f.mem.OnError = func(int, error) {}
	injected := false
	f.mem.Hook = func() {
		if injected || f.coord.Round() != 2 || len(f.coord.keys.batches) == 0 {
			return
		}
		injected = true
		var b *switchBatch
		for _, x := range f.coord.keys.batches {
			b = x
		}
		outsider := 3 // participant 3 is not on the committee 0, 1, 2
		bad := []struct {
			from int
			m    Message
		}{
			{outsider, Message{Kind: KindSwitchShares, Round: 2, Batch: b.id, Keys: make([][]byte, len(b.jobs))}},
			{b.active[0], Message{Kind: KindSwitchShares, Round: 2, Batch: b.id + 1000}},
			{b.active[0], Message{Kind: KindSwitchShares, Round: 2, Batch: b.id, Keys: [][]byte{[]byte("short")}}},
			{b.active[0], Message{Kind: KindSwitchShares, Round: 2, Batch: b.id, Keys: slices.Repeat([][]byte{[]byte("not a share")}, len(b.jobs))}},
			{0, Message{Kind: KindKeyShare, Round: 2, Keys: [][]byte{[]byte("x")}}},
		}
		for _, x := range bad {
			out := f.coord.Step(Input{Kind: InputMessage, From: x.from, Msg: x.m})
			if err := f.mem.Deliver(context.Background(), out); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := f.run(t)
	if !injected || len(errs) != 5 {
		t.Fatalf("injected %v; %d error replies, want 5: %q", injected, len(errs), errs)
	}
	for i, want := range []string{"not in request", "no switch request", "1 shares for", "job 0", `unexpected "key-share"`} {
		if !strings.Contains(errs[i], want) {
			t.Errorf("error %d: %q, want one saying %q", i, errs[i], want)
		}
	}
	sameRounds(t, want, got)
}

// TestThresholdHungMember: a committee member stays connected but never
// answers a switch request (a hung tab) from some round on. At the phase
// deadline it is the one closed with CodeDeadline, naming the request and
// the round; its requests are asked again of the other members, the
// participants whose messages they held stay connected (under a fresh
// deadline), the round completes and the federation runs every round.
// Without the member's drop, the deadline would have dropped the receivers
// and kept the member.
func TestThresholdHungMember(t *testing.T) {
	for _, tc := range []struct {
		name          string
		member, round int
		silent        int // -1, or a participant that hangs altogether once the member hung
	}{
		{"member 1 from round 2", 1, 2, -1},
		{"member 0 from round 1", 0, 1, -1},
		{"member 2 from round 3", 2, 3, -1},
		// 3's messages held for the member's request go out once it is asked
		// again, and are lost: the new deadline drops 3 as before.
		{"member 1 from round 2, participant 3 after it", 1, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 5, Seed: 1, Quorum: 0.5}
			_, thr := keyFeds(t, cfg, 2, 2)
			hung := 0
			thr.mem.Lose = func(to int, m *Message) bool {
				if thr.coord.Round() < tc.round {
					return false
				}
				if m.Kind == KindSwitch && to == tc.member {
					hung++
					return true
				}
				return to == tc.silent && hung > 0
			}
			type closed struct {
				to  int
				err string
			}
			var deadline []closed
			thr.mem.Observe = func(toServer bool, k int, m *Message) {
				if !toServer && m.Kind == KindError && m.Code == CodeDeadline {
					deadline = append(deadline, closed{k, m.Err})
				}
			}
			// The Ready of the deadline: the same phase goes on under a new
			// number (a new deadline), the request asked again of others.
			var prev, at Ready
			thr.mem.OnReady = func(r Ready) {
				if at.PhaseSeq == 0 && slices.ContainsFunc(r.Envelopes, func(e Envelope) bool { return e.Msg.Code == CodeDeadline }) {
					at = r
					if r.Phase == "" || r.Phase != prev.Phase || r.PhaseSeq != prev.PhaseSeq+1 {
						t.Errorf("after the deadline: phase %q #%d, before %q #%d: want the same phase under the next number", r.Phase, r.PhaseSeq, prev.Phase, prev.PhaseSeq)
					}
					if !slices.ContainsFunc(r.Envelopes, func(e Envelope) bool { return e.Msg.Kind == KindSwitch && e.To != tc.member }) {
						t.Error("after the deadline: no switch request asked again of the other members")
					}
				}
				prev = r
			}
			hist := thr.run(t)
			if hung == 0 || at.PhaseSeq == 0 {
				t.Fatal("script did not run: no switch request to the member was swallowed")
			}
			gone := map[int]bool{tc.member: true}
			if tc.silent >= 0 {
				gone[tc.silent] = true
			}
			if len(deadline) != len(gone) {
				t.Fatalf("deadline errors %+v, want one to member %d and one to participant %d", deadline, tc.member, tc.silent)
			}
			for _, d := range deadline {
				want := "no switch-shares reply to switch request"
				if d.to != tc.member {
					want = "reply before the deadline"
				}
				if !gone[d.to] || !strings.Contains(d.err, want) || !strings.Contains(d.err, fmt.Sprintf("before the deadline of round %d", tc.round)) {
					t.Fatalf("participant %d told %q, want it told it was late in round %d (%q)", d.to, d.err, tc.round, want)
				}
			}
			for k, ci := range thr.coord.Clients() {
				if ci.Connected != !gone[k] || thr.mem.Connected(k) != !gone[k] {
					t.Fatalf("participant %d: connected %v (transport %v), want %v", k, ci.Connected, thr.mem.Connected(k), !gone[k])
				}
			}
			if len(hist) != cfg.Rounds+1 || !thr.coord.Finished() {
				t.Fatalf("%d rounds recorded, want %d (finished %v)", len(hist), cfg.Rounds+1, thr.coord.Finished())
			}
			for _, r := range hist {
				if !finite(r.Primal) && !r.Partial {
					t.Fatalf("round %d: P %v", r.Round, r.Primal)
				}
			}
		})
	}
}

// TestThresholdSwitchRequestsSpread: a Step's switching goes in requests
// of at most switchRequestJobs jobs, each to t members taking turns, so
// every member of the committee switches; the federation trains bit for bit
// as with the shared key.
func TestThresholdSwitchRequestsSpread(t *testing.T) {
	defer func(n int) { switchRequestJobs = n }(switchRequestJobs)
	switchRequestJobs = 3
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1}
	sh, thr := keyFeds(t, cfg, 2, 2)
	asked := map[int]int{}
	maxJobs := 0
	thr.mem.Observe = func(toServer bool, k int, m *Message) {
		if !toServer && m.Kind == KindSwitch {
			asked[k]++
			maxJobs = max(maxJobs, len(m.Jobs))
		}
	}
	got := thr.run(t)
	sameRounds(t, sh.run(t), got)
	if maxJobs > switchRequestJobs {
		t.Errorf("a switch request of %d jobs, the bound is %d", maxJobs, switchRequestJobs)
	}
	for _, k := range thr.coord.keys.members {
		if asked[k] == 0 {
			t.Errorf("committee member %d was asked for no switching shares (requests by member: %v)", k, asked)
		}
	}
}

// TestThresholdOwnKeysOncePerConnection: a member gets each target's own
// public key once per connection, not with every request; a member that
// comes back (its party restored) gets them again and switches again, and
// a federation whose member's cache is missing a key would stop (the
// participant refuses a request naming the target without its key).
func TestThresholdOwnKeysOncePerConnection(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 6, Seed: 1, Quorum: 0.5}
	_, thr := keyFeds(t, cfg, 2, 2)
	conn := map[int]int{}        // member -> its connection number
	sent := map[[3]int]int{}     // (member, connection, target) -> own keys sent
	answered := map[[2]int]int{} // (member, connection) -> switch replies
	requests, targets := 0, 0
	thr.mem.Observe = func(toServer bool, k int, m *Message) {
		switch {
		case !toServer && m.Kind == KindSwitch:
			requests++
			targets += len(m.Targets)
			for _, ti := range m.OwnKeys {
				sent[[3]int{k, conn[k], m.Targets[ti]}]++
			}
		case toServer && m.Kind == KindSwitchShares:
			answered[[2]int{k, conn[k]}]++
		}
	}
	var state []byte
	dropped, back := false, false
	thr.mem.Hook = func() {
		switch {
		case !dropped && thr.coord.Round() == 2:
			dropped = true
			var err error
			if state, err = thr.mem.Participant(0).KeyState(); err != nil {
				t.Fatal(err)
			}
			thr.mem.Drop(0)
		case dropped && !back && thr.coord.Round() == 4:
			back = true
			conn[0]++
			if err := thr.mem.Join(0); err != nil {
				t.Fatal(err)
			}
			thr.mem.Participant(0).RestoreKeyState(state)
		}
	}
	hist := thr.run(t)
	if !back || len(hist) != cfg.Rounds+1 || hist[len(hist)-1].Partial {
		t.Fatalf("back %v, %d rounds recorded", back, len(hist))
	}
	total := 0
	for key, n := range sent {
		if n != 1 {
			t.Errorf("member %d, connection %d: participant %d's own key sent %d times", key[0], key[1], key[2], n)
		}
		total += n
	}
	if answered[[2]int{0, 1}] == 0 {
		t.Errorf("member 0 switched nothing after it came back (replies by member and connection: %v)", answered)
	}
	if total == 0 || total >= targets {
		t.Errorf("%d own keys sent in %d requests naming %d targets", total, requests, targets)
	}
}
