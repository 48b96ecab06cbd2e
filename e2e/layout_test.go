package e2e

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hyfed/hyfed/server"
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
