// Package e2e drives Debian's headless Chromium (through chromedp) and
// Firefox ESR (through WebDriver BiDi: puppeteer-core in firefox/driver.js,
// firefox_harness_test.go) against a real hyfed server on loopback
// sockets: the pages as a user sees them, with native participants
// (shared/session) or browser ones doing the training. This file is the
// harness (and Chromium's); engine_test.go has what both engines share;
// the tests are in the other files.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// Time limits. Each is a ceiling that turns a hang into a failure, not a
// pace: a passing test ends long before any of them.
const (
	browserLife  = 5 * time.Minute  // chromium is killed after this, whatever it is doing (TestCuriousServerLive: 127 to 172 s on 2 loaded cores)
	callTimeout  = 30 * time.Second // one DevTools call (navigate, evaluate, screenshot, a click that downloads); generous for 2 loaded cores
	pollTimeout  = 5 * time.Second  // one evaluation of waitJS's condition
	dumpTimeout  = 3 * time.Second  // each call that describes a failed page (it may be hung)
	nativeLife   = 3 * time.Minute  // native participants give up after this (TestDashboardConverged: 100 block rounds of MNIST quadrants:1)
	startLimit   = 30 * time.Second // chromium's start, and a new tab's
	waitInterval = 100 * time.Millisecond
)

// requireOr skips the test when something it needs is not installed, unless
// $CI is set: CI must have everything, so there it fails instead.
func requireOr(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this is an error, not a skip)", msg)
	}
	t.Skip(msg)
}

// requireFreshWasm fails the test if the WebAssembly participant the
// pages load (web/static/wasm/hyfed.wasm, embedded in this test binary) is
// missing or older than a Go source it is built from: the tabs would run
// the old participant (which, after a wire change, fails with a decoding
// error far from its cause). make wasm, which make test runs, builds it.
func requireFreshWasm(t testing.TB) {
	t.Helper()
	// The repository's root is the e2e package's parent.
	root := ".."
	wasmOnce.Do(func() {
		wasmStale = staleWasm(filepath.Join(root, "web", "static", "wasm", "hyfed.wasm"),
			filepath.Join(root, "wasmclient"), filepath.Join(root, "shared"))
	})
	if wasmStale != "" {
		t.Fatal(wasmStale)
	}
}

var (
	wasmOnce  sync.Once
	wasmStale string
)

// staleWasm says why the wasm file is stale, or "".
func staleWasm(wasm string, dirs ...string) string {
	fi, err := os.Stat(wasm)
	if err != nil {
		return fmt.Sprintf("the WebAssembly participant is not built (%v): run make wasm (make test does)", err)
	}
	for _, dir := range dirs {
		var newer string
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || newer != "" || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			if info, err := d.Info(); err == nil && info.ModTime().After(fi.ModTime()) {
				newer = path
			}
			return nil
		})
		if newer != "" {
			return fmt.Sprintf("the WebAssembly participant %s (built %s) is older than %s: the tabs would run the old participant; run make wasm (make test does)",
				wasm, fi.ModTime().Format(time.DateTime), newer)
		}
	}
	return ""
}

// ---- server ----------------------------------------------------------------

// createToken is the test servers' create token (hyfed serve makes one at
// start): creating and listing federations need it.
const createToken = "e2e-create-token"

// adminTokens maps each federation the tests created to its admin token,
// which the tests' own API calls send (every read needs a token now).
var adminTokens sync.Map // federation id -> admin token

func adminToken(id string) string {
	tok, _ := adminTokens.Load(id)
	s, _ := tok.(string)
	return s
}

// testServer is a hyfed server on a real loopback socket, served by
// net/http as hyfed serve does.
type testServer struct {
	// URL is http://localhost:PORT: "localhost" (not 127.0.0.1) so that
	// pages are a secure context, as the wasm participant needs.
	URL    string
	Server *server.Server

	mu      sync.Mutex
	frames  map[string]map[int][][]byte // federation -> client -> frames, in order
	streams map[*context.CancelFunc]struct{}
	log     tailBuffer // the server's warnings, shown when a test fails
}

