package e2e

import (
	"context"
	"fmt"
	"github.com/hyfed/hyfed/shared/protocol"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hyfed/hyfed/server"
)

// The pages under the server's security headers (docs/security.md): no
// inline script, tokens in fragments and bearer headers, refusals that say
// which link is needed, the organizer's actions, an event stream that
// recovers.

// page401 is the browser's log line for an API call the test has the
// server refuse (fetch errors are logged even when the page handles them).
const page401 = `status of 401`

// TestPagesUnderCSP: every page comes with the contract's security headers,
// and each loads in Chromium, does its work (the join page's WebAssembly
// participant starts in its worker) and logs no console error and no CSP
// violation. An inline script added to a page, and a data: script loaded in
// the participant's worker, are refused and reported: the checks can fail.
func TestPagesUnderCSP(t *testing.T) {
	ts := startServer(t)
	name := "e2e: CSP"
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: name, Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}})
	pages := cspPages(ts, name, link, fed)

	// The headers, on the pages and on the worker's script (a worker's CSP
	// is its own response's).
	for _, p := range append(pages, cspPage{"worker", "/static/worker.js", ""}) {
		path, _, _ := strings.Cut(p.path, "#")
		h := headersOf(t, ts.URL+path)
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "connect-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s (%s): Content-Security-Policy %q lacks %q", p.name, path, csp, want)
			}
		}
		if script, _, _ := strings.Cut(csp[strings.Index(csp, "script-src"):], ";"); strings.Contains(script, "unsafe-inline") {
			t.Errorf("%s: the CSP allows inline scripts: %q", p.name, script)
		}
		for k, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
			if got := h.Get(k); got != want {
				t.Errorf("%s (%s): %s is %q, want %q", p.name, path, k, got, want)
			}
		}
	}

	b := newBrowser(t)
	tb := newTab(t, b)
	for _, p := range pages {
		tb.navigate("about:blank") // a fresh load even when only the fragment differs
		tb.navigate(ts.URL + p.path)
		tb.waitJS(p.name+" to do its work", p.ready, joinTimeout)
		if problems := tb.takeProblems(); len(problems) > 0 {
			tb.fatalf("%s: console errors or CSP violations:\n  %s", p.name, strings.Join(problems, "\n  "))
		}
		if p.name == "join" {
			workerViolationIsCaught(t, b, tb)
		}
	}

	// The control: an inline script is refused and reported.
	evalJS[bool](tb, `(() => { const s = document.createElement('script'); s.textContent = 'window.__e2eInlineRan = true'; document.body.appendChild(s); return true })()`)
	var seen []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !hasCSPViolation(seen); time.Sleep(waitInterval) {
		seen = append(seen, tb.takeProblems()...)
	}
	if !hasCSPViolation(seen) {
		tb.fatalf("an inline script added to the page was not reported as a CSP violation (seen: %q)", seen)
	}
	if evalJS[bool](tb, "window.__e2eInlineRan === true") {
		tb.fatalf("an inline script ran: the page has no CSP")
	}
	t.Logf("the inline script was refused: %s", seen[0])
}

// cspPage is a page TestPagesUnderCSP loads: its path (from the server's
// root) and a JavaScript condition that holds once it has done its work.
type cspPage struct{ name, path, ready string }

// cspPages lists every page, for the federation fed (named name, join link
// link): index, create page, join page, dashboard as viewer and as admin,
// privacy view.
func cspPages(ts *testServer, name, link string, fed *server.CreateResponse) []cspPage {
	byName := fmt.Sprintf("document.getElementById('title')?.textContent.trim() === %s", jsString(name))
	return []cspPage{
		{"index", "/#create=" + createToken, fmt.Sprintf("document.querySelector(%s) !== null", jsString("#feds a[href^='/federations/"+fed.ID+"']"))},
		{"new", "/new#create=" + createToken, "document.getElementById('token-label')?.offsetParent === null"},
		{"join", strings.TrimPrefix(link, ts.URL), fmt.Sprintf("document.body.dataset.ready === '1' && document.getElementById('fed').textContent.startsWith(%s)", jsString(name))},
		{"dashboard (viewer)", fed.DashboardPath, byName + " && document.getElementById('admin-box').hidden && document.getElementById('conn').dataset.state === 'open'"},
		{"dashboard (admin)", fed.AdminPath, byName + " && !document.getElementById('admin-box').hidden && !document.getElementById('act-start').disabled"},
		{"privacy", "/federations/" + fed.ID + "/privacy#viewer=" + fed.ViewerToken, byName},
	}
}

