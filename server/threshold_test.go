package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/seal/threshold"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// seenChunk is a sealed chunk that crossed the server: sent by participant
// client (toServer) or sent to it, as a switch request's sum (request) or in
// a message's sealed vectors.
type seenChunk struct {
	client            int
	toServer, request bool
	c                 seal.Chunk
}

// chunksOfMessage appends every sealed chunk of m (its sealed vectors, and a
// switch request's sums under the collective key) to seen.
func chunksOfMessage(t *testing.T, s seal.Scheme, seen []seenChunk, k int, toServer bool, m *protocol.Message) []seenChunk {
	for _, v := range []seal.Vec{m.Sealed, m.Alpha} {
		for _, ci := range v.Indexes() {
			seen = append(seen, seenChunk{client: k, toServer: toServer, c: v[ci]})
		}
	}
	if m.Kind == protocol.KindSwitch {
		for _, b := range m.Keys[len(m.OwnKeys):] {
			c, err := s.Unmarshal(b)
			if err != nil {
				t.Errorf("participant %d: a switch request's chunk: %v", k, err)
				continue
			}
			seen = append(seen, seenChunk{client: k, request: true, c: c})
		}
	}
	return seen
}

// smallShare returns the share of a chunk's values that open under key to
// at most seal.MaxAbs/16 in magnitude (an error counts as none). What the
// test federation seals is small (most slots are padding, exact zeros; a
// Gram part fills its slots with values in the tens), while a key that does
// not open a chunk finds values spread over the whole plaintext range, at
// least ±seal.MaxAbs: about 1 in 16 or fewer small.
func smallShare(key seal.Key, c seal.Chunk) float64 {
	vals, err := key.Open(c)
	if err != nil {
		return 0
	}
	n := 0
	for _, v := range vals {
		if math.Abs(v) <= seal.MaxAbs/16 {
			n++
		}
	}
	return float64(n) / float64(len(vals))
}

const (
	// opens is the least smallShare of a key that opens a chunk,
	// notOpens the most of one that does not.
	opens, notOpens = 0.9, 0.15
)

