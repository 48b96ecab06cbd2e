package e2e

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/demo"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// Browser participants: the join page, its Web Worker and the WebAssembly
// participant (wasmclient), built into web/static by `make web`.

const joinTimeout = 60 * time.Second // the page fetches and compiles 12 MB of wasm

// createSeeded creates a federation whose secret derives from seed, as
// hyfed create --seed does, so that its run can be compared with hyfed
// experiment's bit for bit.
func createSeeded(t *testing.T, base string, seed int64, req server.CreateRequest) (string, *server.CreateResponse) {
	t.Helper()
	sec := secret.FromSeed(seed)
	req.Seed, req.Fingerprint = uint64(seed), sec.Fingerprint()
	resp := postCreate(t, base, req)
	return joinLink(t, base, resp, sec.String()), resp
}

// joinTab opens the join link in a new tab, uploads the block file through
// the page's file input, waits for the page's summary of it, and presses
// "Join training"; it returns once the server has welcomed the tab.
func joinTab(t *testing.T, b *browser, link, file string, wantSamples int) *tab {
	t.Helper()
	tb := newTab(t, b)
	tb.navigate(link)
	tb.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
	tb.do("upload "+file, chromedp.SetUploadFiles("#file", []string{file}))
	tb.waitJS("the summary of the file", "!document.getElementById('summary').hidden", 20*time.Second)
	if got := tb.text("#summary-kv"); !strings.Contains(got, fmt.Sprintf("%d (", wantSamples)) {
		tb.fatalf("%s: summary %q does not count %d samples", tb.name, got, wantSamples)
	}
	tb.do("press join", chromedp.Click("#join"))
	tb.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
	return tb
}

