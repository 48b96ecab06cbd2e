package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// Threshold keys with browser participants: the join page runs the key
// setup and, in a committee member's tab, the switching; it keeps the
// tab's party (sealed under the link secret) in session storage.

// thresholdSetup is a small seeded federation with threshold keys: the
// data, its blocks and the in-process experiment to compare with.
func thresholdSetup(t *testing.T, rounds, committee, threshold int) (*experiment.Prepared, experiment.Options, []*partition.Block) {
	t.Helper()
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:400,8,1,0.05,2", Holdout: 0.2, Partition: "grid:2,2"})
	if err != nil {
		t.Fatal(err)
	}
	o := experiment.Options{Partition: "grid:2,2", Seed: 11, PStar: 1,
		Config: protocol.Config{Lambda: 1e-2, Fraction: 0.7, Rounds: rounds, IIC: 0.2, SealPrimal: true,
			Keys: protocol.KeysThreshold, KeyCommittee: committee, KeyThreshold: threshold}}
	blocks := make([]*partition.Block, len(p.Blocks))
	for i := range p.Blocks {
		blocks[i] = &p.Blocks[i]
	}
	return p, o, blocks
}

// createThreshold creates the federation of o on the server and returns its
// join link (secret=threshold:...).
func createThreshold(t *testing.T, ts *testServer, name string, p *experiment.Prepared, o experiment.Options, roundTimeout time.Duration) (string, *server.CreateResponse) {
	t.Helper()
	cfg := o.Config
	cfg.Clients, cfg.NumFeatures = len(p.Blocks), p.Data.M()
	sec := secret.FromSeed(o.Seed)
	resp := postCreate(t, ts.URL, server.CreateRequest{Name: name, RoundTimeout: server.Duration(roundTimeout),
		Fingerprint: sec.Fingerprint(), Config: func() protocol.Config { cfg.Seed = uint64(o.Seed); return cfg }()})
	return joinLink(t, ts.URL, resp, "threshold:"+sec.String()), resp
}

// TestThresholdTabsTrain: two Chromium tabs (participants 0 and 1, both on
// the 2-of-3 key committee) and two native participants run a federation
// with threshold keys; every round's primal, dual and held-out accuracy
// equal hyfed experiment --keys threshold's with the same seed, bit for
// bit. The tabs show the key setup and the switching as phases, and keep
// their key state in session storage; tab 0's privacy view shows the key
// mode, the committee and what a colluding participant could open.
func TestThresholdTabsTrain(t *testing.T) {
	const rounds = 6
	p, o, blocks := thresholdSetup(t, rounds, 3, 2)
	var want []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(t.Context(), p, o, &want); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, seeded)
	link, fed := createThreshold(t, ts, "e2e: threshold keys, two tabs", p, o, time.Minute)
	b := newBrowser(t)
	start := time.Now()
	// One after another, tabs first: the clients' numbers follow the blocks.
	tabs := []*tab{
		joinTab(t, b, link, writeBlockFile(t, blocks[0], "block-0.libsvm"), blocks[0].N()),
		joinTab(t, b, link, writeBlockFile(t, blocks[1], "block-1.libsvm"), blocks[1].N()),
	}
	// The phases each tab showed, recorded as they change.
	for _, tb := range tabs {
		evalJS[bool](tb, `(() => { window.__phases = new Set(); const el = document.getElementById('phase');
			new MutationObserver(() => window.__phases.add(el.textContent)).observe(el, {childList: true, characterData: true, subtree: true}); return true; })()`)
	}
	wait := startNative(t, link, blocks[2:])
	trainStart := time.Now() // every participant is in once the natives are
	for _, tb := range tabs {
		tb.waitJS("training to finish", "document.body.dataset.done === '1'", time.Minute)
	}
	wait()
	took := time.Since(start)
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	training := time.Since(trainStart)
	if st.Config.Keys != protocol.KeysThreshold || len(st.History) != len(want) {
		t.Fatalf("keys %q, %d rounds recorded, want threshold and %d", st.Config.Keys, len(st.History), len(want))
	}
	for i, r := range st.History {
		w := want[i]
		if !same(float64(r.Primal), w.Primal) || !same(float64(r.Dual), w.Dual) || !same(float64(r.HeldAcc), w.HeldAcc) {
			t.Fatalf("round %d: primal %v dual %v held-out %v with two tabs; hyfed experiment --keys threshold: %v %v %v",
				r.Round, r.Primal, r.Dual, r.HeldAcc, w.Primal, w.Dual, w.HeldAcc)
		}
	}
	for i, tb := range tabs {
		phases := evalJS[[]string](tb, "Array.from(window.__phases)")
		if !strings.Contains(strings.Join(phases, "|"), "switching a sum") {
			tb.fatalf("%s (participant %d, a committee member) showed the phases %q, none of them the switching", tb.name, i, phases)
		}
		if evalJS[string](tb, "document.body.dataset.keyState || ''") != "1" {
			tb.fatalf("%s kept no key state", tb.name)
		}
	}
	if note := tabs[0].text("#key-note"); !strings.Contains(note, "threshold keys") {
		tabs[0].fatalf("the page's note on the key: %q, want one on threshold keys", note)
	}
	screenshot(t, tabs[0], "threshold-join.png")
	// The privacy view from tab 0: the key mode, the committee by name
	// (tab 0 among them) and what a colluding participant could open.
	priv := openPrivacy(t, b, tabs[0])
	priv.waitJS("the key mode", "(e => e !== null && e.textContent.includes('threshold keys, 2-of-3'))(document.querySelector('#keymode h3'))", 15*time.Second)
	if c := priv.text("#key-committee"); !strings.Contains(c, "(you)") || strings.Count(c, ", ") != 2 {
		priv.fatalf("the privacy view's committee: %q, want three members, tab 0 among them", c)
	}
	if n := evalJS[int](priv, "document.querySelectorAll('#key-opens tr').length"); n != 5 {
		priv.fatalf("the privacy view's table of who opens what has %d rows, want a header and 4", n)
	}
	if c := priv.text("#key-colluder"); !strings.Contains(c, "opens nothing beyond the sums of its own sample groups") {
		priv.fatalf("the privacy view on a colluding participant: %q", c)
	}
	screenshot(t, priv, "threshold-privacy.png")
	// The same federation with four native participants, for the time.
	link2, fed2 := createThreshold(t, ts, "e2e: threshold keys, natives", p, o, time.Minute)
	nativeStart := time.Now()
	runNative(t, link2, blocks)
	native := time.Since(nativeStart)
	if st2 := fedStatus(t, ts.URL, fed2.ID); st2.History[len(st2.History)-1].Primal != st.History[len(st.History)-1].Primal {
		t.Fatalf("four native participants end at primal %v, two tabs with two natives at %v", st2.History[len(st2.History)-1].Primal, st.History[len(st.History)-1].Primal)
	}
	t.Logf("2 tabs and 2 native participants, 2-of-3 threshold keys, %d rounds in %.1fs after the first tab opened (%.1fs from the last registration: key setup and training); 4 native participants: %.1fs; final primal %v, as in process",
		rounds, took.Seconds(), training.Seconds(), native.Seconds(), st.History[len(st.History)-1].Primal)
}

