package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Firefox in the e2e tests: Debian's firefox-esr, headless, driven through
// WebDriver BiDi by puppeteer-core (npm) in a small Node program,
// e2e/firefox/driver.js. The Go side starts it, sends it one command a
// line on its stdin and reads the answers and the pages' events (console,
// uncaught exceptions, HTTP errors, CSP violations) as JSON lines from its
// stdout. `make firefox` installs firefox-esr, Node and the driver's
// modules (npm ci in e2e/firefox).

// firefoxPath finds Debian's firefox-esr (make firefox installs it).
func firefoxPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"firefox-esr", "firefox"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	requireOr(t, "firefox: firefox-esr is not installed (make firefox, or apt-get install firefox-esr)")
	return ""
}

// firefoxDriver returns node's path and the driver's, or skips the test
// (fails it under $CI) when node or the driver's modules are missing.
func firefoxDriver(t testing.TB) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		requireOr(t, "firefox: node is not installed (make firefox, or apt-get install nodejs npm)")
	}
	dir, err := filepath.Abs("firefox")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "puppeteer-core", "package.json")); err != nil {
		requireOr(t, "firefox: the driver's modules are not installed (make firefox, or npm ci in e2e/firefox)")
	}
	return node, filepath.Join(dir, "driver.js")
}

// firefox is one headless firefox-esr and the node program that drives it.
type firefox struct {
	t         testing.TB
	cmd       *exec.Cmd
	in        io.WriteCloser
	downloads string     // where the browser saves downloads (the driver's --downloads)
	out       tailBuffer // the driver's stderr, shown when a test fails
	version   string
	exited    chan struct{} // closed when the driver's stdout ends
	tabs      atomic.Int32

	mu      sync.Mutex
	next    int
	waiting map[int]chan ffReply
	pages   map[string]*ffTab
}

// ffReply is one line of the driver: an answer (ID > 0) or an event.
type ffReply struct {
	ID    int             `json:"id"`
	Value json.RawMessage `json:"value"`
	Error *string         `json:"error"`

	Event   string `json:"event"`
	Page    string `json:"page"`
	Version string `json:"version"`
	Level   string `json:"level"`
	Text    string `json:"text"`
	URL     string `json:"url"`
	Line    int    `json:"line"`
	Status  int    `json:"status"`
	violation
}

// newFirefox starts the driver and its firefox, killed when the test ends
// or after browserLife, as a test's engine.
func newFirefox(t testing.TB) engine {
	t.Helper()
	requireFreshWasm(t)
	path := firefoxPath(t)
	node, script := firefoxDriver(t)
	ff := &firefox{t: t, downloads: t.TempDir(), exited: make(chan struct{}),
		waiting: map[int]chan ffReply{}, pages: map[string]*ffTab{}}
	ff.cmd = exec.Command(node, script, "--firefox", path, "--downloads", ff.downloads, "--profile", t.TempDir())
	ff.cmd.Stderr = &ff.out
	ff.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // node, firefox and its content processes: one group to kill
	var err error
	if ff.in, err = ff.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := ff.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ff.cmd.Start(); err != nil {
		t.Fatalf("firefox: starting the driver: %v", err)
	}
	kill := func() { syscall.Kill(-ff.cmd.Process.Pid, syscall.SIGKILL) }
	life := time.AfterFunc(browserLife, kill)
	ready := make(chan string, 1)
	go ff.read(stdout, ready)
	t.Cleanup(func() {
		life.Stop()
		ff.in.Close() // the driver closes the browser and exits
		select {
		case <-ff.exited:
		case <-time.After(10 * time.Second):
			t.Logf("firefox: the driver did not exit 10 s after its input ended; killed")
		}
		kill() // whatever is left of the group
		ff.cmd.Wait()
		if out := strings.TrimSpace(ff.out.String()); t.Failed() && out != "" {
			t.Logf("firefox driver's output (last lines):\n%s", out)
		}
	})
	select {
	case ff.version = <-ready:
	case <-ff.exited:
		t.Fatalf("firefox: the driver ended before the browser was up:\n%s", ff.out.String())
	case <-time.After(startLimit):
		t.Fatalf("firefox: not started after %v:\n%s", startLimit, ff.out.String())
	}
	t.Logf("%s started in %.1fs (puppeteer-core over WebDriver BiDi)", ff.version, time.Since(start).Seconds())
	return ff
}