// startServer starts a server with a fresh data directory; opts may edit
// its options (a Received set there is called too). It is shut down when
// the test ends.
func startServer(t testing.TB, opts ...func(*server.Options)) *testServer {
	t.Helper()
	ts := &testServer{frames: map[string]map[int][][]byte{}, streams: map[*context.CancelFunc]struct{}{}}
	o := server.Options{DataDir: t.TempDir(), CreateToken: createToken}
	level := slog.LevelWarn
	if os.Getenv("HYFED_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	o.Log = slog.New(slog.NewTextHandler(&ts.log, &slog.HandlerOptions{Level: level}))
	for _, edit := range opts {
		edit(&o)
	}
	next := o.Received
	o.Received = func(fed string, client int, frame []byte) {
		ts.record(fed, client, frame)
		if next != nil {
			next(fed, client, frame)
		}
	}
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	hs := &http.Server{Handler: ts.cuttable(srv.Handler()), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	ts.URL = fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	ts.Server = srv
	t.Cleanup(func() {
		// Close, not Shutdown: event streams and websockets never end by themselves.
		hs.Close()
		<-served
		srv.Close()
		if t.Failed() && ts.log.Len() > 0 {
			t.Logf("server log (last lines):\n%s", ts.log.String())
		}
	})
	t.Logf("server: %s", ts.URL)
	return ts
}

// seeded lets a test server take seeded federations, whose runs can be
// compared with in-process ones bit for bit: their secret derives from the
// seed, so the server refuses them unless it runs as an insecure
// demonstration (hyfed serve --insecure-demo).
func seeded(o *server.Options) { o.InsecureDemo = true }

// cuttable lets CutStreams end the event streams being served (a lost
// connection, as a proxy's timeout would cut it).
func (ts *testServer) cuttable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/events") {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		ts.mu.Lock()
		ts.streams[&cancel] = struct{}{}
		ts.mu.Unlock()
		defer func() {
			ts.mu.Lock()
			delete(ts.streams, &cancel)
			ts.mu.Unlock()
			cancel()
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// CutStreams ends every event stream being served and returns how many
// it ended.
func (ts *testServer) CutStreams() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for c := range ts.streams {
		(*c)()
	}
	return len(ts.streams)
}

func (ts *testServer) record(fed string, client int, frame []byte) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	m := ts.frames[fed]
	if m == nil {
		m = map[int][][]byte{}
		ts.frames[fed] = m
	}
	m[client] = append(m[client], bytes.Clone(frame)) // the server may reuse its buffer
}

// Frames returns the frames each client of federation fed has sent, by the
// server's client number (-1: frames of connections not yet registered,
// i.e. hellos), in the order they arrived: what the server actually got
// (copies, safe to keep).
func (ts *testServer) Frames(fed string) map[int][][]byte {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make(map[int][][]byte, len(ts.frames[fed]))
	for c, fs := range ts.frames[fed] {
		out[c] = append([][]byte(nil), fs...)
	}
	return out
}

// createFederation creates a federation through the API as hyfed create
// does: a fresh secret, whose fingerprint goes into req, and a join link
// (base + join path + "&secret=" + secret, "plaintext:" before the secret
// when req.Scheme is plaintext) that only this side knows.
func createFederation(t testing.TB, base string, req server.CreateRequest) (string, *server.CreateResponse) {
	t.Helper()
	sec, err := secret.New()
	if err != nil {
		t.Fatal(err)
	}
	req.Fingerprint = sec.Fingerprint()
	resp := postCreate(t, base, req)
	frag := sec.String()
	if req.Scheme == "plaintext" {
		frag = "plaintext:" + frag
	}
	link := joinLink(t, base, resp, frag)
	if _, err := session.ParseLink(link); err != nil {
		t.Fatalf("the join link %s does not parse: %v", link, err)
	}
	return link, resp
}

// postCreate creates the federation with the create token and keeps its
// admin token for the tests' API calls.
func postCreate(t testing.TB, base string, req server.CreateRequest) *server.CreateResponse {
	t.Helper()
	var resp server.CreateResponse
	if code := callAPI(t, "POST", base+"/api/federations", createToken, req, &resp); code != http.StatusCreated {
		t.Fatalf("create federation: HTTP %d", code)
	}
	adminTokens.Store(resp.ID, resp.AdminToken)
	return &resp
}

// joinLink is the join link of a created federation: its join path
// (/join/<id>#invite=<invite>) and the secret, in the fragment.
func joinLink(t testing.TB, base string, resp *server.CreateResponse, secretFrag string) string {
	t.Helper()
	if !strings.Contains(resp.JoinPath, "#invite=") {
		t.Fatalf("join_path %q: want /join/<id>#invite=<invite>", resp.JoinPath)
	}
	return strings.TrimRight(base, "/") + resp.JoinPath + "&secret=" + secretFrag
}

// fedStatus returns GET /api/federations/{id}, read with the federation's
// admin token.
func fedStatus(t testing.TB, base, id string) server.Status {
	t.Helper()
	var st server.Status
	if code := callAPI(t, "GET", base+"/api/federations/"+id, adminToken(id), nil, &st); code != http.StatusOK {
		t.Fatalf("status of %s: HTTP %d", id, code)
	}
	return st
}

// waitStatus polls the federation's status until cond holds, for at most
// timeout, and returns it; what names the condition in the failure.
func waitStatus(t testing.TB, base, id, what string, timeout time.Duration, cond func(server.Status) bool) server.Status {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		st := fedStatus(t, base, id)
		if cond(st) {
			return st
		}
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s: federation %s is %s at round %d, phase %q, %d participants",
				timeout, what, id, st.State, st.Round, st.Phase, len(st.Participants))
		}
		time.Sleep(waitInterval)
	}
}

