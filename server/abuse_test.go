package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hyfed/hyfed/shared/curious"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// The probes of the hardening issue, each replayed against a real server
// on loopback: the refusal, and that nothing changed.

// raw sends a request with exactly the given token and content type.
func (ts *testServer) raw(t *testing.T, method, path, token, contentType, body string) (int, apiError) {
	t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e apiError
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &e)
	var cr CreateResponse
	if resp.StatusCode == http.StatusCreated && json.Unmarshal(b, &cr) == nil {
		ts.mu.Lock()
		ts.admin[cr.ID] = cr.AdminToken
		ts.mu.Unlock()
	}
	return resp.StatusCode, e
}

func (ts *testServer) count() int {
	ts.Server.mu.Lock()
	defer ts.Server.mu.Unlock()
	return len(ts.Server.feds)
}

const validCreate = `{"min_participants":2,"rounds":3}`

// Probe 1: anonymous creation, floods, quotas, expiry, deletion.
func TestProbeCreation(t *testing.T) {
	ts := startServerWith(t, t.TempDir(), func(o *Options) {
		o.CreateBurst, o.CreateRate = 8, 0.001 // eight, then (practically) none
		o.MaxPerCreator, o.MaxFederations = 3, 4
	})
	for _, tc := range []struct {
		name, token, ctype, body string
		status                   int
		code                     string
	}{
		{"no token", "", "application/json", validCreate, 401, "bad-token"},
		{"wrong token", "guess", "application/json", validCreate, 401, "bad-token"},
		{"cross-site form", testCreateToken, "text/plain", validCreate, 415, "bad-content-type"},
		{"form encoding", testCreateToken, "application/x-www-form-urlencoded", validCreate, 415, "bad-content-type"},
		{"seeded secret", testCreateToken, "application/json", `{"min_participants":2,"rounds":3,"seed":7}`, 201, ""},
	} {
		code, e := ts.raw(t, "POST", "/api/federations", tc.token, tc.ctype, tc.body)
		if code != tc.status || e.Code != tc.code {
			t.Errorf("%s: HTTP %d %q, want %d %q", tc.name, code, e.Code, tc.status, tc.code)
		}
	}
	if n := ts.count(); n != 1 {
		t.Fatalf("%d federations after the refused creations, want the one seeded (this server has --insecure-demo)", n)
	}
	// The per-creator quota (3), then the rate limit: every request counts
	// against the address's burst of 8, refused ones too (5 above).
	var codes []string
	for range 6 {
		code, e := ts.raw(t, "POST", "/api/federations", testCreateToken, "application/json", validCreate)
		codes = append(codes, fmt.Sprint(code, e.Code))
	}
	if want := "[201 201 429quota 429rate-limited 429rate-limited 429rate-limited]"; fmt.Sprint(codes) != want {
		t.Fatalf("creations %v, want %s", codes, want)
	}
	if n := ts.count(); n != 3 {
		t.Fatalf("%d federations, want 3", n)
	}

	// Deletion: only with the admin token; the folder goes with it.
	var id, admin string
	for fid, tok := range ts.admin {
		id, admin = fid, tok
		break
	}
	if code, _ := ts.raw(t, "DELETE", "/api/federations/"+id, "", "", ""); code != 401 {
		t.Fatalf("delete without a token: HTTP %d", code)
	}
	f := ts.Server.federation(id)
	if code, _ := ts.raw(t, "DELETE", "/api/federations/"+id, f.meta.InviteHash, "", ""); code != 401 {
		t.Fatalf("delete with a made-up token: HTTP %d", code)
	}
	if code, _ := ts.raw(t, "DELETE", "/api/federations/"+id, admin, "", ""); code != 204 {
		t.Fatalf("delete: HTTP %d", code)
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "federations", id)); !os.IsNotExist(err) {
		t.Fatalf("the deleted federation's folder: %v", err)
	}
	if code, _ := ts.raw(t, "GET", "/api/federations/"+id, admin, "", ""); code != 404 {
		t.Fatalf("status after delete: HTTP %d", code)
	}

	// Expiry: the janitor removes federations that never started.
	if n := ts.count(); n != 2 {
		t.Fatalf("%d federations before the sweep", n)
	}
	ts.Server.sweep(time.Now().Add(Defaults.UnstartedTTL - time.Minute))
	if n := ts.count(); n != 2 {
		t.Fatalf("the sweep before the time to live removed federations: %d left", n)
	}
	ts.Server.sweep(time.Now().Add(Defaults.UnstartedTTL + time.Minute))
	if n := ts.count(); n != 0 {
		t.Fatalf("%d federations left after their time to live", n)
	}
	entries, _ := os.ReadDir(filepath.Join(ts.dir, "federations"))
	if len(entries) != 0 {
		t.Fatalf("%d folders left after the sweep", len(entries))
	}
}

