package tab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// thresholdFed is a federation with threshold keys on a real server over
// loopback websockets.
type thresholdFed struct {
	hs   *httptest.Server
	srv  *server.Server
	id   string
	link string // with "threshold:"
	p    *experiment.Prepared
	o    experiment.Options
}

// startThreshold creates a threshold-key federation of the four blocks of
// the tests' data, seeded so that it can be compared with an in-process
// experiment.
func startThreshold(t *testing.T, rounds, committee, threshold int, roundTimeout time.Duration) *thresholdFed {
	t.Helper()
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:300,12,1,0.05,3", Holdout: 0.2, Partition: "grid:2,2"})
	if err != nil {
		t.Fatal(err)
	}
	o := experiment.Options{Partition: "grid:2,2", Seed: 3, PStar: 1,
		Config: protocol.Config{Lambda: 1e-2, Fraction: 0.7, Rounds: rounds, IIC: 0.2, SealPrimal: true,
			Keys: protocol.KeysThreshold, KeyCommittee: committee, KeyThreshold: threshold}}
	// Seeded: the in-process experiment derives the same secret.
	srv, err := server.New(server.Options{DataDir: t.TempDir(), InsecureDemo: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); srv.Close() })
	sec := secret.FromSeed(o.Seed)
	cfg := o.Config
	cfg.Seed, cfg.Clients, cfg.NumFeatures = uint64(o.Seed), len(p.Blocks), p.Data.M()
	resp, err := srv.Create(server.CreateRequest{Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(roundTimeout), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return &thresholdFed{hs: hs, srv: srv, id: resp.ID, link: hs.URL + resp.JoinPath + "&secret=threshold:" + sec.String(), p: p, o: o}
}

// status is the federation's status, read as a page reads it.
func (f *thresholdFed) status(t *testing.T) server.Status {
	t.Helper()
	l, err := session.ParseLink(f.link)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("GET", l.StatusURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+l.Invite)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(fmt.Errorf("status of %s: %w", l.ID, err))
	}
	defer resp.Body.Close()
	var st server.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
		t.Fatal(fmt.Errorf("status of %s: HTTP %d: %v", l.ID, resp.StatusCode, err))
	}
	return st
}

// tabRun is one tab's Run, started in a goroutine.
type tabRun struct {
	ev   *events
	done chan error
}

func startTab(ctx context.Context, f *thresholdFed, r Resume, b *partition.Block, dial session.Dialer) *tabRun {
	tr := &tabRun{ev: &events{}, done: make(chan error, 1)}
	go func() { tr.done <- Run(ctx, f.link, r, b, dial, tr.ev.add) }()
	return tr
}