// TestFourTabsTrainMNIST: four tabs each upload their own MNIST block
// (quadrants:1) through the page and train together; the run ends where
// hyfed experiment ends on the same settings, the dashboard draws its
// chart, and the server received nothing in plaintext that it must not see.
func TestFourTabsTrainMNIST(t *testing.T) {
	const rounds, seed = 30, 7
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	prep, err := experiment.Prepare(experiment.Options{Data: "mnist", Partition: "quadrants:1"})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := central.Solve(t.Context(), prep.Data, central.Config{Lambda: 1e-3, Loss: loss.Hinge{}, Tol: 1e-9, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, seeded)
	link, fed := createSeeded(t, ts.URL, seed, server.CreateRequest{Name: "e2e: four tabs, MNIST quadrants:1",
		RoundTimeout: server.Duration(time.Minute), PStar: opt.Primal, Config: protocol.Config{Lambda: 1e-3, Rounds: rounds, IIC: 0.2, Clients: len(blocks), NumFeatures: blocks[0].NumFeatures, BiasFeature: prep.Data.M() - 1, BiasValue: dataset.Bias}}) // as hyfed experiment finds it in the data
	b := newBrowser(t)
	dash := newTab(t, b)
	dash.navigate(ts.URL + fed.DashboardPath)

	start := time.Now()
	tabs := make([]*tab, len(blocks))
	for i, bl := range blocks { // one after another: the clients' numbers follow the blocks
		tabs[i] = joinTab(t, b, link, writeBlockFile(t, bl, fmt.Sprintf("block-%d.libsvm", i)), bl.N())
	}
	t.Logf("4 tabs joined in %.1fs", time.Since(start).Seconds())
	for _, tb := range tabs {
		tb.waitJS("training to finish", "document.body.dataset.done === '1'", 3*time.Minute)
	}
	t.Logf("training (%d rounds) done %.1fs after the first tab opened", rounds, time.Since(start).Seconds())
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	final := st.History[len(st.History)-1]

	// The same settings in one process (hyfed experiment).
	want, err := experiment.RunPrepared(t.Context(), prep, experiment.Options{Data: "mnist", Partition: "quadrants:1", Seed: seed, // the step rule: the default, as the server's
		PStar: opt.Primal, Config: protocol.Config{Lambda: 1e-3, IIC: 0.2, Rounds: rounds, Fraction: 1, Gamma: 1, Loss: "hinge"}})
	if err != nil {
		t.Fatal(err)
	}
	got := float64(final.Primal)
	rel := (got - want.PStar) / want.PStar
	t.Logf("browser: primal %.12g, relative loss %.6g; hyfed experiment: primal %.12g, relative loss %.6g", got, rel, want.Primal, want.RelativeLoss)
	// Both stop at the same round: the last, or the one whose bound met the tolerance.
	if final.Round != want.Rounds || final.Round > rounds || math.Abs(got-want.Primal) > 1e-9*math.Abs(want.Primal) {
		t.Fatalf("the browsers' run ended at round %d with primal %.15g; hyfed experiment: %.15g", final.Round, got, want.Primal)
	}

	// The dashboard followed the run and drew its loss chart.
	dash.waitJS("the loss chart to have points", "Number(document.getElementById('chart-loss')?.dataset.points) > 0", 15*time.Second)
	if h := dash.text("#h-loss"); !strings.HasPrefix(h, "Relative loss") {
		dash.fatalf("the loss chart's title %q: the federation has P*, so it plots the relative loss", h)
	}
	if l := tabs[0].text("#gap-label"); l != "relative loss" {
		tabs[0].fatalf("the join page shows %q, want the relative loss", l)
	}
	dash.waitJS("the last round on the dashboard", fmt.Sprintf("document.getElementById('round')?.textContent.trim() === '%d'", final.Round), 10*time.Second)
	screenshot(t, dash, "dashboard.png")
	screenshot(t, tabs[0], "join.png")
	if sent := tabs[0].text("#sent-total"); !strings.Contains(sent, "encrypted") {
		tabs[0].fatalf("the page does not say what it sent: %q", sent)
	}

	// The privacy view, in the first tab (which holds its rows): its own
	// rows beside what the server holds, sealed.
	priv := ts.URL + "/federations/" + fed.ID + "/privacy" // its token: the tab's session, in session storage
	tabs[0].navigate(priv)
	tabs[0].waitJS("the server's side", "document.getElementById('parts').textContent.includes('BGV ciphertext')", 15*time.Second)
	tabs[0].waitJS("the tab's own rows", "document.querySelectorAll('#preview canvas').length > 0", 5*time.Second)
	screenshot(t, tabs[0], "privacy.png")

	// What left the tabs: check every frame the server received.
	assertNoPlaintext(t, ts.Frames(fed.ID), blocks)
}

// assertNoPlaintext decodes every frame participants sent and checks that
// no data, label, dual value or inner product is in it in plaintext: the
// sealed parts are BGV ciphertexts (they decode only as such), no plaintext
// vector has one entry per sample (dual values, inner products and labels
// would), no record id appears anywhere, and the plaintext vectors are the
// protocol's per-feature ones.
func assertNoPlaintext(t *testing.T, frames map[int][][]byte, blocks []*partition.Block) {
	t.Helper()
	bgv, err := seal.ByName("bgv")
	if err != nil {
		t.Fatal(err)
	}
	samples := map[int]bool{}
	features := map[int]bool{}
	for _, b := range blocks {
		samples[b.N()] = true
		features[len(b.Features)] = true
	}
	n, sealed := 0, 0
	for client, fs := range frames {
		for i, f := range fs {
			n++
			m, err := protocol.DecodeMessage(bgv, f, protocol.DefaultLimits)
			if err != nil {
				t.Fatalf("client %d frame %d: not a BGV-sealed message: %v", client, i, err)
			}
			if m.Sealed != nil || m.Alpha != nil {
				sealed++
			}
			for _, b := range blocks {
				for _, id := range b.IDs[:50] {
					if bytes.Contains(f, []byte(`"`+id+`"`)) {
						t.Fatalf("client %d frame %d (%s) holds record id %q", client, i, m.Kind, id)
					}
				}
			}
			for name, v := range map[string]int{"HatW": len(m.HatW), "DW": len(m.DW),
				"GridLoss": len(m.GridLoss), "GridConj": len(m.GridConj), "GridWDot": len(m.GridWDot),
				"GridTrainOK": len(m.GridTrainOK)} {
				if v > 0 && samples[v] && !features[v] {
					t.Fatalf("client %d frame %d (%s): plaintext %s has one entry per sample (%d)", client, i, m.Kind, name, v)
				}
				if (name == "HatW" || name == "DW") && v > 0 && !features[v] {
					t.Fatalf("client %d frame %d (%s): plaintext %s of %d entries, not a block's feature count", client, i, m.Kind, name, v)
				}
			}
		}
	}
	if n == 0 || sealed == 0 {
		t.Fatalf("the server received %d frames, %d with sealed vectors", n, sealed)
	}
	t.Logf("checked %d frames the server received (%d with BGV ciphertexts): no plaintext data, labels, dual values or inner products", n, sealed)
}

// TestWrongSecretShowsError: a link whose secret is not the federation's
// ends on the page's clear error, and the server registers nobody.
func TestWrongSecretShowsError(t *testing.T) {
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	ts := startServer(t)
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Config: protocol.Config{Lambda: 1e-3, Rounds: 5, IIC: 0.2, Clients: 4, NumFeatures: blocks[0].NumFeatures}})
	other, err := secret.New()
	if err != nil {
		t.Fatal(err)
	}
	wrong := link[:strings.Index(link, "&secret=")] + "&secret=" + other.String()
	b := newBrowser(t)
	tb := newTab(t, b)
	tb.navigate(wrong)
	tb.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
	tb.do("upload", chromedp.SetUploadFiles("#file", []string{writeBlockFile(t, blocks[0], "block-0.libsvm")}))
	tb.waitJS("the summary", "!document.getElementById('summary').hidden", 20*time.Second)
	tb.do("press join", chromedp.Click("#join"))
	tb.waitJS("the wrong-secret error", "document.getElementById('error').dataset.code === 'wrong-secret' && getComputedStyle(document.getElementById('error')).display !== 'none'", 20*time.Second)
	if title := tb.text("#error-title"); title != "Wrong secret" {
		tb.fatalf("error title %q", title)
	}
	if text := tb.text("#error-text"); !strings.Contains(text, "part after #") {
		tb.fatalf("error text %q does not say what to do", text)
	}
	screenshot(t, tb, "wrong-secret.png")
	if st := fedStatus(t, ts.URL, fed.ID); len(st.Participants) != 0 {
		t.Fatalf("the server registered %d participants", len(st.Participants))
	}
}