// An ended federation is kept for the retention period, then removed,
// also when it was never loaded since a restart.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	p := smallData(t)
	ts := startServer(t, dir)
	sec := secret.FromSeed(3)
	l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, Rounds: 2, IIC: 0.2, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, "bgv")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := runAll(ctx, l, blockPtrs(p.Blocks)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "finished", 10*time.Second, func() bool { return ts.status(t, fed.ID).State == "finished" })
	ts.stop()
	again := startServer(t, dir)
	if f := again.Server.feds[fed.ID]; f == nil || f.loaded.Load() {
		t.Fatal("after a restart the federation is missing, or loaded before anyone asked for it")
	}
	again.Server.sweep(time.Now().Add(Defaults.Retention / 2))
	if again.count() != 1 {
		t.Fatal("removed before the retention period ended")
	}
	again.Server.sweep(time.Now().Add(Defaults.Retention + time.Hour))
	if again.count() != 0 {
		t.Fatal("kept after the retention period")
	}
	if _, err := os.Stat(filepath.Join(dir, "federations", fed.ID)); !os.IsNotExist(err) {
		t.Fatalf("folder after retention: %v", err)
	}
}

// Probe 1 (restart): a data directory with many federations answers at
// once and loads a federation only when it is used.
func TestRestartLoadsLazily(t *testing.T) {
	dir := t.TempDir()
	ts := startServerWith(t, dir, func(o *Options) { o.CreateBurst = 100 })
	sec := secret.FromSeed(1)
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = ts.mustCreateBGV(t, sec)
	}
	ts.stop()
	again := startServer(t, dir)
	for _, id := range ids {
		if again.Server.feds[id].loaded.Load() {
			t.Fatalf("federation %s loaded at start", id)
		}
	}
	// A request without a valid token loads nothing.
	for _, tok := range []string{"", "made-up"} {
		if code, _ := again.raw(t, "GET", "/api/federations/"+ids[3], tok, "", ""); code != 401 {
			t.Fatalf("status with token %q: HTTP %d", tok, code)
		}
		ws := rawDial(t, strings.Replace(again.http.URL, "http", "ws", 1)+"/api/federations/"+ids[3]+"/ws", []string{protocol.SocketProtocol, protocol.SocketInvitePrefix + tok}, nil)
		expectError(t, ws, protocol.CodeBadInvite)
	}
	if again.Server.feds[ids[3]].loaded.Load() {
		t.Fatal("requests without a valid token loaded the federation")
	}
	again.admin = ts.admin
	if st := again.status(t, ids[7]); st.State != "waiting" {
		t.Fatalf("state %s", st.State)
	}
	loaded := 0
	for _, id := range ids {
		if again.Server.feds[id].loaded.Load() {
			loaded++
		}
	}
	if loaded != 1 {
		t.Fatalf("%d federations loaded after one status request, want 1", loaded)
	}
}

// Probe 2: no work before authentication. A socket without a valid token
// gets its typed error without sending anything; a socket with the
// invite may send at most a hello's size before it registers.
func TestProbePreAuthHello(t *testing.T) {
	ts := startServerWith(t, t.TempDir(), func(o *Options) { o.HelloLimit = 64 << 10 })
	sec := secret.FromSeed(2)
	l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}}, sec, "bgv")
	for _, protos := range [][]string{nil, {protocol.SocketProtocol}, {protocol.SocketProtocol, protocol.SocketInvitePrefix + "wrong"}} {
		ws := rawDial(t, l.SocketURL(), protos, nil)
		// Nothing sent: the refusal comes first.
		expectError(t, ws, protocol.CodeBadInvite)
	}
	ws := rawDial(t, l.SocketURL(), l.SocketProtocols(""), nil)
	big := make([]byte, 1<<20)
	ws.WriteMessage(websocket.BinaryMessage, big)
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("a 1 MiB hello with a 64 KiB limit: %v, want close 1009", err)
	}
	// Sockets waiting to register are bounded per federation. (The refused
	// socket above stops counting once its writer is done: wait for it.)
	f := ts.Server.federation(fed.ID)
	waitFor(t, "no socket pending", 10*time.Second, func() bool {
		f.pending.mu.Lock()
		defer f.pending.mu.Unlock()
		return f.pending.n == 0
	})
	ts.Server.opt.MaxPending = 2
	held := []*websocket.Conn{rawDial(t, l.SocketURL(), l.SocketProtocols(""), nil), rawDial(t, l.SocketURL(), l.SocketProtocols(""), nil)}
	third := rawDial(t, l.SocketURL(), l.SocketProtocols(""), nil)
	expectError(t, third, protocol.CodeBusy)
	for _, h := range held {
		h.Close()
	}
	if st := ts.status(t, fed.ID); len(st.Participants) != 0 {
		t.Fatalf("%d participants registered by the probes", len(st.Participants))
	}
}

