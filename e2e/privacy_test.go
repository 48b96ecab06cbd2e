package e2e

import (
	"fmt"
	"github.com/hyfed/hyfed/shared/protocol"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/demo"
	"github.com/hyfed/hyfed/shared/session"
)

// openPrivacy presses the join page's privacy link, which opens the privacy
// view in a new tab holding a copy of the join tab's session storage (its
// rows and, once joined, its session token), and attaches to that tab.
func openPrivacy(t *testing.T, b *browser, join *tab) *tab {
	t.Helper()
	return openTab(t, b, join, "#privacy-link")
}

// attackError reads the relative error the privacy view shows (NaN while
// it has none) and the round of the reconstruction it is from.
func attackError(tb *tab) (float64, int) {
	tb.t.Helper()
	v := evalJS[[]string](tb, "(e => [e.dataset.error || '', e.dataset.round || ''])(document.getElementById('attack-error'))")
	e, err := strconv.ParseFloat(v[0], 64)
	if err != nil {
		e = -1
	}
	r, err := strconv.Atoi(v[1])
	if err != nil {
		r = -1
	}
	return e, r
}

// TestCuriousServerLive is the privacy demonstration, both modes side by
// side on one server run with --insecure-demo --curious: in each of two
// MNIST quadrants:1 federations, one without encryption and one under
// BGV, a browser tab trains with block 0 and three native participants
// with the others. Each tab's privacy view puts its own rows beside the
// curious server's reconstruction of them: without encryption the error
// falls below 1e-3 as the rounds go by; under BGV the attack reads nothing
// (error 1). The insecure dashboard's table follows the attack live.
func TestCuriousServerLive(t *testing.T) {
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	ts := startServer(t, func(o *server.Options) { o.InsecureDemo, o.Curious = true, true })
	b := newBrowser(t)
	start := time.Now()
	type run struct {
		name, scheme string
		rounds       int
		link         string
		fed          *server.CreateResponse
		join, priv   *tab
		wait         func()
	}
	// The encrypted run first: its rounds are the slow ones. 200 rounds
	// take the insecure attack below 1e-3: in process (shared/curious,
	// seeds 1 to 6) the first 64 rows' training rows come back to 1.2e-5
	// to 1.8e-5, 6e-5 at 150 rounds. 20 rounds show BGV's nothing. IIC
	// 0.05 (H = 113): the attack needs rounds, not samples per round, and
	// every holder's exact group solve costs H^2 a sweep (a browser tab's
	// 200 rounds at the default H = 449 outlast the deadline on 2 cores).
	runs := []*run{{name: "encrypted", scheme: "bgv", rounds: 20}, {name: "insecure", scheme: "plaintext", rounds: 200}}
	var dash *tab // the insecure dashboard, open before training starts
	for _, r := range runs {
		r.link, r.fed = createFederation(t, ts.URL, server.CreateRequest{Name: "e2e: curious server, " + r.name, Scheme: r.scheme, RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Loss: "logistic", Lambda: 1e-3, IIC: 0.05, Rounds: r.rounds, Clients: len(blocks), NumFeatures: blocks[0].NumFeatures}})
		if st := fedStatus(t, ts.URL, r.fed.ID); !st.Curious {
			t.Fatalf("%s: the status does not say that the curious server runs", r.name)
		}
		r.join = joinTab(t, b, r.link, writeBlockFile(t, blocks[0], "block-0.libsvm"), blocks[0].N())
		r.priv = openPrivacy(t, b, r.join)
		r.priv.waitJS("the attack section", "!document.getElementById('attack').hidden", 15*time.Second)
		if r.scheme == "plaintext" {
			dash = newTab(t, b)
			dash.navigate(ts.URL + r.fed.DashboardPath)
		}
		wait := startNative(t, r.link, blocks[1:])
		r.wait = func() { wait() }
		t.Logf("%s: tab and native participants in at %.1fs", r.name, time.Since(start).Seconds())
	}
	enc, ins := runs[0], runs[1]

	// The insecure dashboard, live: the attack's equations grow.
	row0 := "document.querySelector('#attack-table tr[data-client=\"0\"]')"
	dash.waitJS("the attack table", row0+" && Number("+row0+".dataset.equations) > 0", 30*time.Second)
	first := evalJS[int](dash, "Number("+row0+".dataset.equations)")
	dash.waitJS("the attack table to move", fmt.Sprintf("Number(%s.dataset.equations) > %d", row0, first), 30*time.Second)

	// The insecure privacy view, live: the error falls as the rounds go by.
	ins.priv.waitJS("a first reconstruction", "(e => e.dataset.round !== '' && Number(e.dataset.error) < 1)(document.getElementById('attack-error'))", 30*time.Second)
	early, earlyRound := attackError(ins.priv)

	for _, r := range runs {
		r.join.waitJS("training to finish", "document.body.dataset.done === '1'", 150*time.Second)
		r.wait()
		t.Logf("%s: %d rounds done at %.1fs", r.name, r.rounds, time.Since(start).Seconds())
	}
	for _, r := range runs {
		r.priv.waitJS("the reconstruction of the last round", fmt.Sprintf("Number(document.getElementById('attack-error').dataset.round) >= %d", r.rounds), 30*time.Second)
	}
	final, _ := attackError(ins.priv)
	sealed, _ := attackError(enc.priv)
	t.Logf("insecure: the tab's rows recovered to %.3g at round %d, %.3g at round %d (%s; least recovered: %s); encrypted: %.3g (%s)", early, earlyRound,
		final, ins.rounds, ins.priv.text("#attack-status"), evalJS[string](ins.priv, "document.getElementById('attack-error').dataset.worst"),
		sealed, enc.priv.text("#attack-status"))
	if final >= 1e-3 || final < 0 {
		ins.priv.fatalf("insecure: the privacy view shows error %.3g after %d rounds, want < 1e-3", final, ins.rounds)
	}
	if !(early > final) {
		ins.priv.fatalf("insecure: the error did not fall: %.3g at round %d, %.3g at the end", early, earlyRound, final)
	}
	if n := evalJS[int](ins.priv, "document.querySelectorAll('#attack-pairs figure.pair canvas').length"); n != 32 {
		ins.priv.fatalf("insecure: %d images of rows, want 16 pairs", n)
	}
	if sealed <= 0.5 {
		enc.priv.fatalf("encrypted: the privacy view shows error %.3g, want > 0.5 (the attack reads nothing)", sealed)
	}
	if note := enc.priv.text("#attack-note"); !containsAll(note, "ciphertext only", "sealed vectors, nothing readable") {
		enc.priv.fatalf("encrypted: the note %q does not say that the attack read nothing", note)
	}
	dash.waitJS("the last reconstruction on the dashboard", fmt.Sprintf("Number(%s.dataset.round) === %d && %s.dataset.status === 'rows recovered'", row0, ins.rounds, row0), 30*time.Second)
	ins.priv.waitJS("the final status in the privacy view", "document.getElementById('attack-status').textContent === 'rows recovered'", 30*time.Second)

	encDash := newTab(t, b)
	encDash.navigate(ts.URL + enc.fed.DashboardPath)
	encDash.waitJS("the encrypted attack table", "document.querySelectorAll('#attack-table tr[data-client]').length === 4 && "+
		"[...document.querySelectorAll('#attack-table tr[data-client]')].every(r => r.dataset.equations === '0' && r.dataset.status.startsWith('nothing readable'))", 30*time.Second)

	shots := map[string]*tab{"privacy-insecure.png": ins.priv, "privacy-encrypted.png": enc.priv, "dashboard-attack.png": dash,
		"dashboard-attack-encrypted.png": encDash}
	for name, tb := range shots {
		screenshot(t, tb, name)
	}
	t.Logf("done in %.1fs", time.Since(start).Seconds())
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestCuriousServerOwnFile is the privacy demonstration on make run's
// insecure demo, whose blocks are named CSV files of raw pixels (0-255):
// the tab joins with demo block 0, read as its own file, and its privacy
// view compares the curious server's reconstruction with the tab's rows as
// the federation trains them (pixels/255, the intercept where the
// preparation placed it), which the tab reports after the preparation.
// The error falls below 1e-3 as with block files (TestCuriousServerLive);
// against the raw rows it would stay near 1.
func TestCuriousServerOwnFile(t *testing.T) {
	const rounds = 200
	d, err := demo.Load("mnist", "quadrants:1")
	if err != nil {
		requireOr(t, "%v", err)
	}
	own, err := d.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	seats := session.NewSeats(t.Context(), nil)
	ts := startServer(t, func(o *server.Options) { o.InsecureDemo, o.Curious, o.Demo = true, true, seats })
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: "e2e: curious server, own files", Scheme: "plaintext", Demo: true,
		RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Loss: "logistic", Lambda: 1e-3, IIC: 0.05, Rounds: rounds, Clients: len(d.Files), Schema: d.Schema}})
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := seats.Add(fed.ID, l, d.Schema, d.Files); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	start := time.Now()
	join := newTab(t, b)
	join.navigate(link)
	join.waitJS("the demo blocks", "!document.getElementById('demo').hidden && document.getElementById('demo-block').options.length === 4", 20*time.Second)
	join.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
	evalJS[bool](join, "(document.getElementById('demo-block').value = '0', true)")
	join.click("#demo-load")
	join.waitJS("the summary of demo block 0", "!document.getElementById('summary').hidden", 20*time.Second)
	join.click("#join")
	join.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
	priv := openPrivacy(t, b, join)
	priv.waitJS("the attack section", "!document.getElementById('attack').hidden", 15*time.Second)
	wait := startNative(t, link, own[1:])
	join.waitJS("the tab's rows as the federation trains them", "(JSON.parse(sessionStorage.getItem('hyfed-prepared') || 'null') || {rows: []}).rows.length === 64", 60*time.Second)
	intercept := evalJS[bool](join, "JSON.parse(sessionStorage.getItem('hyfed-prepared')).rows.every((r) => r.features.includes(784))")
	join.waitJS("training to finish", "document.body.dataset.done === '1'", 150*time.Second)
	wait()
	priv.waitJS("the reconstruction of the last round", fmt.Sprintf("Number(document.getElementById('attack-error').dataset.round) >= %d", rounds), 30*time.Second)
	final, _ := attackError(priv)
	t.Logf("%d rounds in %.1fs: the tab's rows recovered to %.3g (%s; the tab holds the intercept: %v)", rounds, time.Since(start).Seconds(),
		final, priv.text("#attack-status"), intercept)
	if final >= 1e-3 || final < 0 {
		priv.fatalf("the privacy view shows error %.3g after %d rounds, want < 1e-3", final, rounds)
	}
	if n := evalJS[int](priv, "document.querySelectorAll('#attack-pairs figure.pair canvas').length"); n != 32 {
		priv.fatalf("%d images of rows, want 16 pairs", n)
	}
	screenshot(t, priv, "privacy-own-file.png")
}