// finishedOrError holds once a join page finished training or shows an error.
const finishedOrError = "document.body.dataset.done === '1' || document.getElementById('error').style.display === 'block'"

func same(a, b float64) bool { return a == b || (a != a && b != b) }

// TestThresholdTabReloaded: a committee member's tab is reloaded in the
// middle of training (its user accepts the page's "leave?" prompt, loads
// its block file again and presses "Join training"); the page returns to
// its seat with the session token and the key state it kept, and the
// federation (2-of-2 threshold keys: no sum is switched without that
// member's share) trains to its last round.
func TestThresholdTabReloaded(t *testing.T) {
	const rounds = 12
	p, o, blocks := thresholdSetup(t, rounds, 2, 2)
	ts := startServer(t, seeded)
	link, fed := createThreshold(t, ts, "e2e: threshold keys, a tab reloaded", p, o, 5*time.Second)
	b := newBrowser(t)
	file := writeBlockFile(t, blocks[0], "block-0.libsvm")
	tb := joinTab(t, b, link, file, blocks[0].N())
	wait := startNative(t, link, blocks[1:])
	tb.waitJS("round 3", "Number(document.getElementById('round').textContent) >= 3", time.Minute)
	tb.waitJS("the key state kept", "document.body.dataset.keyState === '1'", 5*time.Second)
	stored := evalJS[int](tb, "Object.keys(sessionStorage).filter(k => k.startsWith('hyfed-keys-')).length")
	secretKept := evalJS[bool](tb, "Object.values(sessionStorage).some(v => v.includes(H.fragment().secret.replace(/^threshold:/, '')))")
	if stored != 1 || secretKept {
		tb.fatalf("session storage: %d key states (want 1), the link secret among the stored values: %v", stored, secretKept)
	}
	reloadedAt := fedStatus(t, ts.URL, fed.ID).Round
	// The page asks before it leaves a running federation; the user agrees.
	dialogs := chromedp.Events(tb.ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			if _, err := chromedp.Call(tb.ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true}); err != nil {
				t.Errorf("accepting the page's %q: %v", ev.Message, err)
			}
		}
	}()
	reloaded := time.Now()
	tb.do("reload", chromedp.Reload())
	tb.waitJS("the participant to load again", "document.body.dataset.ready === '1' && !document.body.dataset.registered", joinTimeout)
	tb.do("upload "+file+" again", chromedp.SetUploadFiles("#file", []string{file}))
	tb.waitJS("the summary of the file", "!document.getElementById('summary').hidden", 20*time.Second)
	tb.do("press join", chromedp.Click("#join"))
	// An error (a member back without its share stops the federation)
	// ends the wait at once.
	tb.waitJS("training to finish or an error", finishedOrError, time.Minute)
	if evalJS[string](tb, "document.body.dataset.done || ''") != "1" {
		tb.fatalf("%s did not finish after its reload: %s", tb.name, tb.text("#error"))
	}
	wait()
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if st.Round != rounds || len(st.History) != rounds+1 || reloadedAt >= rounds {
		t.Fatalf("finished at round %d with %d rounds recorded (reloaded at %d), want %d", st.Round, len(st.History), reloadedAt, rounds)
	}
	if n := len(st.Participants); n != len(blocks) {
		t.Fatalf("%d participants at the end: the reloaded tab took a new seat", n)
	}
	if got := tb.text("#status"); !strings.Contains(got, "finished") {
		tb.fatalf("the reloaded page says %q", got)
	}
	t.Logf("committee member's tab reloaded at round %d; the federation finished %d rounds %.1fs later", reloadedAt, rounds, time.Since(reloaded).Seconds())
}

