package e2e

import (
	"fmt"
	"github.com/hyfed/hyfed/shared/protocol"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/demo"
	"github.com/hyfed/hyfed/shared/session"
)

// TestJoinPageOneFileControl: the join page has one file control, the
// "choose a file" button (two controls that did the same, "choose it" and
// the input's own "Browse...", confused); it opens the hidden input's picker.
func TestJoinPageOneFileControl(t *testing.T) {
	ts := startServer(t)
	link, _ := createFederation(t, ts.URL, server.CreateRequest{Config: protocol.Config{Lambda: 1e-3, Rounds: 5, IIC: 0.2, Clients: 4}})
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
	tb.click("#choose")
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

// TestLayoutPhoneAndDesktop is layoutPhoneAndDesktop in Chromium;
// TestLayoutPhoneAndDesktopFirefox (firefox_test.go) is the same in Firefox.
func TestLayoutPhoneAndDesktop(t *testing.T) {
	layoutPhoneAndDesktop(t, newChromium)
}

// layoutPhoneAndDesktop, in the engine start makes: the join page (with a
// demo block's summary and after training), the dashboard (after
// training, charts drawn; the organizer's, with the viewer link to share)
// and the privacy view (opened from the join page) of a curious server's
// federation at 390x844 (a phone; Chromium emulates one, Firefox only
// takes its size) and 1280x900: nothing overflows the viewport
// horizontally; on the phone the data picker and the Join button are on
// the first screen, before the explanation, and once the tab joined its
// progress is right below the Join button, on the first screen; the
// privacy view stays short (its rows beside the server's in a grid,
// participants closed); the curious server's table keeps its key columns
// in view; the finished join page names the model's accuracy apart from
// the last round's. Screenshots layout-<engine>-{join,dashboard,privacy}-{390,1280}.png
// and layout-<engine>-join-390-start.png.
func layoutPhoneAndDesktop(t *testing.T, start func(testing.TB) engine) {
	const rounds = 3
	d, err := demo.Load("mnist", "quadrants:1")
	if err != nil {
		requireOr(t, "%v", err)
	}
	seats := session.NewSeats(t.Context(), nil)
	ts := startServer(t, func(o *server.Options) { o.Demo = seats; o.Curious = true })
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: "layout", Demo: true, RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Lambda: 1e-3, Rounds: rounds, IIC: 0.2, Clients: len(d.Files), Schema: d.Schema}})
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := seats.Add(fed.ID, l, d.Schema, d.Files); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(seats.Wait)

	e := start(t)
	eng := e.name()
	tb := e.newPage()
	tb.viewport(390, 844, true)
	tb.navigate(link)
	tb.waitJS("the demo blocks", "!document.getElementById('demo').hidden && document.getElementById('demo-block').options.length === 4", 20*time.Second)
	tb.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
	// The first screen: the picker and the Join button, above "What will happen".
	first := pageEval[map[string]float64](tb, `(() => {
  const top = (s) => document.querySelector(s).getBoundingClientRect().top, bottom = (s) => document.querySelector(s).getBoundingClientRect().bottom;
  const what = [...document.querySelectorAll('section.card h2')].find((h) => h.textContent === 'What will happen');
  return {choose: bottom('#choose'), demo: bottom('#demo-load'), join: bottom('#join'), data: top('#data-card'), what: what.getBoundingClientRect().top, screen: window.innerHeight};
})()`)
	if !(first["choose"] <= first["screen"] && first["demo"] <= first["screen"] && first["join"] <= first["screen"] && first["data"] < first["what"]) {
		tb.fatalf("on a phone the picker and the Join button are not first on the join page: %v", first)
	}
	tb.shot("layout-" + eng + "-join-390-start.png")
	checkNoOverflow(tb, "the join page at 390 px")
	// The check sees an overflow when there is one.
	if out := pageEval[[]string](tb, `(() => { const d = document.createElement('div'); d.id = 'too-wide'; d.style.width = '500px'; document.querySelector('main').appendChild(d);
  const out = `+overflowJS+`; d.remove(); return out; })()`); len(out) == 0 || !strings.Contains(strings.Join(out, " "), "#too-wide") {
		tb.fatalf("a 500 px element at 390 px: the overflow check found %q", out)
	}
	pageEval[bool](tb, "(document.getElementById('demo-block').value = '1', true)")
	tb.click("#demo-load")
	tb.waitJS("the summary of demo block 1", "!document.getElementById('summary').hidden", 20*time.Second)
	checkNoOverflow(tb, "the join page with a summary at 390 px")
	tb.click("#join")
	tb.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
	checkProgressNearJoin(tb, "after joining")

	// The organizer's link from the create page carries the viewer token:
	// its dashboard shows the viewer link to share.
	adminLink := ts.URL + fed.AdminPath + "&viewer=" + fed.ViewerToken
	dash := e.newPage()
	dash.navigate(adminLink)
	if got, want := pageEval[string](dash, "document.getElementById('viewer-box').hidden ? '' : document.getElementById('viewer-url').value"), ts.URL+fed.DashboardPath; got != want {
		dash.fatalf("the organizer's dashboard shows the viewer link %q, want %q", got, want)
	}
	dash.waitJS("the fill button", "!document.getElementById('fill-box').hidden && !document.getElementById('fill').disabled", 10*time.Second)
	dash.click("#fill")
	tb.waitJS("training to finish in the tab", "document.body.dataset.done === '1'", 2*time.Minute)
	dash.waitJS("the loss chart", fmt.Sprintf("Number(document.getElementById('chart-loss').dataset.points) === %d", rounds+1), 20*time.Second)
	priv := e.popup(tb, "#privacy-link")
	priv.waitJS("the privacy view's two sides", "document.getElementById('parts').textContent.includes('BGV ciphertext') && document.querySelectorAll('#preview canvas').length > 0", 15*time.Second)
	priv.waitJS("the curious server's reconstructions beside the tab's rows", "document.querySelectorAll('#attack-pairs figure').length === 16", 30*time.Second)
	dash.waitJS("the curious server's table", "document.querySelectorAll('#attack-rows tr[data-client]').length === 4", 15*time.Second)
	// The finished join page: the model's accuracy (its round) apart from the last round's.
	tb.waitJS("the model's accuracy on the finished join page", "/^round \\d+ .*held-out accuracy [0-9.]+ %$/.test(document.getElementById('model-line').textContent) && document.getElementById('acc-label').textContent === 'held-out accuracy, last round'", 15*time.Second)

	charts := fmt.Sprintf("Number(document.getElementById('chart-loss').dataset.points) === %d", rounds+1)
	for _, size := range []struct{ w, h int }{{390, 844}, {1280, 900}} {
		for _, p := range []struct {
			page        page
			name, ready string
		}{
			{tb, "join", "document.body.dataset.done === '1' && !document.getElementById('summary').hidden"},
			{dash, "dashboard", charts},
			{priv, "privacy", "document.querySelectorAll('#preview canvas').length > 0"},
		} {
			p.page.viewport(size.w, size.h, size.w < 500)
			time.Sleep(400 * time.Millisecond) // the charts follow a resize after 100 ms
			p.page.waitJS("the "+p.name+" at "+fmt.Sprint(size.w)+" px (still whole: the resize did not reload it)", p.ready, 5*time.Second)
			checkNoOverflow(p.page, fmt.Sprintf("the %s after training at %d px", p.name, size.w))
			p.page.shot(fmt.Sprintf("layout-%s-%s-%d.png", eng, p.name, size.w))
		}
		if size.w < 500 {
			checkProgressNearJoin(tb, "after training")
			// The privacy view was 10,582 px tall on a phone (one pair of
			// pictures a row, every participant open).
			if h := pageEval[float64](priv, "document.documentElement.scrollHeight"); h > privacyPhoneMax {
				priv.fatalf("the privacy view is %.0f px tall at 390 px, want at most %d", h, privacyPhoneMax)
			}
			// The curious server's key columns (participant, attack, rows
			// determined) are in view; the rest scroll within the table's box.
			keys := pageEval[[]float64](dash, "[...document.querySelectorAll('#attack-table thead th')].slice(0, 3).map((h) => h.getBoundingClientRect().right)")
			if len(keys) != 3 || keys[2] > float64(size.w) {
				dash.fatalf("the curious server's key columns end at %v px, past the %d px screen", keys, size.w)
			}
		}
		// A fresh load at this size too (the charts drawn at it).
		dash.navigate(adminLink)
		dash.waitJS("the loss chart", charts, 20*time.Second)
		checkNoOverflow(dash, fmt.Sprintf("the dashboard loaded at %d px", size.w))
	}
}

// privacyPhoneMax bounds the privacy view's height on a phone (5,100-5,300
// px measured; 10,582 before its pairs went into a grid).
const privacyPhoneMax = 6000

// checkProgressNearJoin: on a phone, once the tab has joined, its training
// progress starts within 200 px below the Join button and on the first
// screen of the page (it sat 1,650 px below, under the explanation).
func checkProgressNearJoin(p page, when string) {
	at := pageEval[map[string]float64](p, `(() => {
  const join = document.getElementById('join').getBoundingClientRect(), prog = document.getElementById('progress-card').getBoundingClientRect();
  return {join: join.bottom + scrollY, progress: prog.top + scrollY, screen: innerHeight};
})()`)
	if d := at["progress"] - at["join"]; d < 0 || d > 200 || at["progress"] > at["screen"] {
		p.fatalf("%s, on a phone the progress starts at %.0f px, the Join button ends at %.0f px (the screen is %.0f px)", when, at["progress"], at["join"], at["screen"])
	}
}

func checkNoOverflow(p page, what string) {
	if out := pageEval[[]string](p, overflowJS); len(out) > 0 {
		p.fatalf("%s overflows the viewport horizontally:\n  %s", what, strings.Join(out, "\n  "))
	}
}