// Probe 3: nothing a participant sent is readable without its session
// token or the admin token; nothing at all without a token.
func TestProbeViewsNeedTokens(t *testing.T) {
	p := attackData(t)
	ts := curiousServer(t)
	const rounds = 6
	l, fed := ts.create(t, attackRequest(rounds), secret.FromSeed(5), "plaintext")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := runAll(ctx, l, blockPtrs(p.Blocks))
	if err != nil {
		t.Fatal(err)
	}
	waitAttack(t, ts, fed.ID, rounds)
	base := "/api/federations/" + fed.ID
	routes := []string{"", "/events", "/model", "/server-view", "/attack", "/attack/rows", "/demo-blocks", "/demo-blocks/0"}
	// Without a token, or with a made-up one: 401 everywhere.
	for _, tok := range []string{"", "made-up", fed.ID} {
		for _, r := range routes {
			if code, e := ts.raw(t, "GET", base+r, tok, "", ""); code != 401 || e.Code != "bad-token" {
				t.Errorf("GET %s with token %q: HTTP %d %q, want 401", r, tok, code, e.Code)
			}
		}
	}
	// The list is the operator's.
	var list []Summary
	ts.call(t, "GET", "/api/federations", "none", nil, &list)
	if len(list) != 0 {
		t.Fatalf("the list without the create token shows %d federations", len(list))
	}
	ts.call(t, "GET", "/api/federations", "", nil, &list)
	if len(list) != 1 {
		t.Fatalf("the operator's list shows %d federations", len(list))
	}
	// Participant 0's token reads its own values and not participant 1's.
	var v ServerView
	if code := ts.call(t, "GET", base+"/server-view", res[0].Session, nil, &v); code != 200 {
		t.Fatalf("server view with a session: HTTP %d", code)
	}
	for k, pv := range v.Participants {
		own := k == 0
		if (pv.HatW != nil) != own || (pv.Dual != nil && (len(pv.Dual.Readable) > 0) != own) {
			t.Errorf("participant 0's token: participant %d's primal contribution shown %v, dual values shown %v", k, pv.HatW != nil, pv.Dual != nil && len(pv.Dual.Readable) > 0)
		}
	}
	if v.Dual != nil && len(v.Dual.Readable) > 0 {
		t.Error("a participant's token reads every sample's dual values")
	}
	for _, tok := range []string{fed.ViewerToken, fed.InviteToken} {
		var vv ServerView
		ts.call(t, "GET", base+"/server-view", tok, nil, &vv)
		for k, pv := range vv.Participants {
			if pv.HatW != nil || pv.Change != nil || (pv.Dual != nil && len(pv.Dual.Readable) > 0) {
				t.Errorf("a viewer or invite token reads participant %d's values", k)
			}
		}
	}
	var va ServerView
	ts.call(t, "GET", base+"/server-view", fed.AdminToken, nil, &va)
	for k, pv := range va.Participants {
		if pv.HatW == nil {
			t.Errorf("the admin does not see participant %d's primal contribution", k)
		}
	}
	var rows AttackRows
	if code := ts.call(t, "GET", base+"/attack/rows", res[1].Session, nil, &rows); code != 200 || rows.Client != 1 {
		t.Fatalf("participant 1's own rows: HTTP %d client %d", code, rows.Client)
	}
	if code := ts.call(t, "GET", base+"/attack/rows?participant=0", res[1].Session, nil, &rows); code != 200 || rows.Client != 1 {
		t.Fatalf("participant 1 asking for participant 0's rows got client %d (HTTP %d), want its own", rows.Client, code)
	}
	// Actions: the admin's alone.
	for _, tok := range []string{"", fed.ViewerToken, fed.InviteToken, res[0].Session} {
		for _, a := range []string{"pause", "stop", "fill"} {
			if code, _ := ts.raw(t, "POST", base+"/"+a, tok, "", ""); code != 401 {
				t.Errorf("POST %s with a non-admin token: HTTP %d", a, code)
			}
		}
		if code, _ := ts.raw(t, "DELETE", base, tok, "", ""); code != 401 {
			t.Errorf("DELETE with a non-admin token: HTTP %d", code)
		}
	}
}