// TestClosedTabOthersFinish: one of four tabs is closed mid-training; the
// other three train to the last round.
func TestClosedTabOthersFinish(t *testing.T) {
	const rounds = 40
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	ts := startServer(t)
	link, fed := createFederation(t, ts.URL, server.CreateRequest{RoundTimeout: server.Duration(20 * time.Second), Config: protocol.Config{Lambda: 1e-3, Rounds: rounds, IIC: 0.2, Clients: len(blocks), NumFeatures: blocks[0].NumFeatures}})
	b := newBrowser(t)
	tabs := make([]*tab, len(blocks))
	for i, bl := range blocks {
		tabs[i] = joinTab(t, b, link, writeBlockFile(t, bl, fmt.Sprintf("block-%d.libsvm", i)), bl.N())
	}
	tabs[3].waitJS("round 5", "Number(document.getElementById('round').textContent) >= 5", time.Minute)
	closedAt := fedStatus(t, ts.URL, fed.ID).Round
	if err := chromedp.Cancel(tabs[3].ctx); err != nil {
		t.Fatalf("closing tab 4: %v", err)
	}
	t.Logf("closed tab 4 at round %d", closedAt)
	for _, tb := range tabs[:3] {
		tb.waitJS("training to finish", "document.body.dataset.done === '1'", 3*time.Minute)
	}
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if st.Round != rounds || closedAt >= rounds {
		t.Fatalf("finished at round %d (tab closed at %d), want %d", st.Round, closedAt, rounds)
	}
	t.Logf("participants at the end: %+v", st.Participants)
	last := st.History[len(st.History)-1]
	if last.Active > 3 {
		t.Fatalf("the last round had %d active participants after a tab closed", last.Active)
	}
	screenshot(t, tabs[0], "tab-closed-others-finish.png")
}