// read dispatches the driver's lines: answers to their callers, events to
// their pages.
func (ff *firefox) read(r io.Reader, ready chan<- string) {
	defer close(ff.exited)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var m ffReply
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintf(&ff.out, "(stdout) %s\n", sc.Bytes())
			continue
		}
		switch {
		case m.ID > 0:
			ff.mu.Lock()
			c := ff.waiting[m.ID]
			delete(ff.waiting, m.ID)
			ff.mu.Unlock()
			if c != nil {
				c <- m
			}
		case m.Event == "ready":
			ready <- m.Version
		case m.Event == "fatal" || m.Event == "disconnected":
			fmt.Fprintf(&ff.out, "driver: %s %s\n", m.Event, derefOr(m.Error, ""))
		default:
			ff.mu.Lock()
			p := ff.pages[m.Page]
			ff.mu.Unlock()
			if p != nil {
				p.event(m)
			}
		}
	}
}

func derefOr(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

// call sends one command and waits for its answer, at most timeout.
func (ff *firefox) call(timeout time.Duration, cmd map[string]any) (json.RawMessage, error) {
	ff.mu.Lock()
	ff.next++
	id := ff.next
	c := make(chan ffReply, 1)
	ff.waiting[id] = c
	ff.mu.Unlock()
	cmd["id"] = id
	b, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	if _, err := ff.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("the driver is gone: %w", err)
	}
	select {
	case m := <-c:
		if m.Error != nil {
			return nil, errors.New(*m.Error)
		}
		return m.Value, nil
	case <-ff.exited:
		return nil, errors.New("the driver is gone")
	case <-time.After(timeout):
		return nil, fmt.Errorf("no answer after %v", timeout)
	}
}

func (ff *firefox) name() string { return "firefox" }

func (ff *firefox) newPage() page {
	ff.t.Helper()
	v, err := ff.call(startLimit, map[string]any{"op": "newPage"})
	if err != nil {
		ff.t.Fatalf("firefox: opening a tab: %v", err)
	}
	return ff.attach(v)
}

func (ff *firefox) popup(from page, sel string) page {
	ff.t.Helper()
	f := from.(*ffTab)
	v, err := ff.call(startLimit, map[string]any{"op": "popup", "page": f.id, "sel": sel})
	if err != nil {
		f.fatalf("%s: pressing %s to open a tab: %v", f.name, sel, err)
	}
	return ff.attach(v)
}

// attach makes the tab the driver named in v (its {"page": id}).
func (ff *firefox) attach(v json.RawMessage) *ffTab {
	ff.t.Helper()
	var r struct {
		Page string `json:"page"`
	}
	if err := json.Unmarshal(v, &r); err != nil || r.Page == "" {
		ff.t.Fatalf("firefox: the driver answered %s for a new tab", v)
	}
	tb := &ffTab{ff: ff, t: ff.t, id: r.Page, name: fmt.Sprintf("tab%d", ff.tabs.Add(1)), start: time.Now()}
	ff.mu.Lock()
	ff.pages[r.Page] = tb
	ff.mu.Unlock()
	t := ff.t
	t.Cleanup(func() {
		tb.checkClean()
		if t.Failed() {
			name := fmt.Sprintf("%s-firefox-%s-failed.png", sanitize(t.Name()), tb.name)
			if path, err := tb.takeShot(name, dumpTimeout*3); err != nil {
				t.Logf("firefox %s: no failure screenshot: %v", tb.name, err)
			} else {
				t.Logf("firefox %s: failure screenshot: %s", tb.name, path)
			}
			tb.mu.Lock()
			dumped := tb.dumped
			tb.mu.Unlock()
			if !dumped {
				t.Logf("firefox %s when the test failed:\n%s", tb.name, tb.dump())
			}
		}
	})
	return tb
}

// ffTab is one Firefox tab with its console recorded, as tab is Chromium's.
type ffTab struct {
	ff    *firefox
	t     testing.TB
	id    string // the driver's name of the page
	name  string
	start time.Time

	mu       sync.Mutex
	console  []string
	problems []string
	allowed  []*regexp.Regexp
	dumped   bool
}