// workerViolationIsCaught: the participant's worker runs under the CSP of
// its own script's response, and what it logs reaches its page's console:
// a script from a data: URL, loaded in the worker, is refused there and
// reported in the page's tab.
func workerViolationIsCaught(t *testing.T, b *browser, page *tab) {
	t.Helper()
	infos, err := chromedp.Targets(page.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id target.ID
	for _, i := range infos {
		if i.Type == "worker" && strings.HasSuffix(i.URL, "/static/worker.js") {
			id = i.TargetID
		}
	}
	if id == "" {
		page.fatalf("no worker target for /static/worker.js")
	}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(id))
	defer cancel()
	call, stop := context.WithTimeout(ctx, callTimeout)
	defer stop()
	got, err := chromedp.Run(call, chromedp.Evaluate[string](`(() => { try { importScripts('data:text/javascript,self.__e2eRan = 1'); return 'ran'; } catch (e) { return String(e); } })()`))
	if err != nil || got == "ran" {
		page.fatalf("the worker ran a data: script (%q, %v): it has no CSP", got, err)
	}
	var seen []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !containsAny(seen, "[worker]"); time.Sleep(waitInterval) {
		seen = append(seen, page.takeProblems()...)
	}
	if !containsAny(seen, "[worker]") {
		page.fatalf("the worker's CSP violation did not reach its page's console (seen: %q)", seen)
	}
	t.Logf("the worker refused a data: script: %.160s", seen[0])
}

func containsAny(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func hasCSPViolation(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "CSP violation: script-src") {
			return true
		}
	}
	return false
}

// headersOf GETs url and returns the response's headers.
func headersOf(t *testing.T, url string) http.Header {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return resp.Header
}