// Probe 4: idle connections are closed, and open connections are capped.
func TestProbeIdleAndConnectionCap(t *testing.T) {
	ts := startServerWith(t, t.TempDir(), func(o *Options) { o.IdleTimeout, o.MaxConns = 300*time.Millisecond, 3 })
	addr := ts.http.Listener.Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle keep-alive connection: %v, want closed by the server", err)
	}
	// Three silent connections take every place; a fourth is not served
	// until one goes.
	var held []net.Conn
	for range 3 {
		h, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
	}
	time.Sleep(100 * time.Millisecond)
	client := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := client.Get(ts.http.URL + "/healthz"); err == nil {
		t.Fatal("a fourth connection was served past the cap of 3")
	}
	for _, h := range held {
		h.Close()
	}
	client.Timeout = 5 * time.Second
	if r, err := client.Get(ts.http.URL + "/healthz"); err != nil || r.StatusCode != 200 {
		t.Fatalf("after the held connections closed: %v", err)
	}
}

// Probe 5: registrations append one line each; meta.json is not
// rewritten, and a restart knows every session.
func TestProbeRegistrationsAppend(t *testing.T) {
	dir := t.TempDir()
	p := smallData(t)
	ts := startServer(t, dir)
	sec := secret.FromSeed(3)
	l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, Rounds: 2, IIC: 0.2, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, "bgv")
	metaPath := filepath.Join(dir, "federations", fed.ID, "meta.json")
	before, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := runAll(ctx, l, blockPtrs(p.Blocks))
	if err != nil {
		t.Fatal(err)
	}
	ts.stop()
	after, _ := os.ReadFile(metaPath)
	var m0, m1 meta
	json.Unmarshal(before, &m0)
	json.Unmarshal(after, &m1)
	if len(m1.Sessions) != 0 || m0.Created != m1.Created {
		t.Fatalf("meta.json holds %d sessions", len(m1.Sessions))
	}
	lines, err := readSessions(filepath.Join(dir, "federations", fed.ID))
	if err != nil || len(lines) != len(p.Blocks) {
		t.Fatalf("sessions.jsonl: %d records (%v), want %d", len(lines), err, len(p.Blocks))
	}
	// A torn last line (a crash mid-append) is dropped, not fatal.
	fh, _ := os.OpenFile(filepath.Join(dir, "federations", fed.ID, sessionsFile), os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"hash":"abc","cli`)
	fh.Close()
	again := startServer(t, dir)
	f := again.Server.federation(fed.ID)
	if f == nil || f.broken != "" {
		t.Fatalf("restart over a torn registrations log: %v", f)
	}
	for k, r := range res {
		if a := f.authorize(r.Session); a.role != roleSession || a.client != k {
			t.Fatalf("participant %d's session after the restart: %+v", k, a)
		}
	}
}

// Probe 6: a seeded federation's secret is recomputable: refused unless
// the server runs an insecure demonstration; the seed is never shown.
func TestProbeSeeds(t *testing.T) {
	ts := startServerWith(t, t.TempDir(), func(o *Options) { o.InsecureDemo = false })
	code, e := ts.raw(t, "POST", "/api/federations", testCreateToken, "application/json", `{"min_participants":2,"rounds":3,"seed":42}`)
	if code != 400 || !strings.Contains(e.Error, "seed") {
		t.Fatalf("seeded create: HTTP %d %q", code, e.Error)
	}
	demo := startServer(t, t.TempDir()) // --insecure-demo
	var resp CreateResponse
	const seed = 987654321987 // a number no timestamp or id contains by chance
	if c := demo.call(t, "POST", "/api/federations", "", CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Clients: 2, Rounds: 3, Seed: seed}}, &resp); c != 201 {
		t.Fatalf("seeded create under --insecure-demo: HTTP %d", c)
	}
	req, _ := http.NewRequest("GET", demo.http.URL+"/api/federations/"+resp.ID, nil)
	req.Header.Set("Authorization", "Bearer "+resp.AdminToken)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if strings.Contains(string(b), `"seed"`) || strings.Contains(string(b), fmt.Sprint(seed)) {
		t.Fatalf("the status shows the seed: %s", b)
	}
}