// event records one of the page's events. Console errors, uncaught
// exceptions, HTTP errors (Chromium logs a failed load as a console error;
// Firefox's log has no such line) and anything about the
// Content-Security-Policy are problems, as in Chromium's tabs. Requests that
// failed without an answer (aborted fetches, a stream cut when the page
// leaves) are only recorded.
func (tb *ffTab) event(m ffReply) {
	at := fmt.Sprintf("%6.2fs", time.Since(tb.start).Seconds())
	var line string
	bad := false
	switch m.Event {
	case "console":
		line = fmt.Sprintf("%s %s: %s", at, m.Level, m.Text)
		if m.URL != "" {
			line += fmt.Sprintf("  (%s:%d)", m.URL, m.Line+1)
		}
		bad = m.Level == "error" || m.Level == "assert" ||
			strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Content-Security-Policy")
	case "pageerror":
		line, bad = fmt.Sprintf("%s exception: %s", at, m.Text), true
	case "http":
		line, bad = fmt.Sprintf("%s error: HTTP %d for %s", at, m.Status, m.URL), true
	case "requestfailed":
		line = fmt.Sprintf("%s request failed: %s (%s)", at, m.URL, m.Text)
	case "violation":
		line, bad = fmt.Sprintf("%s CSP violation: %s blocked %q (%s, %s) sample %q", at,
			m.Directive, m.Blocked, m.Disposition, m.Source, m.Sample), true
	case "popup":
		line = fmt.Sprintf("%s opened a tab: %s", at, m.URL)
	default:
		line = fmt.Sprintf("%s %s: %s", at, m.Event, m.Text)
	}
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

// allowConsole lets problems matching the regular expression pass.
func (tb *ffTab) allowConsole(pattern string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.allowed = append(tb.allowed, regexp.MustCompile(pattern))
}

// takeProblems returns the problems recorded so far and forgets them.
func (tb *ffTab) takeProblems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := tb.problems
	tb.problems = nil
	return p
}

// checkClean fails the test if the tab logged a problem.
func (tb *ffTab) checkClean() {
	tb.t.Helper()
	time.Sleep(300 * time.Millisecond) // the last events travel apart from the calls
	if p := tb.takeProblems(); len(p) > 0 {
		tb.t.Errorf("firefox %s: %d console errors, exceptions, HTTP errors or CSP violations (pages must run clean under the CSP):\n  %s",
			tb.name, len(p), strings.Join(p, "\n  "))
	}
}

func (tb *ffTab) engine() string { return "firefox" }

// do runs one command on the page, failing the test (with a dump) on error.
func (tb *ffTab) do(what string, timeout time.Duration, cmd map[string]any) json.RawMessage {
	tb.t.Helper()
	cmd["page"] = tb.id
	v, err := tb.ff.call(timeout, cmd)
	if err != nil {
		tb.fatalf("%s: %s: %v", tb.name, what, err)
	}
	return v
}

func (tb *ffTab) navigate(url string) {
	tb.t.Helper()
	tb.do("navigate to "+url, callTimeout, map[string]any{"op": "goto", "url": url})
}

func (tb *ffTab) evalInto(expr string, out any) {
	tb.t.Helper()
	v := tb.do("evaluating "+expr, callTimeout, map[string]any{"op": "eval", "expr": expr})
	if err := json.Unmarshal(v, out); err != nil {
		tb.fatalf("%s: evaluating %s: the value %.200s: %v", tb.name, expr, v, err)
	}
}

func (tb *ffTab) text(sel string) string {
	tb.t.Helper()
	v := pageEval[*string](tb, fmt.Sprintf("(e => e ? e.textContent.trim() : null)(document.querySelector(%s))", jsString(sel)))
	if v == nil {
		tb.fatalf("%s: no element %s", tb.name, sel)
	}
	return *v
}

func (tb *ffTab) click(sel string) {
	tb.t.Helper()
	tb.do("press "+sel, callTimeout, map[string]any{"op": "click", "sel": sel})
}

// upload sets the file input sel to the file at path, as a user picking
// it does (puppeteer's uploadFile: BiDi's input.setFiles).
func (tb *ffTab) upload(sel, path string) {
	tb.t.Helper()
	tb.do("upload "+path, callTimeout, map[string]any{"op": "upload", "sel": sel, "path": path})
}

func (tb *ffTab) viewport(w, h int, mobile bool) {
	tb.t.Helper()
	tb.do(fmt.Sprintf("viewport %dx%d", w, h), callTimeout, map[string]any{"op": "viewport", "w": w, "h": h, "mobile": mobile})
}