// callAPI sends in as JSON (nil: no body) with the token as a bearer (""
// none) and decodes the answer into out (nil: ignored); it returns the HTTP
// status and fails the test on transport or decoding errors.
func callAPI(t testing.TB, method, url, token string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
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
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: HTTP %d %.200s: %v", method, url, resp.StatusCode, b, err)
		}
	}
	if resp.StatusCode/100 != 2 {
		t.Logf("%s %s: HTTP %d %.300s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// ---- native participants ---------------------------------------------------

var blockCache struct {
	sync.Mutex
	m map[string][]partition.Block
}

// loadBlocks loads a built-in data set ("mnist", "synthetic:...") or file
// and splits it as hyfed sim does, e.g. loadBlocks(t, "mnist",
// "quadrants:1"). Blocks are cached per process (MNIST takes a while to
// parse) and only read by participants, so tests may share them. A
// missing MNIST (`make data`) skips the test, or fails it under $CI.
func loadBlocks(t testing.TB, data, spec string) []*partition.Block {
	t.Helper()
	blockCache.Lock()
	defer blockCache.Unlock()
	key := data + "|" + spec
	bs, ok := blockCache.m[key]
	if !ok {
		if data == "mnist" {
			if _, err := dataset.MNISTDir(); err != nil {
				requireOr(t, "%v", err)
			}
		}
		d, err := dataset.Load(data, dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := partition.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if bs, err = s.Split(d); err != nil {
			t.Fatal(err)
		}
		if blockCache.m == nil {
			blockCache.m = map[string][]partition.Block{}
		}
		blockCache.m[key] = bs
	}
	out := make([]*partition.Block, len(bs))
	for i := range bs {
		out[i] = &bs[i]
	}
	return out
}

// writeBlockFile writes b as a LIBSVM block file (what hyfed partition
// writes, and what the join page reads) in a temporary directory.
func writeBlockFile(t testing.TB, b *partition.Block, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	var buf bytes.Buffer
	if err := partition.WriteLIBSVM(&buf, b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startNative starts one native participant per block on the join link,
// each on its own websocket, as hyfed sim does (session.RunMany: they
// register in block order). wait blocks until all have finished and fails
// the test if one failed; call it from the test's goroutine. When the test
// ends they are stopped (and waited for) if still running.
func startNative(t testing.TB, link string, blocks []*partition.Block) (wait func() []*session.Result) {
	t.Helper()
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), nativeLife)
	var logs tailBuffer
	o := session.Options{Dial: session.WebSocket(64 << 20), RetryFor: 20 * time.Second,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	type outcome struct {
		res []*session.Result
		err error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		res, err := session.RunMany(ctx, l, blocks, o)
		done <- outcome{res, err}
	}()
	var once sync.Once
	var got outcome
	finish := func() {
		once.Do(func() {
			got = <-done
			cancel()
		})
	}
	t.Cleanup(func() { cancel(); finish() })
	return func() []*session.Result {
		t.Helper()
		finish()
		if got.err != nil {
			if logs.Len() > 0 {
				t.Logf("native participants' log:\n%s", logs.String())
			}
			t.Fatalf("%d native participants, after %.1fs: %v", len(blocks), time.Since(start).Seconds(), got.err)
		}
		t.Logf("%d native participants finished in %.1fs", len(blocks), time.Since(start).Seconds())
		return got.res
	}
}

// runNative runs native participants on the link until they finish.
func runNative(t testing.TB, link string, blocks []*partition.Block) []*session.Result {
	t.Helper()
	return startNative(t, link, blocks)()
}

// ---- browser ---------------------------------------------------------------

// browser is one chromium process; each test starts its own.
type browser struct {
	ctx  context.Context // chromedp context of the browser (its first, blank tab)
	out  tailBuffer      // chromium's stdout and stderr, shown when a test fails
	tabs atomic.Int32    // tabs opened, for their names
}

// chromiumPath finds Debian's chromium (`make chromium` installs it).
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	requireOr(t, "chromium is not installed (make chromium, or apt-get install chromium)")
	return ""
}

// newBrowser starts a headless chromium with a new empty profile, killed
// when the test ends or after browserLife. Its life is not bound to
// t.Context(), which ends before cleanups run, so that a failing test's
// tabs can still be photographed in their cleanup.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	requireFreshWasm(t)
	path := chromiumPath(t)
	profile := t.TempDir() // created first, so removed after chromium has exited
	b := &browser{}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.CombinedOutput(&b.out),
		// The flags that work on this machine (and in CI's container).
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // no user namespaces for the sandbox in containers
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), // no calls home: tests run offline
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	life, cancelLife := context.WithTimeout(context.Background(), browserLife)
	alloc, cancelAlloc := chromedp.NewExecAllocator(life, opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b.ctx = ctx
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc() // waits for the process to exit
		cancelLife()
		if out := withoutNoise(b.out.String()); t.Failed() && out != "" {
			t.Logf("chromium output (last lines, without D-Bus complaints):\n%s", out)
		}
	})
	start := time.Now()
	// The first Do starts chromium and must not get a timeout context (its
	// end would end the browser): a timer ends a start that hangs instead.
	hung := time.AfterFunc(startLimit, cancelLife)
	err := chromedp.Do(ctx)
	if !hung.Stop() {
		err = fmt.Errorf("not started after %v: %w", startLimit, err)
	}
	if err != nil {
		t.Fatalf("starting %s: %v\n%s", path, err, withoutNoise(b.out.String()))
	}
	t.Logf("chromium started in %.1fs", time.Since(start).Seconds())
	return b
}