// TestThresholdOverWebsockets runs the same federation (six native
// participants over loopback websockets, 2-of-3 threshold keys) with keys
// shared and keys threshold: every round's primal, dual and held-out
// accuracy equal, bit for bit, those of the in-process experiment with the
// shared key. With threshold keys, every sealed chunk that crossed the
// server (each participant's uploads as the server received them, the sums
// it asked committee members to switch, the sums it sent) opens with no
// single participant's key, except a switched sum with the key of the
// participant it was sent to; with the shared key, participant 0's key
// opens every chunk the server received. A second server on the same data
// folder loads the finished threshold federation.
func TestThresholdOverWebsockets(t *testing.T) {
	p := smallData(t)
	o := experiment.Options{Partition: "grid:3,2", Seed: 3, PStar: 1,
		Config: protocol.Config{Lambda: 1e-2, Fraction: 0.7, Rounds: 4, IIC: 0.2, SealPrimal: true}}
	var want []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(context.Background(), p, o, &want); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ts := startServer(t, dir)
	sec := secret.FromSeed(o.Seed)
	n := len(p.Blocks)
	took := map[string]time.Duration{}
	for _, keys := range []string{protocol.KeysShared, protocol.KeysThreshold} {
		req := CreateRequest{Name: "keys " + keys, Config: protocol.Config{Lambda: o.Lambda, Fraction: o.Fraction, Rounds: o.Rounds, IIC: o.IIC,
			SealPrimal: true, Seed: uint64(o.Seed), Clients: n, NumFeatures: p.Data.M(), Keys: keys}}
		l, fed := ts.create(t, req, sec, "bgv")
		if l.Threshold() != (keys == protocol.KeysThreshold) {
			t.Fatalf("keys %s: the link's scheme is %s", keys, l.Scheme)
		}
		scheme, err := seal.ByName(l.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		type outcome struct {
			k   int
			res *session.Result
			err error
		}
		outs := make(chan outcome, n)
		seen := make([][]seenChunk, n)
		setups := make([]*protocol.KeySetup, n)
		start := time.Now()
		for k := range p.Blocks {
			opt := session.Options{Dial: dialer(), RetryFor: 20 * time.Second,
				OnSend: func(m *protocol.Message, frame []byte) {
					// What the server received: the frame, decoded with
					// the federation's scheme.
					got, err := protocol.DecodeMessage(scheme, frame, protocol.DefaultLimits)
					if err != nil {
						t.Errorf("participant %d: its %s frame: %v", k, m.Kind, err)
						return
					}
					seen[k] = chunksOfMessage(t, scheme, seen[k], k, true, &got)
				},
				OnMessage: func(m *protocol.Message) {
					if m.Kind == protocol.KindKeySetup {
						setups[k] = m.KeySetup
					}
					seen[k] = chunksOfMessage(t, scheme, seen[k], k, false, m)
				}}
			go func() {
				res, err := session.Run(ctx, l, &p.Blocks[k], opt)
				outs <- outcome{k, res, err}
			}()
			// One after the other: client k holds block k, as in process.
			waitFor(t, "registration", 30*time.Second, func() bool { return len(ts.status(t, fed.ID).Participants) > k })
		}
		results := make([]*session.Result, n)
		for range n {
			out := <-outs
			if out.err != nil {
				t.Fatalf("keys %s: participant %d: %v", keys, out.k, out.err)
			}
			results[out.k] = out.res
		}
		took[keys] = time.Since(start)
		st := ts.status(t, fed.ID)
		if st.State != "finished" || len(st.History) != len(want) || st.Config.Keys != keys {
			t.Fatalf("keys %s: state %s, keys %q, %d rounds recorded, want finished and %d", keys, st.State, st.Config.Keys, len(st.History), len(want))
		}
		for i, r := range st.History {
			w := want[i]
			if !sameFloat(float64(r.Primal), w.Primal) || !sameFloat(float64(r.Dual), w.Dual) || !sameFloat(float64(r.HeldAcc), w.HeldAcc) {
				t.Fatalf("keys %s: %s; in process with the shared key: primal %v dual %v", keys, fmtRound(r), w.Primal, w.Dual)
			}
		}
		sv := ts.serverView(t, fed.ID)
		if sv.Keys != keys || (keys == protocol.KeysThreshold) != strings.Contains(sv.Note, "2-of-3") {
			t.Fatalf("keys %s: the server view says keys %q: %s", keys, sv.Keys, sv.Note)
		}
		checkKeyMode(t, keys, &sv)
		total := 0
		for k := range seen {
			total += len(seen[k])
		}
		if total == 0 {
			t.Fatalf("keys %s: no sealed chunk crossed the server", keys)
		}
		if keys == protocol.KeysShared {
			key0, err := seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose))
			if err != nil {
				t.Fatal(err)
			}
			for k := range seen {
				for _, o := range seen[k] {
					if z := smallShare(key0, o.c); o.toServer && z < opens {
						t.Fatalf("shared key: participant 0's key does not open a %T participant %d sent (%.0f%% small values)", o.c, k, 100*z)
					}
				}
			}
			continue
		}
		// Every participant's own key, from the key state it ended with.
		pkeys := make([]seal.Key, n)
		for k := range n {
			pkeys[k] = partyKey(t, setups[k], results[k].KeyState, sec)
		}
		opened, refused, requests := 0, 0, 0
		for k := range seen {
			for _, o := range seen[k] {
				if _, ok := o.c.(*seal.ThresholdCipher); !ok {
					t.Fatalf("participant %d: a %T crossed the server, not a threshold-scheme chunk", k, o.c)
				}
				if o.request {
					requests++
				}
				for j, key := range pkeys {
					z := smallShare(key, o.c)
					entitled := !o.toServer && !o.request && o.client == j // a sum switched to j
					switch {
					case entitled && z >= opens:
						opened++
					case entitled:
						t.Fatalf("participant %d opens a sum switched to it to only %.0f%% small values", j, 100*z)
					case z > notOpens:
						t.Fatalf("participant %d's key opens a chunk the server %s participant %d (%.1f%% small values; switch request: %v)",
							j, map[bool]string{true: "received from", false: "sent to"}[o.toServer], o.client, 100*z, o.request)
					default:
						refused++
					}
				}
			}
		}
		if opened == 0 || refused == 0 || requests == 0 {
			t.Fatalf("%d chunks opened by their receivers, %d refused, %d in switch requests", opened, refused, requests)
		}
		t.Logf("threshold: %d chunks crossed the server (%d in switch requests); %d openings by the receiver, %d attempts by other keys found nothing",
			total, requests, opened, refused)

		// A restarted server loads the finished federation with its scheme.
		ts.stop()
		ts2 := startServer(t, dir)
		ts2.admin = ts.admin
		if st := ts2.status(t, fed.ID); st.State != "finished" || st.Config.Keys != protocol.KeysThreshold || st.Config.Scheme != session.SchemeThreshold {
			t.Fatalf("after a restart: state %s, keys %q, scheme %s", st.State, st.Config.Keys, st.Config.Scheme)
		}
	}
	t.Logf("%d participants, %d rounds over websockets: shared key %.2fs, threshold keys %.2fs",
		n, o.Rounds, took[protocol.KeysShared].Seconds(), took[protocol.KeysThreshold].Seconds())
}