// Probe 8: the headers browsers enforce, on pages and the API; HSTS
// under TLS.
func TestProbeSecurityHeaders(t *testing.T) {
	ts := startServer(t, t.TempDir())
	check := func(c *http.Client, url string, hsts bool) {
		t.Helper()
		r, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		h := r.Header
		if h.Get("Content-Security-Policy") != contentSecurityPolicy || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", url, h)
		}
		if csp := h.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-eval'") && !strings.Contains(csp, "wasm-unsafe-eval") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
			t.Errorf("the policy allows inline or eval'd scripts: %s", csp)
		}
		if (h.Get("Strict-Transport-Security") != "") != hsts {
			t.Errorf("%s: HSTS %q, want present %v", url, h.Get("Strict-Transport-Security"), hsts)
		}
	}
	for _, path := range []string{"/", "/new", "/join/x", "/api/federations", "/healthz", "/static/app.css"} {
		check(http.DefaultClient, ts.http.URL+path, false)
	}
	s, err := New(Options{DataDir: t.TempDir(), CreateToken: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tlsSrv := httptest.NewTLSServer(s.Handler())
	defer tlsSrv.Close()
	c := tlsSrv.Client()
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	check(c, tlsSrv.URL+"/", true)
}

// Probe 9: a panic in the curious-server worker (it runs on what
// participants sent) stops the demonstration for that federation; the
// server and the federation go on.
func TestProbeAttackPanic(t *testing.T) {
	orig := reconstructIP
	reconstructIP = func(*curious.Observer, int, int) (*curious.Reconstruction, error) { panic("crafted input") }
	t.Cleanup(func() { reconstructIP = orig })
	p := attackData(t)
	ts := curiousServer(t)
	const rounds = 8
	l, fed := ts.create(t, attackRequest(rounds), secret.FromSeed(5), "plaintext")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := runAll(ctx, l, blockPtrs(p.Blocks)); err != nil {
		t.Fatal(err)
	}
	if st := ts.status(t, fed.ID); st.State != "finished" || st.Round != rounds {
		t.Fatalf("after the attack worker panicked: state %s round %d", st.State, st.Round)
	}
	waitFor(t, "the attack to stop", 20*time.Second, func() bool { return ts.Server.federation(fed.ID).attack.failed.Load() })
	var v AttackView
	ts.call(t, "GET", "/api/federations/"+fed.ID+"/attack", "", nil, &v)
	if !strings.Contains(v.Note, "stopped on an internal error") {
		t.Fatalf("attack view note %q", v.Note)
	}
}

// A panic while the federation works (a deadline's callback, a
// connection) fails that federation alone: it turns broken and refuses
// participants, and the others go on.
func TestPanicFailsOnlyItsFederation(t *testing.T) {
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(1)
	a, b := ts.mustCreateBGV(t, sec), ts.mustCreateBGV(t, sec)
	fa := ts.Server.federation(a)
	func() {
		defer fa.recoverFail("a test")
		panic("boom")
	}()
	if st := ts.status(t, a); st.State != "broken" || !strings.Contains(st.Error, "boom") {
		t.Fatalf("after a panic: state %s %q", st.State, st.Error)
	}
	if st := ts.status(t, b); st.State != "waiting" {
		t.Fatalf("the other federation: %s", st.State)
	}
}

// helloFrame is the encoded hello of block b under secret s.
func helloFrame(t *testing.T, s secret.Secret, b *partition.Block) []byte {
	t.Helper()
	p, err := protocol.NewParticipant(b, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := protocol.EncodeMessage(nil, p.Hello())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// registerRaw registers block b through a raw socket with the invite and
// returns the socket after the welcome, or the error code the server
// answered with and its text.
func registerRaw(t *testing.T, l session.Link, s secret.Secret, b *partition.Block) (*websocket.Conn, string, string) {
	t.Helper()
	ws := rawDial(t, l.SocketURL(), l.SocketProtocols(""), nil)
	ws.WriteMessage(websocket.BinaryMessage, helloFrame(t, s, b))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, f, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("registering: %v", err)
		}
		m, err := protocol.DecodeMessage(nil, f, protocol.DefaultLimits)
		if err != nil {
			t.Fatalf("registering: %v", err)
		}
		switch m.Kind {
		case protocol.KindWelcome:
			ws.SetReadDeadline(time.Time{})
			return ws, "", ""
		case protocol.KindError:
			return nil, m.Code, m.Err
		}
	}
}

// Probe 7: one invite is shared by every party, so the seats it registers
// are bounded: by max_participants if the organizer declared it, else by
// min_participants under an automatic start (which those start; one who
// left before gives its place up), else by the server's limit.
func TestProbeSeatsPerInvite(t *testing.T) {
	p := smallData(t)
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(4)
	cfg := protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2, NumFeatures: p.Data.M()}
	for _, tc := range []struct {
		name string
		req  CreateRequest
		code int
	}{
		{"fewer than min_participants", CreateRequest{Config: cfg, ManualStart: true, MaxParticipants: 1}, 400},
		{"more than the server's limit", CreateRequest{Config: cfg, ManualStart: true, MaxParticipants: Defaults.MaxParticipants + 1}, 400},
	} {
		tc.req.Fingerprint = sec.Fingerprint()
		if code := ts.call(t, "POST", "/api/federations", "", tc.req, nil); code != tc.code {
			t.Errorf("%s: HTTP %d, want %d", tc.name, code, tc.code)
		}
	}
	full := func(code, msg string, n int) {
		t.Helper()
		if want := fmt.Sprintf("the federation is full (%d participants)", n); code != protocol.CodeStarted || msg != want {
			t.Fatalf("a registration past the seats: %q %q, want %q %q", code, msg, protocol.CodeStarted, want)
		}
	}

	// Manual start, 3 declared: a fourth is refused, also while one of
	// the three is away (its token may bring it back).
	l, fed := ts.create(t, CreateRequest{Config: cfg, ManualStart: true, MaxParticipants: 3}, sec, "bgv")
	var held []*websocket.Conn
	for i := range 3 {
		ws, code, msg := registerRaw(t, l, sec, &p.Blocks[i])
		if ws == nil {
			t.Fatalf("seat %d: %s %s", i, code, msg)
		}
		held = append(held, ws)
	}
	_, code, msg := registerRaw(t, l, sec, &p.Blocks[3])
	full(code, msg, 3)
	held[0].Close()
	f := ts.Server.federation(fed.ID)
	waitFor(t, "the closed seat to be away", 10*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, connected := f.coord.Seats()
		return connected == 2
	})
	_, code, msg = registerRaw(t, l, sec, &p.Blocks[3])
	full(code, msg, 3)

	// Automatic start at 3: a seat left before the start gives its place
	// to the next; once started with 3, a fourth is refused.
	l, fed = ts.create(t, CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 3, NumFeatures: p.Data.M()}}, sec, "bgv")
	f = ts.Server.federation(fed.ID)
	first, _, _ := registerRaw(t, l, sec, &p.Blocks[0])
	if _, code, msg := registerRaw(t, l, sec, &p.Blocks[1]); code != "" {
		t.Fatalf("second seat: %s %s", code, msg)
	}
	first.Close()
	waitFor(t, "the first seat to be away", 10*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, connected := f.coord.Seats()
		return connected == 1
	})
	for i := 2; i < 4; i++ {
		if _, code, msg := registerRaw(t, l, sec, &p.Blocks[i]); code != "" {
			t.Fatalf("seat %d after one left: %s %s", i, code, msg)
		}
	}
	_, code, msg = registerRaw(t, l, sec, &p.Blocks[4])
	full(code, msg, 3)
}