// tab is one browser tab with its console recorded.
type tab struct {
	t     testing.TB
	name  string
	ctx   context.Context
	start time.Time

	mu       sync.Mutex
	console  []string
	problems []string         // console errors, exceptions and CSP violations not allowed
	allowed  []*regexp.Regexp // console errors a test expects (allowConsole)
	dumped   bool             // the page was already dumped into a failure message
}

// cspWatch runs in every document the tab loads, before the page's own
// scripts: it hands each Content-Security-Policy violation to the harness
// (window.__e2eViolation, exposed by attachTab). DevTools' own scripts are
// not subject to the page's CSP.
const cspWatch = `document.addEventListener('securitypolicyviolation', (e) => {
  const report = window.__e2eViolation;
  if (report) report({directive: e.effectiveDirective || e.violatedDirective, blocked: e.blockedURI,
    source: e.sourceFile + ':' + e.lineNumber, sample: e.sample || '', disposition: e.disposition});
}, true);`

// violation is what cspWatch reports of a securitypolicyviolation event.
type violation struct {
	Directive   string `json:"directive"`
	Blocked     string `json:"blocked"`
	Source      string `json:"source"`
	Sample      string `json:"sample"`
	Disposition string `json:"disposition"`
}

// newTab opens a blank tab (1280x900) in b and records its console
// (console API calls, uncaught exceptions and the browser's log, e.g.
// failed requests) and the Content-Security-Policy violations of its
// pages. A console error, an exception or a CSP violation fails the test
// when the tab is closed, unless the test allowed it (allowConsole). When
// the test fails, the cleanup saves a screenshot and logs the page and the
// console.
func newTab(t testing.TB, b *browser) *tab {
	t.Helper()
	return attachTab(t, b)
}