// partyKey is the own key of the party a participant keeps (its key state,
// sealed under the link secret) of the threshold key ks describes.
func partyKey(t *testing.T, ks *protocol.KeySetup, state []byte, sec secret.Secret) seal.Key {
	t.Helper()
	if ks == nil || state == nil {
		t.Fatalf("no key setup (%v) or no key state (%d bytes)", ks != nil, len(state))
	}
	s, err := seal.ThresholdScheme()
	if err != nil {
		t.Fatal(err)
	}
	cfg := threshold.Config{Federation: ks.Federation, Threshold: ks.Threshold}
	for _, id := range ks.Committee {
		cfg.Parties = append(cfg.Parties, threshold.PartyID(id))
	}
	fed, err := threshold.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	party, err := threshold.Restore(fed, state, sec[:])
	if err != nil {
		t.Fatal(fmt.Errorf("party %d: %w", ks.Party, err))
	}
	key, err := party.Key()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// serverView is GET /api/federations/{id}/server-view with the admin token.
func (ts *testServer) serverView(t *testing.T, id string) ServerView {
	t.Helper()
	var v ServerView
	if code := ts.call(t, "GET", "/api/federations/"+id+"/server-view", "", nil, &v); code != 200 {
		t.Fatalf("server view: HTTP %d", code)
	}
	return v
}

// checkKeyMode checks the privacy view's key mode of a finished federation
// of six participants: with the shared key a colluding participant opens
// everything; with 2-of-3 threshold keys the committee is the first three
// participants, by name, each holding its share, and a colluding
// participant opens only its own groups' sums.
func checkKeyMode(t *testing.T, keys string, sv *ServerView) {
	t.Helper()
	km := sv.KeyMode
	if km == nil || km.Mode != keys || len(km.Opens) < 3 || km.Opens[0].Opens != "nothing sealed" {
		t.Fatalf("keys %s: the view's key mode is %+v", keys, km)
	}
	if keys == protocol.KeysShared {
		if len(km.Committee) != 0 || !strings.Contains(km.Colluder, "opens every participant's sealed values") {
			t.Fatalf("shared key: the view's key mode is %+v", km)
		}
		return
	}
	var names []string
	for _, m := range km.Committee {
		if !m.HoldsShare {
			t.Errorf("threshold: committee member %s does not hold its share", m.Name)
		}
		names = append(names, m.Name)
	}
	want := []string{sv.Participants[0].Name, sv.Participants[1].Name, sv.Participants[2].Name}
	if km.Threshold != 2 || !slices.Equal(names, want) || !strings.Contains(km.Summary, "2-of-3") ||
		!strings.Contains(km.Opens[1].Who, "any one participant") || !strings.Contains(km.Colluder, "opens nothing beyond the sums of its own sample groups") {
		t.Fatalf("threshold: the view's key mode is %+v, want t = 2 and the committee %v", km, want)
	}
}