// TestRefusedTokensSayWhatIsNeeded: a page whose link lacks its token or
// carries a wrong one says which link it needs, never a blank page. A join
// link of the old shape (?invite=…#<secret>) still works, and the page
// moves its invitation out of the query string.
func TestRefusedTokensSayWhatIsNeeded(t *testing.T) {
	ts := startServer(t)
	name := "e2e: refused tokens"
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: name, Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}})
	_, secret, ok := strings.Cut(link, "&secret=")
	if !ok {
		t.Fatalf("join link %s has no &secret=", link)
	}
	dash := "/federations/" + fed.ID
	shown := func(id, text string) string {
		return fmt.Sprintf("(e => e && !e.hidden && getComputedStyle(e).display !== 'none' && e.textContent.includes(%s))(document.getElementById(%s))", jsString(text), jsString(id))
	}
	b := newBrowser(t)
	tb := newTab(t, b)
	tb.allowConsole(page401)
	for _, c := range []struct{ what, path, cond string }{
		{"dashboard without a token", dash, shown("error", "#viewer=")},
		{"dashboard with a wrong viewer token", dash + "#viewer=wrong", shown("error", "#viewer=") + " && document.getElementById('conn').dataset.state === 'closed'"},
		{"dashboard with a wrong admin token", dash + "#admin=wrong", shown("error", "refused")},
		{"privacy view without a token", dash + "/privacy", shown("error", "join page")},
		{"index with a wrong create token", "/#create=wrong", shown("feds-how", "create token") + " && !document.querySelector('#feds a[href^=\"/federations/\"]')"},
		{"join link with a wrong invitation", "/join/" + fed.ID + "#invite=wrong&secret=" + secret,
			shown("error", "invitation") + " && document.getElementById('error').dataset.code === 'bad-token'"},
	} {
		tb.navigate("about:blank")
		tb.navigate(ts.URL + c.path)
		tb.waitJS("the message of the "+c.what, c.cond, 15*time.Second)
		t.Logf("%s: %q", c.what, firstNonEmpty(tb, "#error", "#feds-how"))
	}

	// The create page without its token: the form says where to get it.
	tb.navigate("about:blank")
	tb.navigate(ts.URL + "/new")
	if evalJS[bool](tb, "document.getElementById('token-label').offsetParent === null") {
		tb.fatalf("the create page without #create= hides the token field")
	}
	tb.do("create", chromedp.Click("#create"))
	tb.waitJS("the create page's message", shown("form-error", "create token"), 10*time.Second)

	// An old join link: its invitation still reads the federation, and
	// leaves the address bar for the fragment.
	old := ts.URL + "/join/" + fed.ID + "?invite=" + fed.InviteToken + "#" + secret
	tb.navigate("about:blank")
	tb.navigate(old)
	tb.waitJS("the old link's federation", fmt.Sprintf("document.getElementById('fed').textContent.startsWith(%s)", jsString(name)), 15*time.Second)
	if got, want := evalJS[string](tb, "location.search + location.hash"), "#invite="+fed.InviteToken+"&secret="+secret; got != want {
		tb.fatalf("the old link became %q, want %q", got, want)
	}
	if shownErr := evalJS[bool](tb, shown("error", "")); shownErr {
		tb.fatalf("the old link shows an error: %q", tb.text("#error"))
	}
}

func firstNonEmpty(tb *tab, sels ...string) string {
	for _, s := range sels {
		if tb.exists(s) {
			if v := tb.text(s); v != "" {
				return v
			}
		}
	}
	return ""
}