// attachTab is newTab for the tab of the context options: with
// chromedp.WithTargetID, a tab a page opened itself (window.open), which
// shares its opener's session storage as a user's would.
func attachTab(t testing.TB, b *browser, opts ...chromedp.ContextOption) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, opts...)
	tb := &tab{t: t, name: fmt.Sprintf("tab%d", b.tabs.Add(1)), ctx: ctx, start: time.Now()}
	t.Cleanup(func() {
		tb.checkClean()
		if t.Failed() {
			name := fmt.Sprintf("%s-%s-failed.png", sanitize(t.Name()), tb.name)
			if path, err := takeScreenshot(tb, name, dumpTimeout); err != nil {
				t.Logf("%s: no failure screenshot: %v", tb.name, err)
			} else {
				t.Logf("%s: failure screenshot: %s", tb.name, path)
			}
			tb.mu.Lock()
			dumped := tb.dumped
			tb.mu.Unlock()
			if !dumped {
				t.Logf("%s when the test failed:\n%s", tb.name, tb.dump())
			}
		}
		cancel()
	})
	hung := time.AfterFunc(startLimit, cancel) // as in newBrowser: no timeout context for the first Do
	err := chromedp.Do(ctx)
	if !hung.Stop() {
		err = fmt.Errorf("not open after %v: %w", startLimit, err)
	}
	if err != nil {
		t.Fatalf("opening %s: %v", tb.name, err)
	}
	messages := chromedp.Console(ctx) // subscribed now, before any page loads
	go func() {
		for m, err := range messages {
			if err != nil {
				return // the tab is closed
			}
			line := fmt.Sprintf("%6.2fs %s: %s", time.Since(tb.start).Seconds(), m.Type, m.Text)
			if m.Source != "" {
				line += " [" + m.Source + "]"
			}
			if m.URL != "" {
				line += fmt.Sprintf("  (%s:%d)", m.URL, m.Line+1)
			}
			// Errors and exceptions fail the test; so does anything about
			// the Content-Security-Policy, whatever its level.
			bad := m.Type == chromedp.ConsoleError || m.IsException() ||
				strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Content-Security-Policy")
			tb.note(line, bad)
		}
	}()
	tb.do("watch for CSP violations",
		chromedp.ExposeFunc("__e2eViolation", func(_ context.Context, v violation) (chromedp.Void, error) {
			tb.note(fmt.Sprintf("%6.2fs CSP violation: %s blocked %q (%s, %s) sample %q", time.Since(tb.start).Seconds(),
				v.Directive, v.Blocked, v.Disposition, v.Source, v.Sample), true)
			return chromedp.Void{}, nil
		}),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch})
			return err
		}))
	tb.do("set the viewport", chromedp.EmulateViewport(1280, 900))
	return tb
}

// note records a console line; bad ones are problems unless allowed.
func (tb *tab) note(line string, bad bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.console = append(tb.console, line)
	if !bad {
		return
	}
	for _, re := range tb.allowed {
		if re.MatchString(line) {
			return
		}
	}
	tb.problems = append(tb.problems, line)
}

