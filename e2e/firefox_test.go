package e2e

import (
	"github.com/hyfed/hyfed/shared/protocol"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
)

// The flows in Firefox (firefox-esr through puppeteer-core, WebDriver
// BiDi; firefox_harness_test.go): the same code as their Chromium tests.

// TestDemoNewcomerFirefox is make run's flow in Firefox (demoNewcomer):
// demo block, join, fill the free seats, finish, download the model
// (hyfed predict and liblinear-predict check it), privacy view.
func TestDemoNewcomerFirefox(t *testing.T) {
	demoNewcomer(t, newFirefox)
}

// TestLayoutPhoneAndDesktopFirefox is layoutPhoneAndDesktop in Firefox:
// join, dashboard and privacy view at 390 and 1280 px, nothing overflows.
func TestLayoutPhoneAndDesktopFirefox(t *testing.T) {
	layoutPhoneAndDesktop(t, newFirefox)
}

// TestPagesUnderCSPFirefox is TestPagesUnderCSP's browser part in
// Firefox: every page (index, create page, join page with its wasm
// participant, dashboard as viewer and as admin, privacy view) loads and
// does its work without a console error, an exception, an HTTP error or a
// CSP violation. Then the control: the harness records each of those (a
// console error, an uncaught exception, a 404, an inline script the CSP
// refuses, which does not run), so the checks can fail.
func TestPagesUnderCSPFirefox(t *testing.T) {
	ts := startServer(t)
	name := "e2e: CSP in Firefox"
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: name, Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}})
	tb := newFirefox(t).newPage().(*ffTab)
	for _, p := range cspPages(ts, name, link, fed) {
		tb.navigate("about:blank") // a fresh load even when only the fragment differs
		tb.navigate(ts.URL + p.path)
		tb.waitJS(p.name+" to do its work", p.ready, joinTimeout)
		if problems := tb.takeProblems(); len(problems) > 0 {
			tb.fatalf("%s: console errors, exceptions, HTTP errors or CSP violations:\n  %s", p.name, strings.Join(problems, "\n  "))
		}
	}

	pageEval[bool](tb, `(() => {
  console.error('e2e probe: a console error');
  setTimeout(() => { throw new Error('e2e probe: an exception'); }, 0);
  fetch('/e2e-probe-missing');
  const s = document.createElement('script'); s.textContent = 'window.__e2eInlineRan = true'; document.body.appendChild(s);
  return true;
})()`)
	want := []string{`error: e2e probe: a console error`, `exception: .*e2e probe: an exception`,
		`error: HTTP 404 for ` + regexp.QuoteMeta(ts.URL+"/e2e-probe-missing"), `CSP violation: script-src`}
	end := time.Now().Add(10 * time.Second)
	var got []string
	for {
		got = append(got, tb.takeProblems()...)
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool {
			return slices.ContainsFunc(got, regexp.MustCompile(w).MatchString)
		})
		if len(missing) == 0 {
			break
		}
		if time.Now().After(end) {
			tb.fatalf("the harness did not record %q; it recorded %q", missing, got)
		}
		time.Sleep(waitInterval)
	}
	if pageEval[bool](tb, "window.__e2eInlineRan === true") {
		tb.fatalf("an inline script ran under the server's CSP")
	}
	t.Logf("firefox: the control's problems were recorded:\n  %s", strings.Join(got, "\n  "))
}