// TestDashboardAdmin: the viewer link shows no actions; the admin link
// starts, pauses, resumes and stops a federation (one native participant,
// manual start) and deletes it after asking on the page; the viewer's page,
// still open, then says that the federation is gone.
func TestDashboardAdmin(t *testing.T) {
	blocks := loadBlocks(t, "synthetic:300,12", "horizontal:1")
	ts := startServer(t)
	name := "e2e: organizer"
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: name, ManualStart: true, RoundTimeout: server.Duration(30 * time.Second), Config: protocol.Config{Lambda: 1e-3, Rounds: 100000, Tol: protocol.NoTol, IIC: 0.2, Clients: 1, NumFeatures: blocks[0].NumFeatures}})
	startNative(t, link, blocks) // stopped, and so refused, at the end: not waited for
	waitStatus(t, ts.URL, fed.ID, "the participant to register", 30*time.Second, func(s server.Status) bool { return len(s.Participants) == 1 })

	b := newBrowser(t)
	view := newTab(t, b)
	view.allowConsole(`status of 404`) // its federation, deleted at the end
	view.navigate(ts.URL + fed.DashboardPath)
	view.waitJS("the viewer's dashboard", fmt.Sprintf("document.getElementById('title')?.textContent.trim() === %s", jsString(name)), 10*time.Second)
	if evalJS[bool](view, "!document.getElementById('admin-box').hidden || !document.getElementById('fill-box').hidden") {
		view.fatalf("the viewer link shows the organizer's actions")
	}

	tb := newTab(t, b)
	tb.allowConsole(`status of 404`) // the deleted federation's stream, if asked again before the page closes it
	tb.navigate(ts.URL + fed.AdminPath)
	state := func(states ...string) string {
		return fmt.Sprintf("%s.includes(document.getElementById('state').textContent.trim())", jsString(strings.Join(states, ",")))
	}
	tb.waitJS("the admin buttons", "!document.getElementById('admin-box').hidden && "+state("waiting"), 10*time.Second)
	for _, step := range []struct {
		button string
		want   []string // the states that may follow
	}{
		{"start", []string{"running"}},
		{"pause", []string{"paused", "pausing"}},
		{"resume", []string{"running", "resuming"}},
		{"stop", []string{"stopped"}},
	} {
		sel := "#act-" + step.button
		tb.waitJS(sel+" to be enabled", fmt.Sprintf("!document.querySelector(%s).disabled", jsString(sel)), 15*time.Second)
		tb.do("press "+step.button, chromedp.Click(sel))
		tb.waitJS("the state after "+step.button, state(step.want...), 15*time.Second)
		st := fedStatus(t, ts.URL, fed.ID)
		t.Logf("after %s: the page says %s, the API %s at round %d", step.button, tb.text("#state"), st.State, st.Round)
	}
	// The page asks before it deletes; Cancel keeps the federation.
	tb.do("press delete", chromedp.Click("#act-delete"))
	tb.waitJS("the question", "!document.getElementById('delete-confirm').hidden", 5*time.Second)
	tb.do("cancel", chromedp.Click("#delete-no"))
	fedStatus(t, ts.URL, fed.ID)
	tb.do("press delete", chromedp.Click("#act-delete"))
	tb.do("confirm", chromedp.Click("#delete-yes"))
	tb.waitJS("the deletion", "document.getElementById('admin-result').textContent.includes('deleted')", 10*time.Second)
	if c := tb.text("#conn"); c != "" {
		tb.fatalf("after the deletion the page says %q about its event stream", c)
	}
	if code := callAPI(t, "GET", ts.URL+"/api/federations/"+fed.ID, fed.AdminToken, nil, nil); code != http.StatusNotFound {
		t.Fatalf("after the deletion the status answers HTTP %d, want 404", code)
	}
	// The viewer's page, left open, loses its stream and says why.
	view.waitJS("the viewer's page to say the federation is gone", "document.getElementById('error').textContent.startsWith('No federation')", 15*time.Second)
	screenshot(t, tb, "dashboard-admin-deleted.png")
}

// TestEventStreamReconnects: when the server cuts the dashboard's event
// stream, the page says it is reconnecting, then opens a new stream with
// its token (a stream without it would be refused) and is live again.
func TestEventStreamReconnects(t *testing.T) {
	ts := startServer(t)
	name := "e2e: reconnect"
	_, fed := createFederation(t, ts.URL, server.CreateRequest{Name: name, Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}})
	b := newBrowser(t)
	tb := newTab(t, b)
	tb.navigate(ts.URL + fed.DashboardPath)
	open := "document.getElementById('conn').dataset.state === 'open'"
	tb.waitJS("the stream to open", open, 10*time.Second)
	evalJS[bool](tb, `(() => { const c = document.getElementById('conn'); window.__e2eStates = [];
	  new MutationObserver(() => window.__e2eStates.push(c.dataset.state + ': ' + c.textContent)).observe(c, {attributes: true, childList: true, subtree: true});
	  return true })()`)
	if n := ts.CutStreams(); n != 1 {
		t.Fatalf("cut %d event streams, want the dashboard's 1", n)
	}
	tb.waitJS("the page to say it reconnects", "window.__e2eStates.some(s => s.startsWith('reconnecting: reconnecting'))", 10*time.Second)
	tb.waitJS("the stream to open again", open, 15*time.Second)
	if n := ts.CutStreams(); n != 1 {
		t.Fatalf("after reconnecting the server serves %d event streams, want 1", n)
	}
	tb.waitJS("the second reconnection", "window.__e2eStates.filter(s => s.startsWith('open')).length >= 2", 15*time.Second)
	t.Logf("the page's connection states: %v", evalJS[[]string](tb, "window.__e2eStates"))
	if got := tb.text("#title"); got != name {
		tb.fatalf("#title is %q after reconnecting", got)
	}
}
