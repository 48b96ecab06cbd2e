package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/session"
)

// TestJoinPageOneFileControl: the join page has one file control, the
// "choose a file" button (issue 17: "choose it" and the input's own
// "Browse..." did the same); it opens the (hidden) file input's picker.
func TestJoinPageOneFileControl(t *testing.T) {
	ts := startServer(t)
	link, _ := createFederation(t, ts.URL, server.CreateRequest{Lambda: 1e-3, Rounds: 5, IIC: 0.2, MinParticipants: 4})
	b := newBrowser(t)
	tb := newTab(t, b)
	tb.navigate(link)
	tb.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
	visible := evalJS[[]string](tb, `[...document.querySelectorAll('input[type=file], label[for=file], #choose')]
  .filter((e) => e.getClientRects().length > 0).map((e) => e.id || e.tagName)`)
	if len(visible) != 1 || visible[0] != "choose" {
		tb.fatalf("visible file controls %q, want only the button #choose", visible)
	}
	// The button opens the input's picker (the click is stopped before a
	// dialog opens).
	evalJS[bool](tb, `(document.getElementById('file').addEventListener('click', (e) => { window.__picker = (window.__picker || 0) + 1; e.preventDefault(); }), true)`)
	tb.do("press choose", chromedp.Click("#choose"))
	tb.waitJS("the file picker to be asked for", "window.__picker === 1", 5*time.Second)
}

// overflowJS lists what sticks out of the viewport horizontally: the
// document's scroll width beyond innerWidth, and the elements whose right
// edge passes it outside a scrolling container (an overflow-x: auto table
// scrolls in its box, which is fine).
const overflowJS = `(() => {
  const w = window.innerWidth, out = [];
  if (document.documentElement.scrollWidth > w) out.push('document: scrollWidth ' + document.documentElement.scrollWidth + ' > ' + w);
  const clipped = (e) => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) { const o = getComputedStyle(p).overflowX; if (o !== 'visible') return true; } return false; };
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && (r.right > w + 0.5 || r.left < -0.5) && !clipped(e)) out.push((e.id ? '#' + e.id : e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ')[0] : '')) + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
  return out.slice(0, 20);
})()`

// TestLayoutPhoneAndDesktop: the join page (with a demo block's summary
// and after training) and the dashboard (after training, charts drawn) at
// 390x844 (a phone) and 1280x900: nothing overflows the viewport
// horizontally; on the phone the data picker and the Join button are on the
// first screen, before the explanation. Screenshots layout-*.png.
func TestLayoutPhoneAndDesktop(t *testing.T) {
	const rounds = 3
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	vals := make([]partition.Block, len(blocks))
	for i, b := range blocks {
		vals[i] = *b
	}
	seats := session.NewSeats(t.Context(), nil)
	ts := startServer(t, func(o *server.Options) { o.Demo = seats })
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: "layout", Demo: true, Lambda: 1e-3, Rounds: rounds, IIC: 0.2,
		MinParticipants: len(blocks), NumFeatures: blocks[0].NumFeatures, RoundTimeout: server.Duration(time.Minute)})
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatal(err)
	}
	seats.Add(fed.ID, l, vals)
	t.Cleanup(seats.Wait)

	b := newBrowser(t)
	tb := newTab(t, b)
	tb.do("a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	tb.navigate(link)
	tb.waitJS("the demo blocks", "!document.getElementById('demo').hidden && document.getElementById('demo-block').options.length === 4", 20*time.Second)
	tb.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
	// The first screen: the picker and the Join button, above "What will happen".
	first := evalJS[map[string]float64](tb, `(() => {
  const top = (s) => document.querySelector(s).getBoundingClientRect().top, bottom = (s) => document.querySelector(s).getBoundingClientRect().bottom;
  const what = [...document.querySelectorAll('section.card h2')].find((h) => h.textContent === 'What will happen');
  return {choose: bottom('#choose'), demo: bottom('#demo-load'), join: bottom('#join'), data: top('#data-card'), what: what.getBoundingClientRect().top, screen: window.innerHeight};
})()`)
	if !(first["choose"] <= first["screen"] && first["demo"] <= first["screen"] && first["join"] <= first["screen"] && first["data"] < first["what"]) {
		tb.fatalf("on a phone the picker and the Join button are not first on the join page: %v", first)
	}
	screenshot(t, tb, "layout-join-390-start.png")
	checkNoOverflow(t, tb, "the join page at 390 px")
	// The check sees an overflow when there is one.
	if out := evalJS[[]string](tb, `(() => { const d = document.createElement('div'); d.id = 'too-wide'; d.style.width = '500px'; document.querySelector('main').appendChild(d);
  const out = `+overflowJS+`; d.remove(); return out; })()`); len(out) == 0 || !strings.Contains(strings.Join(out, " "), "#too-wide") {
		tb.fatalf("a 500 px element at 390 px: the overflow check found %q", out)
	}
	evalJS[bool](tb, "(document.getElementById('demo-block').value = '1', true)")
	tb.do("load demo block 1", chromedp.Click("#demo-load"))
	tb.waitJS("the summary of demo block 1", "!document.getElementById('summary').hidden", 20*time.Second)
	checkNoOverflow(t, tb, "the join page with a summary at 390 px")
	tb.do("press join", chromedp.Click("#join"))
	tb.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)

	dash := newTab(t, b)
	dash.navigate(ts.URL + fed.AdminPath)
	dash.waitJS("the fill button", "!document.getElementById('fill-box').hidden && !document.getElementById('fill').disabled", 10*time.Second)
	dash.do("press fill", chromedp.Click("#fill"))
	tb.waitJS("training to finish in the tab", "document.body.dataset.done === '1'", 2*time.Minute)
	dash.waitJS("the loss chart", fmt.Sprintf("Number(document.getElementById('chart-loss').dataset.points) === %d", rounds+1), 20*time.Second)

	for _, size := range []struct{ w, h int64 }{{390, 844}, {1280, 900}} {
		var opts []chromedp.EmulateViewportOption
		if size.w < 500 {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		for _, p := range []struct {
			tab  *tab
			name string
		}{{tb, "join"}, {dash, "dashboard"}} {
			p.tab.do(fmt.Sprintf("viewport %dx%d", size.w, size.h), chromedp.EmulateViewport(size.w, size.h, opts...))
			time.Sleep(400 * time.Millisecond) // the charts follow a resize after 100 ms
			checkNoOverflow(t, p.tab, fmt.Sprintf("the %s after training at %d px", p.name, size.w))
			screenshot(t, p.tab, fmt.Sprintf("layout-%s-%d.png", p.name, size.w))
		}
		// A fresh load at this size too (the charts drawn at it).
		dash.navigate(ts.URL + fed.AdminPath)
		dash.waitJS("the loss chart", fmt.Sprintf("Number(document.getElementById('chart-loss').dataset.points) === %d", rounds+1), 20*time.Second)
		checkNoOverflow(t, dash, fmt.Sprintf("the dashboard loaded at %d px", size.w))
	}
}

func checkNoOverflow(t *testing.T, tb *tab, what string) {
	t.Helper()
	if out := evalJS[[]string](tb, overflowJS); len(out) > 0 {
		tb.fatalf("%s overflows the viewport horizontally:\n  %s", what, strings.Join(out, "\n  "))
	}
}
