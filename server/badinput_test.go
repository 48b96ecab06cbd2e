package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// meddler wraps one participant's connection and, at chosen moments,
// sends bad frames of its own beside the participant's good ones. It
// records the error codes the server sends back.
type meddler struct {
	session.Conn
	scheme seal.Scheme
	mu     sync.Mutex
	codes  []string
	done   map[string]bool
	last   []byte
}

func (m *meddler) Read(ctx context.Context) ([]byte, error) {
	f, err := m.Conn.Read(ctx)
	if err != nil {
		return f, err
	}
	msg, derr := protocol.DecodeMessage(m.scheme, f, protocol.DefaultLimits)
	if derr == nil && msg.Kind == protocol.KindError {
		m.mu.Lock()
		m.codes = append(m.codes, msg.Code)
		m.mu.Unlock()
	}
	if derr == nil && msg.Kind == protocol.KindWeights && msg.Round == 3 && m.once("garbage") {
		m.raw(ctx, []byte("this is not a frame"))                                                                  // bad-message
		m.raw(ctx, m.last)                                                                                         // a replay: out-of-phase
		m.raw(ctx, header(`{"Kind":"dir-part","Round":3,"DConj":1e999}`))                                          // a non-finite number: bad-message
		m.raw(ctx, header(`{"Kind":"dir-part","Round":3,"Sneaky":1}`))                                             // an unknown field: bad-message
		m.send(ctx, protocol.Message{Kind: protocol.KindPrimal, Round: 103, HatW: []float64{12345.678}})           // a future round: out-of-phase
		m.send(ctx, protocol.Message{Kind: protocol.KindHello, Pseudonyms: []string{"x"}, Heldout: []bool{false}}) // hello mid-session: out-of-phase
	}
	return f, nil
}

func (m *meddler) once(what string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done[what] {
		return false
	}
	m.done[what] = true
	return true
}

func (m *meddler) Write(ctx context.Context, f []byte) error {
	msg, err := protocol.DecodeMessage(m.scheme, f, protocol.DefaultLimits)
	if err != nil {
		return err
	}
	if err := m.Conn.Write(ctx, f); err != nil {
		return err
	}
	if msg.Round == 4 && msg.Kind == protocol.KindDirPart && m.once("duplicate") {
		m.raw(ctx, f) // the same reply twice: out-of-phase
	}
	m.last = f
	return nil
}

func (m *meddler) send(ctx context.Context, msg protocol.Message) {
	f, err := protocol.EncodeMessage(m.scheme, msg)
	if err != nil {
		panic(err)
	}
	m.raw(ctx, f)
}

func (m *meddler) raw(ctx context.Context, f []byte) { m.Conn.Write(ctx, f) }

// header builds a frame around a hand-written JSON header.
func header(js string) []byte {
	f := []byte{'h', 'm', protocol.WireVersion}
	f = append(f, byte(len(js)), byte(len(js)>>8), 0, 0)
	f = append(f, js...)
	return append(f, make([]byte, 24)...) // empty sealed and per-feature vectors: six lengths
}

// TestBadMessagesChangeNothing: one participant's connection also carries
// malformed, replayed, duplicated and out-of-phase messages. Each gets its
// typed error, and the federation computes exactly what the in-process
// experiment computes, round for round; what the server received holds
// no plaintext data or sealed value. (A malformed reply to the phase is
// the participant's reply: TestBadRepliesDropTheParticipant.)
func TestBadMessagesChangeNothing(t *testing.T) {
	p := smallData(t)
	o := experiment.Options{Partition: "grid:3,2", Seed: 3, PStar: 1, Config: protocol.Config{Lambda: 1e-2, Fraction: 1, Rounds: 12, IIC: 0.2}}
	var want []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(context.Background(), p, o, &want); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var frames []recorded
	dir := t.TempDir()
	ts := startServerWith(t, dir, func(opt *Options) {
		opt.Received = func(_ string, client int, f []byte) {
			mu.Lock()
			frames = append(frames, recorded{client, append([]byte(nil), f...)})
			mu.Unlock()
		}
	})
	sec := secret.FromSeed(o.Seed)
	l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: o.Lambda, Rounds: o.Rounds, IIC: o.IIC, Seed: uint64(o.Seed), Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, "bgv")
	scheme, _ := seal.ByName("bgv")
	med := &meddler{scheme: scheme, done: map[string]bool{}}
	errs, dials := runWrapped(t, l, blockPtrs(p.Blocks), func(c session.Conn) session.Conn { med.Conn = c; return med })
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if dials != 1 {
		t.Fatalf("the meddling participant connected %d times: the server dropped it", dials)
	}
	wantCodes := map[string]int{protocol.CodeBadMessage: 3, protocol.CodeOutOfPhase: 4, protocol.CodeBadField: 0}
	got := map[string]int{}
	for _, c := range med.codes {
		got[c]++
	}
	for code, n := range wantCodes {
		if got[code] != n {
			t.Errorf("%d %q errors, want %d (all: %v)", got[code], code, n, med.codes)
		}
	}
	st := ts.status(t, fed.ID)
	if len(st.History) != len(want) {
		t.Fatalf("%d rounds, want %d", len(st.History), len(want))
	}
	for i, r := range st.History {
		if !sameFloat(float64(r.Primal), want[i].Primal) || !sameFloat(float64(r.Dual), want[i].Dual) {
			t.Fatalf("%s; without the bad messages: primal %v dual %v", fmtRound(r), want[i].Primal, want[i].Dual)
		}
	}
	checkNoPlaintext(t, frames, p.Blocks, sec)
}