// Probe 8: a registered participant's frames are bounded by what it may
// send. Before the start it has nothing to send but an error: a 1 MiB
// frame is read no further than that bound and closed as too-large (close
// 1009), a strike. Three strikes and it is dropped: its session is refused.
func TestProbeRegisteredFrameBeforeTheStart(t *testing.T) {
	const strikes = 3 // the coordinator's
	p := smallData(t)
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(5)
	l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2, NumFeatures: p.Data.M()}, ManualStart: true}, sec, "bgv")
	var session string
	for strike := 1; strike <= strikes+1; strike++ {
		protos := l.SocketProtocols(session)
		ws := rawDial(t, l.SocketURL(), protos, nil)
		ws.WriteMessage(websocket.BinaryMessage, helloFrame(t, sec, &p.Blocks[0]))
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, f, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := protocol.DecodeMessage(nil, f, protocol.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if strike > strikes {
			if m.Kind != protocol.KindError || m.Code != protocol.CodeDropped {
				t.Fatalf("after %d strikes: %s %q %s, want refused as %q", strikes, m.Kind, m.Code, m.Err, protocol.CodeDropped)
			}
			break
		}
		if m.Kind != protocol.KindWelcome {
			t.Fatalf("strike %d: %s %s, want the welcome", strike, m.Kind, m.Err)
		}
		if session == "" {
			session = m.Session
		}
		ws.WriteMessage(websocket.BinaryMessage, make([]byte, 1<<20))
		expectError(t, ws, protocol.CodeTooLarge)
		if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("strike %d: %v, want close 1009", strike, err)
		}
	}
	f := ts.Server.federation(fed.ID)
	f.mu.Lock()
	defer f.mu.Unlock()
	if why := f.coord.Clients()[0].Dropped; !strings.Contains(why, "3 strikes") {
		t.Fatalf("dropped for %q, want its three strikes named", why)
	}
}