// TestInsecureFederationIsMarked: a federation without encryption (only on
// a server started with --insecure-demo) carries a red banner on its join,
// dashboard and privacy pages; an encrypted one does not.
func TestInsecureFederationIsMarked(t *testing.T) {
	ts := startServer(t, func(o *server.Options) { o.InsecureDemo = true })
	insecure, fi := createFederation(t, ts.URL, server.CreateRequest{Scheme: "plaintext", Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}})
	secure, fs := createFederation(t, ts.URL, server.CreateRequest{Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}})
	b := newBrowser(t)
	tb := newTab(t, b)
	for _, c := range []struct {
		url  string
		want bool
	}{
		{insecure, true}, {ts.URL + fi.DashboardPath, true}, {ts.URL + "/federations/" + fi.ID + "/privacy#viewer=" + fi.ViewerToken, true},
		{secure, false}, {ts.URL + fs.DashboardPath, false},
	} {
		tb.navigate(c.url)
		if c.want {
			tb.waitJS("the red banner on "+c.url, "!document.getElementById('insecure-banner').hidden", 10*time.Second)
			if c.url == insecure {
				if txt := tb.text("#sealed-item"); !strings.HasPrefix(txt, "NOT encrypted") {
					tb.fatalf("the join page of an insecure federation says %q", txt)
				}
				screenshot(t, tb, "insecure-join.png")
			}
			continue
		}
		tb.waitJS("the page to load its status", "document.getElementById('title') ? document.getElementById('title').textContent !== 'federation' && document.getElementById('title').textContent !== '…' : document.getElementById('fed').textContent !== 'loading…'", 10*time.Second)
		if evalJS[bool](tb, "!document.getElementById('insecure-banner').hidden") {
			tb.fatalf("%s: an encrypted federation shows the insecure banner", c.url)
		}
	}
}

// TestDemoNewcomer is make run's flow in Chromium (demoNewcomer);
// TestDemoNewcomerFirefox (firefox_test.go) is the same in Firefox.
func TestDemoNewcomer(t *testing.T) {
	demoNewcomer(t, newChromium)
}