type recorded struct {
	client int
	frame  []byte
}

// checkNoPlaintext decodes what the server received: every sealed chunk
// must be a BGV ciphertext, and no plaintext field may carry a data entry
// or any value that travelled sealed (dual values, updates, inner
// products, norms), opened here with the participants' key.
func checkNoPlaintext(t *testing.T, frames []recorded, blocks []partition.Block, sec secret.Secret) {
	t.Helper()
	scheme, _ := seal.ByName("bgv")
	key, err := seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[float64]string{}
	for _, b := range blocks {
		for i := 0; i < b.N(); i++ {
			for j := range b.Features {
				secrets[b.X.At(i, j)] = "a data entry"
			}
		}
	}
	type field struct {
		where string
		v     float64
	}
	var plain []field
	decoded, chunks := 0, 0
	for _, r := range frames {
		m, err := protocol.DecodeMessage(scheme, r.frame, protocol.DefaultLimits)
		if err != nil {
			continue // refused by the server too
		}
		decoded++
		for _, v := range []seal.Vec{m.Sealed, m.Alpha} {
			for _, c := range v {
				if _, ok := c.(*seal.Cipher); !ok {
					t.Fatalf("a %s frame carries a %T chunk, not a ciphertext", m.Kind, c)
				}
				vals, err := key.Open(c)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range vals {
					if _, ok := secrets[x]; !ok {
						secrets[x] = "a sealed value"
					}
				}
				chunks++
			}
		}
		for name, vs := range map[string][]float64{"HatW": m.HatW, "DW": m.DW, "DConj": {m.DConj}, "GridLoss": m.GridLoss,
			"GridConj": m.GridConj, "GridWDot": m.GridWDot, "W": m.W} {
			for _, v := range vs {
				plain = append(plain, field{string(m.Kind) + "." + name, v})
			}
		}
	}
	if decoded == 0 || chunks == 0 {
		t.Fatal("no frames or no ciphertexts recorded")
	}
	delete(secrets, 0)
	for _, p := range plain {
		if what, ok := secrets[p.v]; ok {
			t.Errorf("plaintext field %s carries %v, %s", p.where, p.v, what)
		}
	}
	t.Logf("checked %d frames, %d ciphertexts, %d plaintext numbers", decoded, chunks, len(plain))
}

// rawDial opens a participant socket by hand, offering protos.
func rawDial(t *testing.T, url string, protos []string, h http.Header) *websocket.Conn {
	t.Helper()
	d := *websocket.DefaultDialer
	d.Subprotocols = protos
	ws, resp, err := d.Dial(url, h)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("dial: %v %s", err, status)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// expectError reads until a typed error arrives and checks its code, and
// that the connection closes after it.
func expectError(t *testing.T, ws *websocket.Conn, code string) {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		typ, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for a %q error: %v", code, err)
		}
		if typ != websocket.BinaryMessage {
			continue
		}
		m, err := protocol.DecodeMessage(nil, b, protocol.DefaultLimits)
		if err != nil {
			t.Fatalf("undecodable answer: %v", err)
		}
		if m.Kind != protocol.KindError {
			continue
		}
		if m.Code != code {
			t.Fatalf("error %q (%s), want %q", m.Code, m.Err, code)
		}
		if !m.Close {
			t.Fatalf("error %q does not close the connection", code)
		}
		if _, _, err := ws.ReadMessage(); err == nil {
			t.Fatalf("the connection stays open after %q", code)
		}
		return
	}
}