// allowConsole lets console errors matching the regular expression pass:
// the ones a test provokes (a refused token is a 401 the browser logs).
func (tb *tab) allowConsole(pattern string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.allowed = append(tb.allowed, regexp.MustCompile(pattern))
}

// takeProblems returns the problems recorded so far and forgets them (for
// a test that provokes one on purpose).
func (tb *tab) takeProblems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := tb.problems
	tb.problems = nil
	return p
}

// checkClean fails the test if the tab logged a console error, an
// exception or a CSP violation. Console events travel apart from the calls
// that caused them: it gives the last ones a moment to arrive.
func (tb *tab) checkClean() {
	tb.t.Helper()
	if tb.ctx.Err() == nil {
		time.Sleep(300 * time.Millisecond)
	}
	if p := tb.takeProblems(); len(p) > 0 {
		tb.t.Errorf("%s: %d console errors, exceptions or CSP violations (pages must run clean under the CSP):\n  %s",
			tb.name, len(p), strings.Join(p, "\n  "))
	}
}

// do runs actions with callTimeout; an error fails the test with a dump.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, callTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.fatalf("%s: %s: %v", tb.name, what, err)
	}
}

// navigate loads url and waits for its load event.
func (tb *tab) navigate(url string) {
	tb.t.Helper()
	tb.do("navigate to "+url, chromedp.Navigate(url))
}

// evalJS evaluates a JavaScript expression in the tab and decodes its
// value as T (promises are not awaited); an error fails the test.
func evalJS[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, callTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.fatalf("%s: evaluating %s: %v", tb.name, expr, err)
	}
	return v
}

// evalAsync evaluates a JavaScript expression whose value is a promise and
// decodes what it resolves to as T; an error, or no value within
// callTimeout, fails the test (what names it).
func evalAsync[T any](tb *tab, what, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, callTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.fatalf("%s: %s: %v", tb.name, what, err)
	}
	return v
}

// exists reports whether an element matches the CSS selector.
func (tb *tab) exists(sel string) bool {
	tb.t.Helper()
	return evalJS[bool](tb, fmt.Sprintf("document.querySelector(%s) !== null", jsString(sel)))
}

// text returns the trimmed textContent of the first element matching sel;
// a missing element fails the test.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	v := evalJS[*string](tb, fmt.Sprintf("(e => e ? e.textContent.trim() : null)(document.querySelector(%s))", jsString(sel)))
	if v == nil {
		tb.fatalf("%s: no element %s on %s", tb.name, sel, tb.location())
	}
	return *v
}

// waitJS polls the JavaScript expression cond until it is truthy, for at
// most timeout; then it fails the test with the last value or error, the
// page's text and its console. what says what is awaited, for the message.
// Polling from Go (not in the page) works the same in background tabs.
func (tb *tab) waitJS(what, cond string, timeout time.Duration) {
	tb.t.Helper()
	expr := fmt.Sprintf("(() => { const v = (%s); return {ok: !!v, v: String(v)}; })()", cond)
	end := time.Now().Add(timeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, pollTimeout)
		r, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
			OK bool   `json:"ok"`
			V  string `json:"v"`
		}](expr))
		cancel()
		switch {
		case err == nil && r.OK:
			return
		case err == nil:
			last = "value " + r.V
		default:
			last = "error " + err.Error()
			if errors.Is(err, context.Canceled) || tb.ctx.Err() != nil {
				tb.fatalf("%s: waiting for %s: the browser is gone: %v", tb.name, what, err)
			}
		}
		if time.Now().After(end) {
			tb.fatalf("%s: timed out after %v waiting for %s\n  condition: %s\n  last: %.300s", tb.name, timeout, what, cond, last)
		}
		time.Sleep(waitInterval)
	}
}

// location is the tab's URL, or why it cannot be read.
func (tb *tab) location() string {
	ctx, cancel := context.WithTimeout(tb.ctx, dumpTimeout)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "(location: " + err.Error() + ")"
	}
	return loc
}