// demoNewcomer is make run's flow, in the engine start makes: a demo
// federation (MNIST quadrants:1 here: 4 seats) whose blocks are named CSV
// files of raw pixels; one tab downloads a block from the join page, then
// takes "demo block 1", which the page reads as the user's own file (the
// mapping shown), and joins; the dashboard's "fill the free seats" starts
// simulated native participants for the other three, which read the same
// files; training finishes in the tab; the join page's model downloads are
// closed before training and, after it, give the model hyfed predict and
// liblinear-predict score (on the demo's held-out samples, raw) as the
// status and the pages say (checkModelDownload); the dashboard offers the
// same model; the privacy view, opened from the join page, shows the tab's
// rows beside the server's sealed state. Screenshots
// demo-<engine>-{join,dashboard,privacy}.png.
func demoNewcomer(t *testing.T, start func(testing.TB) engine) {
	const rounds = 8
	d, err := demo.Load("mnist", "quadrants:1")
	if err != nil {
		requireOr(t, "%v", err)
	}
	seats := session.NewSeats(t.Context(), nil)
	ts := startServer(t, func(o *server.Options) { o.Demo = seats })
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: "demo", Demo: true, RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Lambda: 1e-3, Rounds: rounds, IIC: 0.2, Clients: len(d.Files), Schema: d.Schema}})
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
	tb.navigate(link)
	tb.waitJS("the demo blocks", "!document.getElementById('demo').hidden && document.getElementById('demo-block').options.length === 4", 20*time.Second)
	tb.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
	// Each block is offered as the CSV file it is.
	if n := pageEval[int](tb, "document.querySelectorAll('#demo-files a.demo-file').length"); n != 4 || !pageEval[bool](tb, "!document.getElementById('demo-files-row').hidden") {
		tb.fatalf("%d download links for the demo's 4 blocks", n)
	}
	if name, body := tb.download("#demo-files a.demo-file[data-block='0']"); name != "demo-block-0.csv" || !bytes.Equal(body, d.Files[0].Data) {
		tb.fatalf("the demo block downloaded as %q, %d bytes; want demo-block-0.csv, the %d bytes of the file", name, len(body), len(d.Files[0].Data))
	}
	pageEval[bool](tb, "(document.getElementById('demo-block').value = '1', true)")
	tb.click("#demo-load")
	tb.waitJS("the summary of demo block 1", "!document.getElementById('summary').hidden", 20*time.Second)
	if got := tb.text("#summary-kv"); !strings.Contains(got, "demo-block-1.csv") {
		tb.fatalf("summary %q", got)
	}
	// Read as a user's own file: the mapping of its columns, its rows drawn.
	if got := tb.text("#map-rows"); !strings.HasPrefix(got, "10000 rows, 10000 with a label") ||
		pageEval[int](tb, "document.querySelectorAll('#map-columns tr[data-use=\"feature\"]').length") != 196 ||
		pageEval[int](tb, "document.querySelectorAll('#rows canvas').length") != 8 {
		tb.fatalf("the mapping of demo block 1: %q, %d feature columns, %d rows drawn", got,
			pageEval[int](tb, "document.querySelectorAll('#map-columns tr[data-use=\"feature\"]').length"), pageEval[int](tb, "document.querySelectorAll('#rows canvas').length"))
	}
	tb.click("#join")
	tb.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
	// Before training there is no model: the downloads are closed and say why.
	if !pageEval[bool](tb, "document.getElementById('dl-model').disabled && document.getElementById('dl-json').disabled") ||
		!strings.Contains(tb.text("#model-state"), "No model yet") {
		tb.fatalf("before training: model state %q", tb.text("#model-state"))
	}
	hyfed := buildHyfed(t) // built while the federation trains (checkModelDownload runs it)

	dash := e.newPage()
	dash.navigate(ts.URL + fed.AdminPath) // filling seats is the organizer's
	dash.waitJS("the fill button", "!document.getElementById('fill-box').hidden && !document.getElementById('fill').disabled", 10*time.Second)
	// What the dashboard's model box says as training runs.
	pageEval[bool](dash, `(window.__modelSeen = [], new MutationObserver(() => {
  const box = document.getElementById('model-box');
  window.__modelSeen.push({state: box.dataset.state, enabled: !document.getElementById('dl-model').disabled, text: document.getElementById('model-state').textContent});
}).observe(document.getElementById('model-box'), {subtree: true, attributes: true, childList: true, characterData: true}), true)`)
	dash.click("#fill")
	dash.waitJS("the fill result", "document.getElementById('fill-result').textContent.includes('Started 3')", 10*time.Second)
	tb.waitJS("training to finish in the tab", "document.body.dataset.done === '1'", 2*time.Minute)
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if st.Round != rounds || len(st.Participants) != 4 {
		t.Fatalf("%s: finished at round %d with %d participants", eng, st.Round, len(st.Participants))
	}
	// The join page's header follows the federation live: finished, not
	// "waiting, 0 of 4 registered".
	tb.waitJS("the join page's header to say finished", "document.getElementById('fed').textContent.includes(': finished, 4 participants')", 10*time.Second)
	// The organizer's dashboard offers the same model.
	dash.waitJS("the dashboard's downloads", fmt.Sprintf("document.getElementById('model-box').dataset.state === 'finished' && document.getElementById('model-box').dataset.round === '%d' && !document.getElementById('dl-model').disabled", st.Model.Round), 10*time.Second)
	type seen struct {
		State   string `json:"state"`
		Enabled bool   `json:"enabled"`
		Text    string `json:"text"`
	}
	running := false
	for _, m := range pageEval[[]seen](dash, "window.__modelSeen") {
		if m.Enabled && m.State == "running" {
			if !containsAll(m.Text, "Training runs", "the download is round", "will change") {
				dash.fatalf("while training, the model box says %q", m.Text)
			}
			running = true
		}
		if m.Enabled && m.State == "waiting" {
			dash.fatalf("the model box offered a download before training: %+v", m)
		}
	}
	if !running {
		dash.fatalf("the dashboard never offered the model while training ran")
	}
	checkLogTicks(t, dash)
	// The accuracy both pages show is the status's (checkModelDownload
	// checks that hyfed predict finds it to 1e-9), as the pages round it.
	shown := pageEval[string](dash, fmt.Sprintf("hyfed.num(100 * %v, 4)", float64(st.Model.HeldoutAccuracy)))
	for _, p := range []page{dash, tb} {
		p.waitJS("the model box to show the finished model's held-out accuracy, "+shown+" %",
			fmt.Sprintf("document.getElementById('model-box').dataset.state === 'finished' && document.getElementById('model-state').textContent.includes(%s)", jsString("held-out accuracy "+shown+" %")),
			10*time.Second)
	}
	checkModelDownload(t, tb, hyfed, fed.ID, st, d)
	dash.shot("demo-" + eng + "-dashboard.png")
	tb.shot("demo-" + eng + "-join.png")

	// The join page's navigation: the dashboard (read with the
	// invitation) and the privacy view, the tab's own rows beside what
	// the server holds, sealed.
	nav := e.newPage()
	nav.navigate(pageEval[string](tb, "document.getElementById('dash-nav').href"))
	nav.waitJS("the dashboard from the join page's navigation", "document.getElementById('state')?.textContent.trim() === 'finished'", 15*time.Second)
	priv := e.popup(tb, "#privacy-nav")
	priv.waitJS("the server's side", "document.getElementById('parts').textContent.includes('BGV ciphertext')", 15*time.Second)
	priv.waitJS("the tab's own rows", "document.querySelectorAll('#preview canvas').length > 0", 5*time.Second)
	priv.shot("demo-" + eng + "-privacy.png")
}

