package e2e

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/session"
)

// TestBaselineInTheBrowser: a FedAvg federation (MNIST quadrants:1, BGV)
// with a browser tab as client 0 and three native participants. The tab's
// WebAssembly participant runs the same local steps as the native ones: the
// federation ends with, bit for bit, the model the same federation computes
// in process over the memory transport; the tab sent its weights only sealed; the dashboard plots P.
func TestBaselineInTheBrowser(t *testing.T) {
	const rounds, inner, a, b, lambda, seed = 15, 50, 0.05, 1.0, 1e-3, 5
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	prep, err := experiment.Prepare(experiment.Options{Data: "mnist", Partition: "quadrants:1"})
	if err != nil {
		t.Fatal(err)
	}
	want := inProcessModel(t, prep, experiment.Options{Seed: seed, Config: protocol.Config{Algo: averaging.FedAvg, Loss: "hinge", Lambda: lambda, Rounds: rounds, Inner: inner, StepA: a, StepB: b}})

	ts := startServer(t, seeded)
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: "e2e: FedAvg, MNIST quadrants:1", RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Algo: averaging.FedAvg, Loss: "hinge", Lambda: lambda, Rounds: rounds, Inner: inner, StepA: a, StepB: b, Seed: seed, Clients: len(blocks), NumFeatures: blocks[0].NumFeatures}})
	br := newBrowser(t)
	dash := newTab(t, br)
	dash.navigate(ts.URL + fed.DashboardPath)
	tb := joinTab(t, br, link, writeBlockFile(t, blocks[0], "block-0.libsvm"), blocks[0].N())
	var waits []func() []*session.Result
	for i := 1; i < len(blocks); i++ { // one after another: client k holds block k, as in process
		waits = append(waits, startNative(t, link, blocks[i:i+1]))
		waitStatus(t, ts.URL, fed.ID, "registration", 20*time.Second, func(s server.Status) bool { return len(s.Participants) > i })
	}
	tb.waitJS("training to finish", "document.body.dataset.done === '1'", 2*time.Minute)
	for _, w := range waits {
		w()
	}
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if st.Config.Algo != averaging.FedAvg || len(st.History) != rounds+1 {
		t.Fatalf("status: algo %s, %d rounds of metrics", st.Config.Algo, len(st.History))
	}
	var model server.ModelView
	if code := callAPI(t, "GET", ts.URL+"/api/federations/"+fed.ID+"/model?iterate=last", fed.AdminToken, nil, &model); code != 200 {
		t.Fatalf("model: HTTP %d", code)
	}
	for j := range want {
		if float64(model.W[j]) != want[j] {
			t.Fatalf("w[%d] = %v with a browser participant, %v in process", j, model.W[j], want[j])
		}
	}
	first, last := st.History[0].RoundMetrics(), st.History[rounds].RoundMetrics()
	t.Logf("FedAvg with a browser tab: P %.6f -> %.6f, the model equals the in-process run's", first.Primal, last.Primal)

	// What the tab sent: its local weights, sealed only.
	row := evalJS[[]string](tb, `[...document.querySelectorAll('#sent tr')].filter(r => r.dataset.kind === 'local-part').map(r => [...r.cells].map(c => c.textContent))[0]`)
	if len(row) != 5 || row[1] != fmt.Sprint(rounds) || row[4] != "0" {
		t.Fatalf("local-part row of the sent table %q: want %d frames and 0 plaintext numbers", row, rounds)
	}
	dash.waitJS("the objective on the dashboard", fmt.Sprintf("Number(document.getElementById('chart-loss').dataset.points) === %d", rounds+1), 20*time.Second)
	if h := dash.text("#h-loss"); !strings.HasPrefix(h, "Objective, log scale") {
		t.Fatalf("the dashboard's loss chart is titled %q, want the objective (FedAvg has no gap)", h)
	}
	screenshot(t, dash, "dashboard-fedavg.png")
}

// TestFedHybridInTheBrowser: FedHybrid (MNIST horizontal:4, logistic,
// mixed updates) with a browser tab as client 0, Newton-type: its
// WebAssembly participant factors the 785x785 Newton matrix each round,
// and the federation ends with the in-process run's model up to rounding.
func TestFedHybridInTheBrowser(t *testing.T) {
	const rounds, lambda, mu, seed = 4, 1e-3, 0.01, 5
	blocks := loadBlocks(t, "mnist", "horizontal:4")
	prep, err := experiment.Prepare(experiment.Options{Data: "mnist", Partition: "horizontal:4"})
	if err != nil {
		t.Fatal(err)
	}
	want := inProcessModel(t, prep, experiment.Options{Seed: seed, Config: protocol.Config{Algo: fedhybrid.Name, Loss: "logistic", Lambda: lambda, Rounds: rounds, Mode: "mixed", Mu: mu, Inner: 1}})
	ts := startServer(t, seeded)
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: "e2e: FedHybrid, MNIST horizontal:4", RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Algo: fedhybrid.Name, Loss: "logistic", Lambda: lambda, Rounds: rounds, Mu: mu, Mode: "mixed", Seed: seed, IIC: 0.2, Clients: len(blocks), NumFeatures: blocks[0].NumFeatures}})
	br := newBrowser(t)
	start := time.Now()
	tb := joinTab(t, br, link, writeBlockFile(t, blocks[0], "block-0.libsvm"), blocks[0].N())
	var waits []func() []*session.Result
	for i := 1; i < len(blocks); i++ {
		waits = append(waits, startNative(t, link, blocks[i:i+1]))
		waitStatus(t, ts.URL, fed.ID, "registration", 20*time.Second, func(s server.Status) bool { return len(s.Participants) > i })
	}
	tb.waitJS("training to finish", "document.body.dataset.done === '1'", 2*time.Minute)
	for _, w := range waits {
		w()
	}
	waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	var model server.ModelView
	if code := callAPI(t, "GET", ts.URL+"/api/federations/"+fed.ID+"/model?iterate=last", fed.AdminToken, nil, &model); code != 200 {
		t.Fatalf("model: HTTP %d", code)
	}
	// Not bit for bit: on amd64 gonum's assembly kernels sum the Newton
	// matrix in another order than its pure-Go code in WebAssembly, so the
	// last bits differ (measured: 1.3e-14 relative after 4 rounds).
	worst, norm := 0.0, 0.0
	for j := range want {
		worst = max(worst, math.Abs(float64(model.W[j])-want[j]))
		norm = max(norm, math.Abs(want[j]))
	}
	t.Logf("FedHybrid with a Newton-type browser tab: %d rounds in %.1fs; the model differs from the in-process run's by %.2g (max norm), %.2g relative",
		rounds, time.Since(start).Seconds(), worst, worst/norm)
	if !(worst <= 1e-9*norm) {
		t.Fatalf("the model differs from the in-process run's by %.3g (max norm %.3g)", worst, norm)
	}
}