// floodAfter is a participant's connection that, from the first message
// of round from on, sends a frame of size bytes in place of each of its
// replies (its hellos go as they are).
type floodAfter struct {
	session.Conn
	from, size int
	on         *atomic.Bool
	wrote      bool
	scheme     seal.Scheme
}

func (c *floodAfter) Read(ctx context.Context) ([]byte, error) {
	f, err := c.Conn.Read(ctx)
	if err == nil {
		if m, derr := protocol.DecodeMessage(c.scheme, f, protocol.DefaultLimits); derr == nil && m.Round >= c.from {
			c.on.Store(true)
		}
	}
	return f, err
}

func (c *floodAfter) Write(ctx context.Context, f []byte) error {
	if c.wrote && c.on.Load() {
		f = make([]byte, c.size)
	}
	c.wrote = true
	return c.Conn.Write(ctx, f)
}

// Probe 9: registered participants of a training federation send 63 MB
// frames in place of their replies. Each is refused at its header
// (nothing of it is read), closes only that connection and counts a
// strike; three bar the participant. The others train to the last round.
func TestProbeRegisteredBigFrames(t *testing.T) {
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:320,12,1,0.05,3", Holdout: 0.2, Partition: "horizontal:8"})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(6)
	const rounds = 400
	l, fed := ts.create(t, CreateRequest{RoundTimeout: Duration(10 * time.Second),
		Config: protocol.Config{Lambda: 1e-2, IIC: 0.2, Rounds: rounds, Tol: protocol.NoTol, Quorum: 0.2, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, "bgv")
	scheme, _ := seal.ByName("bgv")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const attackers = 2
	errs := make([]error, len(p.Blocks))
	var wg sync.WaitGroup
	for i := range p.Blocks {
		dial := dialer()
		if i >= len(p.Blocks)-attackers {
			base, on := dial, new(atomic.Bool)
			dial = func(ctx context.Context, url string, protos []string) (session.Conn, error) {
				c, err := base(ctx, url, protos)
				if err != nil {
					return nil, err
				}
				return &floodAfter{Conn: c, from: 2, size: 63 << 20, on: on, scheme: scheme}, nil
			}
		}
		welcomed := make(chan struct{})
		var once sync.Once
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = session.Run(ctx, l, &p.Blocks[i], session.Options{Dial: dial, RetryFor: 20 * time.Second,
				OnWelcome: func(string, string) { once.Do(func() { close(welcomed) }) }})
		}()
		<-welcomed
	}
	wg.Wait()
	for i, err := range errs {
		if i < len(p.Blocks)-attackers {
			if err != nil {
				t.Errorf("honest participant %d: %v", i, err)
			}
			continue
		}
		if protocol.ErrorCode(err) != protocol.CodeDropped {
			t.Errorf("flooding participant %d: %v, want refused as %q", i, err, protocol.CodeDropped)
		}
	}
	if st := ts.status(t, fed.ID); st.State != "finished" || len(st.History) != rounds+1 {
		t.Fatalf("federation %s after %d rounds, want finished after %d", st.State, len(st.History)-1, rounds)
	}
}
