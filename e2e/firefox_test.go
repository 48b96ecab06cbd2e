package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestFirefoxHarnessSeesProblems: the Firefox harness records what fails
// a test (the checks can fail): on the index page, a console error, an
// uncaught exception, an HTTP error (Firefox logs none for a failed fetch;
// the driver reports the response) and an inline script the server's CSP
// refuses (the securitypolicyviolation event) are all problems.
func TestFirefoxHarnessSeesProblems(t *testing.T) {
	ts := startServer(t)
	tb := newFirefox(t).newPage().(*ffTab)
	tb.navigate(ts.URL + "/")
	tb.waitJS("the index page", "document.readyState === 'complete'", 10*time.Second)
	if p := tb.takeProblems(); len(p) > 0 {
		tb.fatalf("the index page alone: %q", p)
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
	t.Logf("firefox: recorded %d problems:\n  %s", len(got), strings.Join(got, "\n  "))
}