// checkLogTicks checks the loss chart's log axis: labels between the
// decades where the values are (values near 0.3 were once labelled only 1e0
// and 1e-1), drawn from the run's own points and from known ranges.
func checkLogTicks(t *testing.T, dash page) {
	t.Helper()
	dash.waitJS("the loss chart's tick labels", "!!document.getElementById('chart-loss').dataset.yticks", 10*time.Second)
	labels := strings.Fields(pageEval[string](dash, "document.getElementById('chart-loss').dataset.yticks"))
	if len(labels) < 3 {
		dash.fatalf("the loss chart's y axis has the labels %q, want at least 3", labels)
	}
	for _, tc := range []struct {
		min, max float64
		want     string
	}{
		{0.25, 0.4, "0.3"}, {0.2, 0.6, "0.2 0.3 0.4 0.5 0.6"}, {0.02, 0.9, "0.1"}, {1e-6, 1, "1e-6"},
	} {
		got := pageEval[string](dash, fmt.Sprintf("hyfed.logTicks(%g, %g, 200).map(hyfed.tickLabel).join(' ')", tc.min, tc.max))
		fields := strings.Fields(got)
		ok := len(fields) >= 3 && len(fields) <= 12
		for _, w := range strings.Fields(tc.want) {
			ok = ok && slices.Contains(fields, w)
		}
		if !ok {
			dash.fatalf("log ticks from %g to %g: %q, want 3 to 12 labels among them %q", tc.min, tc.max, got, tc.want)
		}
	}
	t.Logf("%s: the loss chart's y labels: %v", dash.engine(), labels)
}