// waitEvent waits until the tab emitted an event cond accepts.
func (tr *tabRun) waitEvent(t *testing.T, what string, cond func(Event) bool) Event {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		tr.ev.mu.Lock()
		for _, e := range tr.ev.all {
			if cond(e) {
				tr.ev.mu.Unlock()
				return e
			}
		}
		tr.ev.mu.Unlock()
		select {
		case err := <-tr.done:
			tr.done <- err
			t.Fatalf("waiting for %s: the tab's Run returned %v", what, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no %s in 45s", what)
	return Event{}
}

func registered(e Event) bool { return e.Type == "state" && e.State == "registered" }

// Four tabs join a federation with 2-of-3 threshold keys (the browser
// participant used to refuse them): they set up the key, the committee
// members (the first three) switch sums, and every round's primal, dual
// and held-out accuracy equal those of the in-process experiment with
// threshold keys, bit for bit. Each tab reports its key state for the page
// to keep, without the link secret in it (TestRunThresholdReloadKeepsShare
// restores a party from it). A link without "threshold:" ends with the
// key-mode error.
func TestRunThresholdKeys(t *testing.T) {
	f := startThreshold(t, 4, 3, 2, time.Minute)
	var want []protocol.RoundMetrics
	start := time.Now()
	if _, err := experiment.RunPreparedWithHistory(context.Background(), f.p, f.o, &want); err != nil {
		t.Fatal(err)
	}
	inProcess := time.Since(start)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A link without "threshold:" is refused at the key setup, in a
	// federation of its own (its seat would take one of the four).
	sec := secret.FromSeed(f.o.Seed)
	cfg := f.o.Config
	cfg.Seed, cfg.Clients = uint64(f.o.Seed), 1
	resp, err := f.srv.Create(server.CreateRequest{Fingerprint: sec.Fingerprint(), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var bev events
	err = Run(ctx, f.hs.URL+resp.JoinPath+"&secret="+sec.String(), Resume{}, &f.p.Blocks[0], session.WebSocket(64<<20), bev.add)
	if errs := bev.of("error"); err == nil || !errors.Is(err, session.ErrKeyMode) || len(errs) != 1 || errs[0].Code != CodeKeyMode {
		t.Fatalf("a link without threshold: to a threshold federation: %v, error events %+v", err, errs)
	}

	start = time.Now()
	tabs := make([]*tabRun, len(f.p.Blocks))
	for k := range f.p.Blocks {
		tabs[k] = startTab(ctx, f, Resume{}, &f.p.Blocks[k], session.WebSocket(64<<20))
		// In block order, as in process.
		tabs[k].waitEvent(t, fmt.Sprintf("tab %d's registration", k), registered)
	}
	for k, tr := range tabs {
		if err := <-tr.done; err != nil {
			t.Fatalf("tab %d: %v", k, err)
		}
	}
	overServer := time.Since(start)
	st := f.status(t)
	if st.State != "finished" || len(st.History) != len(want) || st.Config.Keys != protocol.KeysThreshold {
		t.Fatalf("state %s, keys %q, %d rounds recorded, want finished, threshold and %d", st.State, st.Config.Keys, len(st.History), len(want))
	}
	for i, r := range st.History {
		w := want[i]
		if !same(float64(r.Primal), w.Primal) || !same(float64(r.Dual), w.Dual) || !same(float64(r.HeldAcc), w.HeldAcc) {
			t.Fatalf("round %d: primal %v dual %v held-out %v over the server; in process %v %v %v", r.Round, r.Primal, r.Dual, r.HeldAcc, w.Primal, w.Dual, w.HeldAcc)
		}
	}
	key := secret.FromSeed(f.o.Seed)
	for k, tr := range tabs {
		phases := map[string]int{}
		for _, e := range tr.ev.of("progress") {
			phases[e.Phase]++
		}
		member := k < 3
		if phases["setting up the threshold key"] == 0 || (phases["switching a sum to its receiver's key (key committee)"] > 0) != member {
			t.Errorf("tab %d (committee member: %v): phases %v", k, member, phases)
		}
		ks := tr.ev.of("keys")
		if len(ks) == 0 {
			t.Fatalf("tab %d reported no key state", k)
		}
		state := ks[len(ks)-1].KeyState
		if bytes.Contains(state, key[:]) {
			t.Fatalf("tab %d's key state holds the link secret in clear", k)
		}
	}
	member, other := tabs[0].ev.of("keys"), tabs[3].ev.of("keys")
	t.Logf("4 tabs, 2-of-3 threshold keys, %d rounds: %.2fs over the server (in process %.2fs); final primal %v; key state %d bytes (member), %d (not a member), %d and %d keys events",
		len(want)-1, overServer.Seconds(), inProcess.Seconds(), st.History[len(st.History)-1].Primal,
		len(member[len(member)-1].KeyState), len(other[len(other)-1].KeyState), len(member), len(other))
}

func same(a, b float64) bool { return a == b || (a != a && b != b) }

// recorder is a Dialer whose connections keep a copy of every frame the
// participant writes.
type recorder struct {
	mu     sync.Mutex
	frames [][]byte
	dial   session.Dialer
}

type recConn struct {
	session.Conn
	r *recorder
}

func (c recConn) Write(ctx context.Context, f []byte) error {
	c.r.mu.Lock()
	c.r.frames = append(c.r.frames, append([]byte(nil), f...))
	c.r.mu.Unlock()
	return c.Conn.Write(ctx, f)
}

func (r *recorder) Dial(ctx context.Context, url string, protocols []string) (session.Conn, error) {
	c, err := r.dial(ctx, url, protocols)
	if err != nil {
		return nil, err
	}
	return recConn{c, r}, nil
}

// keyShares returns the Keys of every key-share the participant sent.
func (r *recorder) keyShares(t *testing.T) [][]byte {
	t.Helper()
	s, err := seal.ThresholdScheme()
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for _, f := range r.frames {
		m, err := protocol.DecodeMessage(s, f, protocol.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind == protocol.KindKeyShare {
			out = append(out, m.Keys[0])
		}
	}
	return out
}

// A tab closed in the middle of training and opened again with what the
// page kept (its session token and the last key state it reported) takes
// its seat back as the same committee member: with 2-of-2 threshold keys
// no sum is switched without it, and its key-share on return is its setup
// share of the first key setup, byte for byte (a member back without its
// share would send a new own public key, and the federation could never
// switch again).
func TestRunThresholdReloadKeepsShare(t *testing.T) {
	const rounds = 8
	f := startThreshold(t, rounds, 2, 2, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx0, close0 := context.WithCancel(ctx)
	rec := &recorder{dial: session.WebSocket(64 << 20)}
	tabs := make([]*tabRun, len(f.p.Blocks))
	for k := range f.p.Blocks {
		c, d := ctx, session.WebSocket(64<<20)
		if k == 0 {
			c, d = ctx0, rec.Dial
		}
		tabs[k] = startTab(c, f, Resume{}, &f.p.Blocks[k], d)
		tabs[k].waitEvent(t, fmt.Sprintf("tab %d's registration", k), registered)
	}
	tok := tabs[0].waitEvent(t, "tab 0's registration", registered).Session
	tabs[0].waitEvent(t, "round 3 in tab 0", func(e Event) bool { return e.Type == "progress" && e.Round >= 3 })
	close0() // the tab is closed
	if err := <-tabs[0].done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the closed tab's Run: %v", err)
	}
	ks := tabs[0].ev.of("keys")
	if tok == "" || len(ks) == 0 {
		t.Fatalf("the page kept session %q and %d key states", tok, len(ks))
	}
	first := rec.keyShares(t)
	closedAt := f.status(t).Round
	time.Sleep(300 * time.Millisecond) // the federation goes on without it meanwhile
	reopened := time.Now()
	again := startTab(ctx, f, Resume{Session: tok, KeyState: ks[len(ks)-1].KeyState}, &f.p.Blocks[0], rec.Dial)
	for k, tr := range append([]*tabRun{again}, tabs[1:]...) {
		if err := <-tr.done; err != nil {
			t.Fatalf("tab %d: %v", k, err)
		}
	}
	shares := rec.keyShares(t)
	if len(first) != 1 || len(shares) != 2 || !bytes.Equal(shares[1], first[0]) {
		t.Fatalf("tab 0 sent %d key-shares before it was closed and %d in all; the one on return equals its first setup share: %v",
			len(first), len(shares), len(shares) == 2 && bytes.Equal(shares[1], first[0]))
	}
	st := f.status(t)
	if st.State != "finished" || len(st.History) != rounds+1 {
		t.Fatalf("state %s with %d rounds recorded, want finished with %d", st.State, len(st.History), rounds+1)
	}
	if fin := again.ev.of("done"); len(fin) != 1 {
		t.Fatalf("the reopened tab: done events %+v", fin)
	}
	t.Logf("tab 0 closed at round %d, reopened with its key state: finished %d rounds %.2fs later", closedAt, rounds, time.Since(reopened).Seconds())
}