// TestCreatePageBaseline: the create page (/new#create=<create token>)
// makes a HyFEM-Prox federation (the baseline fields appear once the
// algorithm is picked) and a HyFDCA one with sealed primal; the server's
// status holds what was chosen; the page shows the join link and the viewer
// and admin dashboard links.
func TestCreatePageBaseline(t *testing.T) {
	ts := startServer(t)
	br := newBrowser(t)
	for _, c := range []struct {
		algo       string
		sealPrimal bool
	}{{"hyfem-prox", false}, {"hyfdca", true}} {
		tb := newTab(t, br)
		tb.navigate(ts.URL + "/new#create=" + createToken)
		tb.waitJS("the create form", "document.getElementById('algo') !== null", 10*time.Second)
		if evalJS[bool](tb, "!document.getElementById('baseline-fields').hidden") {
			t.Fatal("the baseline fields show before a baseline is picked")
		}
		evalJS[bool](tb, fmt.Sprintf(`(() => { const s = document.getElementById('algo'); s.value = %q; s.dispatchEvent(new Event('change')); return true })()`, c.algo))
		if c.sealPrimal {
			tb.do("tick seal primal", chromedp.Click("#seal-primal"))
		} else {
			tb.waitJS("the baseline fields", "!document.getElementById('baseline-fields').hidden && !document.getElementById('mu-label').hidden", 5*time.Second)
			evalJS[bool](tb, `(() => { document.getElementById('step-a').value = '0.3'; document.getElementById('mu').value = '0.2'; return true })()`)
		}
		tb.do("create", chromedp.Click("#create"))
		tb.waitJS("the created federation", "!document.getElementById('result').hidden", 10*time.Second)
		id := tb.text("#fed-id")
		// The organizer's links: the join link with the invitation and
		// the secret in its fragment, the viewer and the admin dashboard.
		links := evalJS[map[string]string](tb, `({join: document.getElementById('join').value, viewer: document.getElementById('viewer').value,
		  admin: document.getElementById('admin-url').value, token: document.getElementById('admin').value})`)
		if l, err := session.ParseLink(links["join"]); err != nil || l.ID != id || !strings.Contains(links["join"], "#invite=") {
			t.Fatalf("the page's join link %q: %v", links["join"], err)
		}
		if want := ts.URL + "/federations/" + id + "#viewer="; !strings.HasPrefix(links["viewer"], want) {
			t.Fatalf("the viewer link is %q, want %s…", links["viewer"], want)
		}
		// The admin link carries the viewer token too: its dashboard shows
		// the viewer link to share.
		viewerTok := strings.TrimPrefix(links["viewer"], ts.URL+"/federations/"+id+"#viewer=")
		if want := ts.URL + "/federations/" + id + "#admin=" + links["token"] + "&viewer=" + viewerTok; links["admin"] != want || links["token"] == "" {
			t.Fatalf("the admin link is %q, want %s", links["admin"], want)
		}
		adminTokens.Store(id, links["token"])
		if c.sealPrimal {
			screenshot(t, tb, "create.png")
		}
		st := fedStatus(t, ts.URL, id)
		switch {
		case st.Config.Algo != c.algo:
			t.Fatalf("created %s, status says %s", c.algo, st.Config.Algo)
		case c.sealPrimal && !st.Config.SealPrimal:
			t.Fatal("seal primal was ticked, the federation does not seal it")
		case !c.sealPrimal && (st.Config.StepA != 0.3 || st.Config.Mu != 0.2 || st.Config.StepB != 1):
			t.Fatalf("hyfem-prox created with step a %v, b %v, mu %v; want 0.3, 1, 0.2", st.Config.StepA, st.Config.StepB, st.Config.Mu)
		}
	}
}

// inProcessModel runs o on prep through the memory transport with
// plaintext sealing (hyfed experiment --algo) and returns its last model.
func inProcessModel(t *testing.T, prep *experiment.Prepared, o experiment.Options) []float64 {
	t.Helper()
	var w []float64
	o.Plaintext, o.PStar = true, 1
	o.Script = func(_ *protocol.Memory, c *protocol.Coordinator) { w = append(w[:0], c.W()...) }
	if _, err := experiment.RunPrepared(t.Context(), prep, o); err != nil {
		t.Fatal(err)
	}
	if len(w) != prep.Data.M() {
		t.Fatalf("the in-process run's model has %d weights, want %d", len(w), prep.Data.M())
	}
	return w
}