// Console returns the console lines so far ("  1.23s error: ...").
func (tb *tab) Console() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.console...)
}

// dump describes the page for a failure message: URL, the body's text (the
// first 4,000 characters) and the last 60 console lines.
func (tb *tab) dump() string {
	var sb strings.Builder
	loc := tb.location()
	fmt.Fprintf(&sb, "--- %s at %s\n", tb.name, loc)
	text := "(not read: the tab does not answer)"
	if !strings.HasPrefix(loc, "(location:") {
		ctx, cancel := context.WithTimeout(tb.ctx, dumpTimeout)
		var err error
		text, err = chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : '(no body)'"))
		cancel()
		if err != nil {
			text = "(page text: " + err.Error() + ")"
		}
	}
	if len(text) > 4000 {
		text = text[:4000] + "\n[... cut]"
	}
	fmt.Fprintf(&sb, "--- page text:\n%s\n", text)
	lines := tb.Console()
	fmt.Fprintf(&sb, "--- console (%d messages", len(lines))
	if len(lines) > 60 {
		fmt.Fprintf(&sb, ", the last 60")
		lines = lines[len(lines)-60:]
	}
	sb.WriteString("):\n")
	for _, l := range lines {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// fatalf fails the test with the message (after "chromium: ", the
// engine: some flows run in Firefox too) and a dump of the tab.
func (tb *tab) fatalf(format string, args ...any) {
	tb.t.Helper()
	tb.mu.Lock()
	tb.dumped = true
	tb.mu.Unlock()
	tb.t.Fatalf("chromium: "+format+"\n%s", append(args, tb.dump())...)
}

// artifactsDir is $HYFED_ARTIFACTS, else e2e/artifacts (git-ignored).
func artifactsDir() (string, error) {
	dir := os.Getenv("HYFED_ARTIFACTS")
	if dir == "" {
		dir = "artifacts" // go test runs in the package's folder, e2e/
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// screenshot saves a full-page PNG of the tab as name in the artifacts
// folder, logs and returns its path.
func screenshot(t testing.TB, tb *tab, name string) string {
	t.Helper()
	path, err := takeScreenshot(tb, name, callTimeout)
	if err != nil {
		tb.fatalf("%s: screenshot %s: %v", tb.name, name, err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

func takeScreenshot(tb *tab, name string, timeout time.Duration) (string, error) {
	dir, err := artifactsDir()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, png, 0o644)
}

// ---- small things ----------------------------------------------------------

// withoutNoise drops chromium's lines about D-Bus (there is no bus in a
// container) and the Debian wrapper's complaint, so that what is left
// matters.
func withoutNoise(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" || strings.Contains(l, "dbus/") || strings.Contains(l, "unexpected operator") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// sanitize makes a test name usable as a file name.
func sanitize(s string) string { return unsafeName.ReplaceAllString(s, "_") }

// tailBuffer is an io.Writer, safe for concurrent use, that keeps the last
// 16 KiB written (logs that matter only when something failed).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 16 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailMax {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// TestStaleWasm: the freshness check names a source newer than the
// participant, ignores tests, and says when the participant is missing.
func TestStaleWasm(t *testing.T) {
	dir := t.TempDir()
	wasm := filepath.Join(dir, "hyfed.wasm")
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path string, at time.Time) {
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if msg := staleWasm(wasm, src); !strings.Contains(msg, "not built") {
		t.Fatalf("missing participant: %q", msg)
	}
	write(wasm, now)
	write(filepath.Join(src, "old.go"), now.Add(-time.Hour))
	write(filepath.Join(src, "new_test.go"), now.Add(time.Hour))
	if msg := staleWasm(wasm, src); msg != "" {
		t.Fatalf("fresh participant called stale: %q", msg)
	}
	write(filepath.Join(src, "new.go"), now.Add(time.Hour))
	if msg := staleWasm(wasm, src); !strings.Contains(msg, "new.go") || !strings.Contains(msg, "make wasm") {
		t.Fatalf("stale participant: %q", msg)
	}
}