// TestRefusedConnections: each wrong way in gets its typed error and a
// closed connection, registers nobody, and the federation then runs as if
// nothing had happened.
func TestRefusedConnections(t *testing.T) {
	p := smallData(t)
	o := experiment.Options{Partition: "grid:3,2", Seed: 3, PStar: 1, Config: protocol.Config{Lambda: 1e-2, Fraction: 1, Rounds: 5, IIC: 0.2}}
	var want []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(context.Background(), p, o, &want); err != nil {
		t.Fatal(err)
	}
	ts := startServerWith(t, t.TempDir(), func(opt *Options) { opt.Limits.MaxBytes, opt.HelloLimit = 1<<20, 256<<10 })
	sec := secret.FromSeed(o.Seed)
	l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: o.Lambda, Rounds: o.Rounds, IIC: o.IIC, Seed: uint64(o.Seed), Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, "bgv")
	scheme, _ := seal.ByName("bgv")
	hello := func(s secret.Secret, b *partition.Block) []byte {
		part, err := protocol.NewParticipant(b, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := protocol.EncodeMessage(scheme, part.Hello())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := hello(sec, &p.Blocks[0])
	other, _ := secret.New()
	wide := p.Blocks[0]
	wide.NumFeatures++
	wsURL, invite := l.SocketURL(), l.SocketProtocols("")
	for _, tc := range []struct {
		name, url string
		protos    []string
		code      string
		frame     []byte
		text      bool
	}{
		{"unknown federation", strings.Replace(wsURL, l.ID, "nosuchfed", 1), invite, protocol.CodeUnknownFederation, good, false},
		{"wrong invite", wsURL, []string{protocol.SocketProtocol, protocol.SocketInvitePrefix + "wrong"}, protocol.CodeBadInvite, good, false},
		{"no token", wsURL, []string{protocol.SocketProtocol}, protocol.CodeBadInvite, good, false},
		{"unknown session", wsURL, l.SocketProtocols("made-up-session"), protocol.CodeUnknownSession, good, false},
		{"wrong secret", wsURL, invite, protocol.CodeWrongSecret, hello(other, &p.Blocks[0]), false},
		{"other feature count", wsURL, invite, protocol.CodeSchema, hello(sec, &wide), false},
		{"garbage first frame", wsURL, invite, protocol.CodeBadMessage, []byte("GET / HTTP/1.1"), false},
		{"first frame not a hello", wsURL, invite, protocol.CodeOutOfPhase, header(`{"Kind":"primal","Round":0}`), false},
		{"text frame", wsURL, invite, protocol.CodeBadMessage, []byte("hello"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := rawDial(t, tc.url, tc.protos, nil)
			typ := websocket.BinaryMessage
			if tc.text {
				typ = websocket.TextMessage
			}
			ws.WriteMessage(typ, tc.frame)
			expectError(t, ws, tc.code)
		})
	}
	// An oversized frame ends the connection with the standard close
	// code 1009 (message too big), before the server reads it whole: before
	// registering, a socket may send only a hello's size (HelloLimit).
	ws := rawDial(t, wsURL, invite, nil)
	ws.WriteMessage(websocket.BinaryMessage, make([]byte, 2<<20))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("oversized frame: %v, want close 1009", err)
	}
	// A page of another origin may not open a participant socket.
	// A page of another origin may not open a participant socket, not
	// even when DNS rebinding makes its Host agree with its Origin.
	for _, h := range []http.Header{
		{"Origin": {"http://evil.example"}},
		{"Origin": {"http://evil.example"}, "Host": {"evil.example"}},
		{"Origin": {"http://evil.example:80"}, "Host": {"evil.example:80"}},
	} {
		d := *websocket.DefaultDialer
		d.Subprotocols = invite
		if _, resp, err := d.Dial(wsURL, h); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("foreign origin %v: %v %v", h, err, resp)
		}
	}
	if st := ts.status(t, fed.ID); len(st.Participants) != 0 || st.State != "waiting" {
		t.Fatalf("after the refusals: %d participants, state %s", len(st.Participants), st.State)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := runAll(ctx, l, blockPtrs(p.Blocks)); err != nil {
		t.Fatal(err)
	}
	st := ts.status(t, fed.ID)
	for i, r := range st.History {
		if !sameFloat(float64(r.Primal), want[i].Primal) {
			t.Fatalf("%s; in-process %v", fmtRound(r), want[i].Primal)
		}
	}
}