// waitJS polls cond until it is truthy, for at most timeout, as Chromium's
// tab.waitJS does.
func (tb *ffTab) waitJS(what, cond string, timeout time.Duration) {
	tb.t.Helper()
	expr := fmt.Sprintf("(() => { const v = (%s); return {ok: !!v, v: String(v)}; })()", cond)
	end := time.Now().Add(timeout)
	var last string
	for {
		v, err := tb.ff.call(pollTimeout, map[string]any{"op": "eval", "page": tb.id, "expr": expr})
		var r struct {
			OK bool   `json:"ok"`
			V  string `json:"v"`
		}
		if err == nil {
			err = json.Unmarshal(v, &r)
		}
		switch {
		case err == nil && r.OK:
			return
		case err == nil:
			last = "value " + r.V
		default:
			last = "error " + err.Error()
			select {
			case <-tb.ff.exited:
				tb.fatalf("%s: waiting for %s: the browser is gone: %v", tb.name, what, err)
			default:
			}
		}
		if time.Now().After(end) {
			tb.fatalf("%s: timed out after %v waiting for %s\n  condition: %s\n  last: %.300s", tb.name, timeout, what, cond, last)
		}
		time.Sleep(waitInterval)
	}
}

func (tb *ffTab) shot(name string) string {
	tb.t.Helper()
	path, err := tb.takeShot(name, callTimeout)
	if err != nil {
		tb.fatalf("%s: screenshot %s: %v", tb.name, name, err)
	}
	tb.t.Logf("screenshot: %s", path)
	return path
}

func (tb *ffTab) takeShot(name string, timeout time.Duration) (string, error) {
	dir, err := artifactsDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	_, err = tb.ff.call(timeout, map[string]any{"op": "screenshot", "page": tb.id, "path": path})
	return path, err
}

// download presses sel and waits for the file the browser saves into its
// downloads folder (a new name there, no .part file left): Firefox names
// it as the page's <a download> says.
func (tb *ffTab) download(sel string) (string, []byte) {
	tb.t.Helper()
	before := map[string]bool{}
	entries, _ := os.ReadDir(tb.ff.downloads)
	for _, e := range entries {
		before[e.Name()] = true
	}
	tb.click(sel)
	end := time.Now().Add(20 * time.Second)
	for {
		entries, err := os.ReadDir(tb.ff.downloads)
		if err != nil {
			tb.fatalf("%s: the downloads folder: %v", tb.name, err)
		}
		var fresh []string
		partial := false
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".part") {
				partial = true
			} else if !before[e.Name()] {
				fresh = append(fresh, e.Name())
			}
		}
		if len(fresh) > 1 {
			tb.fatalf("%s: pressing %s saved %d files: %q", tb.name, sel, len(fresh), fresh)
		}
		if len(fresh) == 1 && !partial {
			b, err := os.ReadFile(filepath.Join(tb.ff.downloads, fresh[0]))
			if err != nil {
				tb.fatalf("%s: the download of %s: %v", tb.name, sel, err)
			}
			if len(b) > 0 {
				return fresh[0], b
			}
		}
		if time.Now().After(end) {
			tb.fatalf("%s: no download finished 20 s after pressing %s (files: %q)", tb.name, sel, fresh)
		}
		time.Sleep(waitInterval)
	}
}

// dump describes the page for a failure message, as tab.dump does.
func (tb *ffTab) dump() string {
	var sb strings.Builder
	loc, text := "(not read)", "(not read: the tab does not answer)"
	if v, err := tb.ff.call(dumpTimeout, map[string]any{"op": "eval", "page": tb.id,
		"expr": "[location.href, document.body ? document.body.innerText : '(no body)']"}); err == nil {
		var r []string
		if json.Unmarshal(v, &r) == nil && len(r) == 2 {
			loc, text = r[0], r[1]
		}
	} else {
		loc = "(location: " + err.Error() + ")"
	}
	fmt.Fprintf(&sb, "--- firefox %s at %s\n", tb.name, loc)
	if len(text) > 4000 {
		text = text[:4000] + "\n[... cut]"
	}
	fmt.Fprintf(&sb, "--- page text:\n%s\n", text)
	tb.mu.Lock()
	lines := append([]string(nil), tb.console...)
	tb.mu.Unlock()
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

// fatalf fails the test with the message (after "firefox: ") and a dump.
func (tb *ffTab) fatalf(format string, args ...any) {
	tb.t.Helper()
	tb.mu.Lock()
	tb.dumped = true
	tb.mu.Unlock()
	tb.t.Fatalf("firefox: "+format+"\n%s", append(args, tb.dump())...)
}
