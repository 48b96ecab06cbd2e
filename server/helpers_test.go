package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// testServer is a Server on a real loopback listener.
type testServer struct {
	*Server
	http *httptest.Server
	dir  string
	// admin holds the admin token of each federation the test created:
	// calls without a token use it (the tests of who may read what name
	// their tokens: TestAccess).
	mu    sync.Mutex
	admin map[string]string
}

// testCreateToken is the create token of test servers.
const testCreateToken = "test-create-token"

func startServer(t *testing.T, dir string) *testServer {
	t.Helper()
	return startServerWith(t, dir, nil)
}

func startServerWith(t *testing.T, dir string, edit func(*Options)) *testServer {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("HYFED_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// Tests compare encrypted runs with plaintext ones.
	opt := Options{DataDir: dir, Log: log, InsecureDemo: true, CreateToken: testCreateToken}
	if edit != nil {
		edit(&opt)
	}
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	// The server as hyfed serve runs it: its http.Server (timeouts) on its
	// bounded listener.
	h := httptest.NewUnstartedServer(nil)
	h.Config = s.HTTPServer()
	h.Listener = s.Listener(h.Listener)
	h.Start()
	ts := &testServer{Server: s, http: h, dir: dir, admin: map[string]string{}}
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) stop() {
	ts.http.CloseClientConnections()
	ts.http.Close()
	ts.Server.Close()
}

// create makes a federation through the API and returns its link.
func (ts *testServer) create(t *testing.T, req CreateRequest, sec secret.Secret, scheme string) (session.Link, *CreateResponse) {
	t.Helper()
	req.Fingerprint = sec.Fingerprint()
	req.Scheme = scheme
	var resp CreateResponse
	if code := ts.call(t, "POST", "/api/federations", "", req, &resp); code != http.StatusCreated {
		t.Fatalf("create: HTTP %d", code)
	}

	frag := session.SecretPrefix(scheme) + sec.String()
	if req.Keys == protocol.KeysThreshold {
		frag = session.SecretPrefix(session.SchemeThreshold) + sec.String()
	}
	if req.Pseudonyms == protocol.PseudonymsOPRF {
		frag += "&" + session.OPRFParam
	}
	l, err := session.ParseLink(ts.http.URL + resp.JoinPath + "&secret=" + frag)
	if err != nil {
		t.Fatal(err)
	}
	return l, &resp
}

// tokenFor is the token a call without one sends: the create token to
// create, the federation's admin token on its routes.
func (ts *testServer) tokenFor(path string) string {
	rest, ok := strings.CutPrefix(path, "/api/federations")
	if !ok {
		return ""
	}
	if rest == "" || rest[0] == '?' {
		return testCreateToken
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	id, _, _ = strings.Cut(id, "?")
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.admin[id]
}

// call sends a JSON request and decodes the JSON answer into out. An empty
// token is tokenFor's; "none" sends none.
func (ts *testServer) call(t *testing.T, method, path, token string, in, out any) int {
	t.Helper()
	switch token {
	case "":
		token = ts.tokenFor(path)
	case "none":
		token = ""
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, ts.http.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: HTTP %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	if cr, ok := out.(*CreateResponse); ok && resp.StatusCode == http.StatusCreated {
		ts.mu.Lock()
		ts.admin[cr.ID] = cr.AdminToken
		ts.mu.Unlock()
	}
	return resp.StatusCode
}

func (ts *testServer) status(t *testing.T, id string) Status {
	t.Helper()
	var st Status
	if code := ts.call(t, "GET", "/api/federations/"+id, "", nil, &st); code != 200 {
		t.Fatalf("status: HTTP %d", code)
	}
	return st
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// smallData is a small synthetic federation: 6 blocks (3 sample groups x 2
// feature groups).
func smallData(t *testing.T) *experiment.Prepared {
	t.Helper()
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:360,12,1,0.05,3", Holdout: 0.2, Partition: "grid:3,2"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func blockPtrs(bs []partition.Block) []*partition.Block {
	out := make([]*partition.Block, len(bs))
	for i := range bs {
		out[i] = &bs[i]
	}
	return out
}

func dialer() session.Dialer { return session.WebSocket(64 << 20) }

func runAll(ctx context.Context, l session.Link, blocks []*partition.Block) ([]*session.Result, error) {
	return session.RunMany(ctx, l, blocks, session.Options{Dial: dialer(), RetryFor: 20 * time.Second})
}

func sameFloat(a, b float64) bool { return a == b || (a != a && b != b) }

func fmtRound(r *MetricsView) string {
	return fmt.Sprintf("round %d primal %v dual %v", r.Round, float64(r.Primal), float64(r.Dual))
}

// federation returns a loaded federation, or nil (the tests' look-up; the
// routes check a token first: auth.go).
func (s *Server) federation(id string) *federation {
	s.mu.Lock()
	f := s.feds[id]
	s.mu.Unlock()
	if f == nil || !f.ensure() {
		return nil
	}
	return f
}