// shortReplies wraps a participant's connection and cuts one value off
// every direction share it sends from round 3 on: a reply of the wrong
// length, refused as its reply.
type shortReplies struct {
	session.Conn
	scheme seal.Scheme
}

func (c *shortReplies) Write(ctx context.Context, f []byte) error {
	m, err := protocol.DecodeMessage(c.scheme, f, protocol.DefaultLimits)
	if err == nil && m.Kind == protocol.KindDirPart && m.Round >= 3 && len(m.DW) > 1 {
		m.DW = m.DW[:len(m.DW)-1]
		if f, err = protocol.EncodeMessage(c.scheme, m); err != nil {
			return err
		}
	}
	return c.Conn.Write(ctx, f)
}

// TestBadRepliesDropTheParticipant: a participant whose replies to its
// phase are malformed (a wrong length) is told so and sent away at once, not waited for until
// the deadline; it comes back and is refreshed, and its third refused
// reply drops it for good: named with the reason on the status, refused
// when it returns, while the others train to the end.
func TestBadRepliesDropTheParticipant(t *testing.T) {
	p := smallData(t)
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(3)
	const rounds = 12
	// Quorum 1: the rounds wait for the meddler to come back.
	l, fed := ts.create(t, CreateRequest{RoundTimeout: Duration(time.Minute),
		Config: protocol.Config{Lambda: 1e-2, Rounds: rounds, IIC: 0.2, Quorum: 1, Seed: 3, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, "bgv")
	scheme, _ := seal.ByName("bgv")
	start := time.Now()
	errs, dials := runWrapped(t, l, blockPtrs(p.Blocks), func(c session.Conn) session.Conn { return &shortReplies{Conn: c, scheme: scheme} })
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Fatalf("participant %d: %v", i, err)
		}
	}
	if !strings.Contains(errs[2].Error(), "dropped") {
		t.Fatalf("the meddler ended with %v, want it dropped", errs[2])
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("took %v: a refused reply waited for the deadline", took)
	}
	st := ts.status(t, fed.ID)
	if st.State != "finished" || len(st.History) != rounds+1 {
		t.Fatalf("state %s, %d rounds", st.State, len(st.History))
	}
	var dropped []ParticipantView
	for _, pv := range st.Participants {
		if pv.State == "dropped" {
			dropped = append(dropped, pv)
		}
	}
	if len(dropped) != 1 || !strings.Contains(dropped[0].Reason, "3 replies refused") {
		t.Fatalf("dropped %+v, want the meddler alone, with the reason", dropped)
	}
	named := false
	for _, n := range st.Notices {
		named = named || strings.Contains(n, dropped[0].Name+" was dropped")
	}
	if !named {
		t.Fatalf("notices %q do not name %s", st.Notices, dropped[0].Name)
	}
	reformed := false
	for _, r := range st.History {
		reformed = reformed || r.Reformed
	}
	if last := st.History[len(st.History)-1]; !reformed || last.Partial {
		t.Fatalf("after the drop: re-formed %v, last round partial %v", reformed, last.Partial)
	}
	if dials != 3 {
		t.Fatalf("the meddler connected %d times, want 3: sent away twice, then dropped", dials)
	}
}

// runWrapped runs one participant per block, registered in block order,
// the third (index 2) over the connections wrap makes of its own; it
// returns each one's error and how often the third connected.
func runWrapped(t *testing.T, l session.Link, blocks []*partition.Block, wrap func(session.Conn) session.Conn) ([]error, int) {
	t.Helper()
	base, dials := dialer(), 0
	wrapped := func(ctx context.Context, url string, protos []string) (session.Conn, error) {
		c, err := base(ctx, url, protos)
		if err != nil {
			return nil, err
		}
		dials++
		return wrap(c), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make([]error, len(blocks))
	var wg sync.WaitGroup
	for i, b := range blocks {
		dial := base
		if i == 2 {
			dial = wrapped
		}
		welcomed := make(chan struct{})
		var once sync.Once
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer once.Do(func() { close(welcomed) }) // refused before any welcome
			_, errs[i] = session.Run(ctx, l, b, session.Options{Dial: dial, RetryFor: 10 * time.Second,
				OnWelcome: func(string, string) { once.Do(func() { close(welcomed) }) }})
		}()
		<-welcomed
	}
	wg.Wait()
	return errs, dials
}