// TestThresholdTabsTrainFirefox: TestThresholdTabsTrain's federation in
// Firefox, the tabs loading their blocks as the demo's "use demo block k"
// (the Firefox harness has no file upload): two tabs, members 0 and 1 of
// the 2-of-3 committee, and two native participants equal hyfed experiment
// --keys threshold bit for bit.
func TestThresholdTabsTrainFirefox(t *testing.T) {
	thresholdDemoTabs(t, newFirefox)
}

// thresholdDemoTabs runs a seeded demo federation with threshold keys in
// the engine start gives: two of its tabs load demo blocks 0 and 1 and
// join in that order, two native participants take blocks 2 and 3.
func thresholdDemoTabs(t *testing.T, start func(testing.TB) engine) {
	const rounds = 6
	p, o, blocks := thresholdSetup(t, rounds, 3, 2)
	var want []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(t.Context(), p, o, &want); err != nil {
		t.Fatal(err)
	}
	seats := session.NewSeats(t.Context(), nil)
	ts := startServer(t, seeded, func(so *server.Options) { so.Demo = seats })
	cfg := o.Config
	cfg.Clients, cfg.NumFeatures, cfg.Seed = len(p.Blocks), p.Data.M(), uint64(o.Seed)
	sec := secret.FromSeed(o.Seed)
	resp := postCreate(t, ts.URL, server.CreateRequest{Name: "e2e: threshold keys, demo blocks", Demo: true,
		RoundTimeout: server.Duration(time.Minute), Fingerprint: sec.Fingerprint(), Config: cfg})
	link := joinLink(t, ts.URL, resp, "threshold:"+sec.String())
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatal(err)
	}
	// Block files: threshold keys take no schema yet.
	files, err := partition.BlockFiles(p.Blocks, "demo-block")
	if err != nil {
		t.Fatal(err)
	}
	if err := seats.Add(resp.ID, l, nil, files); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(seats.Wait)

	e := start(t)
	eng := e.name()
	var tabs []page
	for k := range 2 {
		tb := e.newPage()
		tb.navigate(link)
		tb.waitJS("the demo blocks", "!document.getElementById('demo').hidden && document.getElementById('demo-block').options.length === 4", 20*time.Second)
		tb.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
		pageEval[bool](tb, fmt.Sprintf("(document.getElementById('demo-block').value = '%d', true)", k))
		tb.click("#demo-load")
		tb.waitJS("the summary of the demo block", "!document.getElementById('summary').hidden", 20*time.Second)
		tb.click("#join")
		tb.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
		tabs = append(tabs, tb)
	}
	wait := startNative(t, link, blocks[2:])
	trainStart := time.Now()
	for _, tb := range tabs {
		tb.waitJS("training to finish or an error", finishedOrError, time.Minute)
		if pageEval[string](tb, "document.body.dataset.done || ''") != "1" {
			tb.fatalf("%s: the tab did not finish: %s", eng, tb.text("#error"))
		}
		if pageEval[string](tb, "document.body.dataset.keyState || ''") != "1" {
			tb.fatalf("%s: the tab kept no key state", eng)
		}
	}
	wait()
	st := waitStatus(t, ts.URL, resp.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if len(st.History) != len(want) {
		t.Fatalf("%s: %d rounds recorded, want %d", eng, len(st.History), len(want))
	}
	for i, r := range st.History {
		w := want[i]
		if !same(float64(r.Primal), w.Primal) || !same(float64(r.Dual), w.Dual) || !same(float64(r.HeldAcc), w.HeldAcc) {
			t.Fatalf("%s: round %d: primal %v dual %v held-out %v; hyfed experiment --keys threshold: %v %v %v",
				eng, r.Round, r.Primal, r.Dual, r.HeldAcc, w.Primal, w.Dual, w.HeldAcc)
		}
	}
	t.Logf("%s: 2 tabs and 2 native participants, 2-of-3 threshold keys, %d rounds: %.1fs from the last registration; final primal %v, as in process",
		eng, rounds, time.Since(trainStart).Seconds(), st.History[len(st.History)-1].Primal)
}
