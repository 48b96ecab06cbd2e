package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// The flows that run in both engines (the newcomer's, the layout's) are
// written against engine and page: Chromium's browser and tab (chromedp,
// this package's harness) and Firefox's (puppeteer-core over WebDriver
// BiDi, firefox_harness_test.go) both implement them. Their failure
// messages start with the engine's name.

// engine is one browser process of either engine.
type engine interface {
	// name is "chromium" or "firefox".
	name() string
	// newPage opens a blank tab of 1280x900 that records its console.
	newPage() page
	// popup presses sel in from, which opens a tab (window.open), and
	// returns that tab, recording its console too.
	popup(from page, sel string) page
}

// page is one tab of an engine; each call fails the test (naming the
// engine, with the page's text and console) if it cannot be done.
type page interface {
	engine() string
	navigate(url string)
	waitJS(what, cond string, timeout time.Duration)
	// evalInto evaluates a JavaScript expression (a promise is awaited)
	// and decodes its value into out.
	evalInto(expr string, out any)
	text(sel string) string
	click(sel string)
	// upload picks the file at path in the file input sel, as a user does
	// (the input's change event follows).
	upload(sel, path string)
	// viewport sets the tab's size; mobile emulates a phone where the
	// engine can (Chromium: mobile and touch; Firefox: the size only).
	viewport(w, h int, mobile bool)
	// shot saves a full-page PNG as name in the artifacts folder and
	// returns its path.
	shot(name string) string
	// download presses sel, whose page saves a file, and returns the name
	// the browser saved it under and its bytes.
	download(sel string) (name string, body []byte)
	fatalf(format string, args ...any)
}

// pageEval evaluates expr in p (a promise is awaited) and returns its
// value decoded as T.
func pageEval[T any](p page, expr string) T {
	var v T
	p.evalInto(expr, &v)
	return v
}

// failf fails the test with a message that names p's engine, without a
// dump of the page (for checks on what the page gave, not on the page).
func failf(t testing.TB, p page, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: "+format, append([]any{p.engine()}, args...)...)
}

// ---- chromium --------------------------------------------------------------

type chromiumEngine struct {
	t testing.TB
	b *browser
}

// newChromium starts a chromium for the test (newBrowser) as an engine.
func newChromium(t testing.TB) engine {
	t.Helper()
	return &chromiumEngine{t: t, b: newBrowser(t)}
}

func (c *chromiumEngine) name() string  { return "chromium" }
func (c *chromiumEngine) newPage() page { return newTab(c.t, c.b) }

func (c *chromiumEngine) popup(from page, sel string) page {
	c.t.Helper()
	return openTab(c.t, c.b, from.(*tab), sel)
}

// openTab presses sel in the tab from, which opens a new tab (window.open),
// and attaches to that tab. The press is the element's own click, as a user
// gesture: a mouse click at its coordinates misses when the page's layout
// moves between reading them and clicking (a finishing federation's page).
func openTab(t testing.TB, b *browser, from *tab, sel string) *tab {
	t.Helper()
	opened := chromedp.WaitNewTarget(from.ctx, func(i *target.Info) bool { return i.Type == "page" })
	js := fmt.Sprintf("(() => { const e = document.querySelector(%q); if (!e || e.hidden) return false; e.click(); return true; })()", sel)
	from.do("wait for "+sel, chromedp.WaitVisible(sel))
	gesture := func(p *runtime.EvaluateParams) { yes := true; p.UserGesture = &yes }
	ctx, cancel := context.WithTimeout(from.ctx, callTimeout)
	pressed, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js, gesture))
	cancel()
	if err != nil {
		from.fatalf("%s: press %s: %v", from.name, sel, err)
	}
	if !pressed {
		from.fatalf("%s: %s is not on the page to press", from.name, sel)
	}
	select {
	case id, ok := <-opened:
		if !ok {
			from.fatalf("%s: pressing %s opened no tab", from.name, sel)
		}
		return attachTab(t, b, chromedp.WithTargetID(id))
	case <-time.After(startLimit):
		from.fatalf("%s: no tab opened %v after pressing %s", from.name, startLimit, sel)
	}
	return nil
}

func (tb *tab) engine() string { return "chromium" }

func (tb *tab) evalInto(expr string, out any) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, callTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.fatalf("%s: evaluating %s: %v", tb.name, expr, err)
	}
	if len(v) == 0 {
		v = json.RawMessage("null") // undefined
	}
	if err := json.Unmarshal(v, out); err != nil {
		tb.fatalf("%s: evaluating %s: the value %.200s: %v", tb.name, expr, v, err)
	}
}

func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do("press "+sel, chromedp.Click(sel))
}

func (tb *tab) upload(sel, path string) {
	tb.t.Helper()
	tb.do("upload "+path, chromedp.SetUploadFiles(sel, []string{path}))
}

func (tb *tab) viewport(w, h int, mobile bool) {
	tb.t.Helper()
	var opts []chromedp.EmulateViewportOption
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	tb.do(fmt.Sprintf("viewport %dx%d", w, h), chromedp.EmulateViewport(int64(w), int64(h), opts...))
}

func (tb *tab) shot(name string) string {
	tb.t.Helper()
	return screenshot(tb.t, tb, name)
}

func (tb *tab) download(sel string) (string, []byte) {
	tb.t.Helper()
	return pageDownload(tb, tb.t.TempDir(), sel)
}
