package e2e

import (
	"context"
	"fmt"
	"github.com/hyfed/hyfed/shared/protocol"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
)

// TestDashboardFollowsTraining opens a federation's dashboard before anyone
// has joined, lets 4 native participants train MNIST (quadrants:1) for 20
// rounds, and checks that the same page, never reloaded, ends showing the
// last round and the finished state.
func TestDashboardFollowsTraining(t *testing.T) {
	const rounds = 20
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	ts := startServer(t)
	name := "e2e dashboard: MNIST quadrants:1"
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: name, RoundTimeout: server.Duration(30 * time.Second), Config: protocol.Config{Lambda: 1e-3, Rounds: rounds, IIC: 0.2, Clients: len(blocks), NumFeatures: blocks[0].NumFeatures}})
	b := newBrowser(t)
	tb := newTab(t, b)
	tb.navigate(ts.URL + fed.DashboardPath)

	// Before training: the page has the federation from its event stream.
	tb.waitJS("#title to name the federation", fmt.Sprintf("document.getElementById('title')?.textContent.trim() === %s", jsString(name)), 10*time.Second)
	tb.waitJS("#state to say waiting", "document.getElementById('state')?.textContent.trim() === 'waiting'", 10*time.Second)
	if got := tb.text("#round"); got != "0" {
		tb.fatalf("#round is %q before training, want 0", got)
	}
	// A mark that a reload would wipe: the page must follow by itself.
	evalJS[bool](tb, "(window.__e2eMark = true)")

	// Sample what the page shows while the participants train (for the
	// log: 20 rounds can take less than a second).
	seen := map[string]bool{}
	sampling, stop := context.WithCancel(t.Context()) // also ends if runNative fails the test
	defer stop()
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-sampling.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			if v, err := peekText(tb, "round"); err == nil {
				seen[v] = true
			}
		}
	}()
	res := runNative(t, link, blocks)
	stop()
	<-sampled
	for i, r := range res {
		if r.Rounds != rounds {
			t.Errorf("participant %d saw round %d last, want %d", i, r.Rounds, rounds)
		}
	}
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(st server.Status) bool { return st.State == "finished" })
	if st.Round != rounds {
		t.Fatalf("the API says finished at round %d, want %d", st.Round, rounds)
	}

	want := strconv.Itoa(rounds)
	tb.waitJS("#round to show the last round, "+want, fmt.Sprintf("document.getElementById('round')?.textContent.trim() === %s", jsString(want)), 10*time.Second)
	tb.waitJS("#state to say finished", "document.getElementById('state')?.textContent.trim() === 'finished'", 10*time.Second)
	if !evalJS[bool](tb, "window.__e2eMark === true") {
		tb.fatalf("the dashboard was reloaded during training: it must follow the event stream")
	}
	if got := tb.text("#title"); got != name {
		tb.fatalf("#title is %q, want %q", got, name)
	}
	t.Logf("#round values the page showed during training (sampled every 50 ms): %v", sortedKeys(seen))

	// The charts (being written): #chart-loss carries the number of points
	// it draws in data-points.
	if tb.exists("#chart-loss") {
		tb.waitJS("#chart-loss to draw points", "Number(document.getElementById('chart-loss').getAttribute('data-points')) > 0", 10*time.Second)
	} else {
		t.Log("no #chart-loss on the dashboard yet: chart check not run")
	}
	screenshot(t, tb, "dashboard.png")

	// What the server received: each participant's hello before it was
	// registered (client -1), then frames from each of the 4 clients.
	frames := ts.Frames(fed.ID)
	hellos := len(blocks)
	for _, r := range res {
		hellos += r.Reconnects // a reconnection says hello again
	}
	if n := len(frames[-1]); n != hellos {
		t.Errorf("%d frames before registration, want %d hellos", n, hellos)
	}
	for c := range len(blocks) {
		if n := len(frames[c]); n < rounds {
			t.Errorf("client %d sent %d frames in %d rounds", c, n, rounds)
		}
	}
	if len(frames) != len(blocks)+1 {
		t.Errorf("frames from %d client numbers (with -1), want %d", len(frames), len(blocks)+1)
	}
}

// peekText reads an element's text without failing the test (for use off
// the test's goroutine).
func peekText(tb *tab, id string) (string, error) {
	ctx, cancel := context.WithTimeout(tb.ctx, time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("document.getElementById(%s)?.textContent.trim() ?? ''", jsString(id))))
}

// TestIndexListsFederations checks that /#create=<create token> lists every
// federation with a link to its dashboard, and that the link opens it (the
// page then asks for the dashboard's own link); and that / without the
// token says how to get the list.
func TestIndexListsFederations(t *testing.T) {
	ts := startServer(t)
	names := []string{"e2e index: first", "e2e index: second"}
	var paths []string
	for _, n := range names {
		_, fed := createFederation(t, ts.URL, server.CreateRequest{Name: n, Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 5, Clients: 2}})
		paths = append(paths, "/federations/"+fed.ID)
	}
	b := newBrowser(t)
	tb := newTab(t, b)
	tb.navigate(ts.URL + "/")
	tb.waitJS("how to get the list", "document.getElementById('feds-how')?.textContent.includes('#create=')", 10*time.Second)
	if tb.exists("#feds a[href*='/federations/']") {
		tb.fatalf("/ without the create token lists federations")
	}
	tb.navigate("about:blank") // from / to /#create=… alone would only change the fragment, without a load
	tb.navigate(ts.URL + "/#create=" + createToken)
	for i, p := range paths {
		link := fmt.Sprintf("a[href^=%s]", jsString(p))
		tb.waitJS("a link to "+p, fmt.Sprintf("document.querySelector(%s) !== null", jsString(link)), 10*time.Second)
		// The link's own text or its list entry names the federation.
		cond := fmt.Sprintf("(a => (a.closest('li, tr') || a).textContent.includes(%s))(document.querySelector(%s))",
			jsString(names[i]), jsString(link))
		if !evalJS[bool](tb, cond) {
			tb.fatalf("the entry with the link to %s does not name %q", p, names[i])
		}
	}
	screenshot(t, tb, "index.png")

	// Following the second link opens that federation's dashboard, which
	// says which link shows it: the list carries no federation's token.
	evalJS[bool](tb, fmt.Sprintf("(document.querySelector(%s).click(), true)", jsString(fmt.Sprintf("a[href^=%s]", jsString(paths[1])))))
	tb.waitJS("the dashboard of "+names[1]+" asking for its link", fmt.Sprintf("location.pathname === %s && !document.getElementById('error').hidden && document.getElementById('error').textContent.includes('#viewer=')",
		jsString(paths[1])), 10*time.Second)
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return ks
}

// TestDashboardConverged is a run that converges, as the dashboard shows it
// (the README's picture): MNIST quadrants:1 with the logistic loss and
// lambda 1e-2, the organizer's P* (the central optimum), 4 native
// participants, 150 rounds; the relative loss ends below 1e-3 and the
// dashboard, open from the start, shows the finished run;
// dashboard-converged.png. The picks follow the federation's random
// secret, so runs differ: hyfed experiment with these settings ends round
// 100 at 1.9e-4 to 3.4e-4 with seeds 1-5 and the server runs at 2.7e-4 to
// 5.2e-4, but one CI run under load was at 1.8e-3 there: 150 rounds leave
// room.
func TestDashboardConverged(t *testing.T) {
	const rounds, lambda = 150, 1e-2
	blocks := loadBlocks(t, "mnist", "quadrants:1")
	prep, err := experiment.Prepare(experiment.Options{Data: "mnist", Partition: "quadrants:1"})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := central.Solve(t.Context(), prep.Data, central.Config{Lambda: lambda, Loss: loss.Logistic{}, Tol: 1e-9, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t)
	name := "MNIST quadrants:1, logistic, lambda 1e-2"
	// The defaults and the data's bias, as hyfed experiment runs it.
	cfg := protocol.Defaults()
	cfg.Loss, cfg.Lambda, cfg.Rounds, cfg.IIC, cfg.Clients, cfg.NumFeatures = "logistic", lambda, rounds, 0.2, len(blocks), blocks[0].NumFeatures
	cfg.Tol = protocol.NoTol // every round: the README's picture shows a whole run
	cfg.BiasFeature, cfg.BiasValue, _ = prep.Data.ConstantFeature()
	link, fed := createFederation(t, ts.URL, server.CreateRequest{Name: name, RoundTimeout: server.Duration(30 * time.Second), PStar: opt.Primal, Config: cfg})
	b := newBrowser(t)
	tb := newTab(t, b)
	tb.navigate(ts.URL + fed.DashboardPath)
	tb.waitJS("#title to name the federation", fmt.Sprintf("document.getElementById('title')?.textContent.trim() === %s", jsString(name)), 10*time.Second)
	start := time.Now()
	runNative(t, link, blocks)
	st := waitStatus(t, ts.URL, fed.ID, "the federation to finish", 10*time.Second, func(st server.Status) bool { return st.State == "finished" })
	final := st.History[len(st.History)-1]
	rel := (float64(final.Primal) - opt.Primal) / opt.Primal
	t.Logf("%d rounds in %.1fs: relative loss %.3g, held-out accuracy %.4f", st.Round, time.Since(start).Seconds(), rel, float64(final.HeldAcc))
	if st.Round != rounds || !(rel < 1e-3) {
		t.Fatalf("finished at round %d with relative loss %.3g, want round %d below 1e-3", st.Round, rel, rounds)
	}
	tb.waitJS("the last round on the dashboard", fmt.Sprintf("document.getElementById('state')?.textContent.trim() === 'finished' && Number(document.getElementById('chart-loss')?.dataset.points) === %d", rounds+1), 15*time.Second)
	if h := tb.text("#h-loss"); !strings.HasPrefix(h, "Relative loss") {
		tb.fatalf("the loss chart's title %q: the federation has P*, so it plots the relative loss", h)
	}
	// The model box and the weights' caption (each fetched at most every
	// 1.5 to 2 s) come to the finished model.
	which := fmt.Sprintf("the best model so far: round %d,", st.Model.Round)
	if st.Model.Round != rounds {
		which = fmt.Sprintf("round %d, .*the last round, %d, was worse", st.Model.Round, rounds)
	}
	tb.waitJS("the model box and the weights' caption on the finished model", fmt.Sprintf(
		"document.getElementById('model-box').dataset.state === 'finished' && new RegExp(%s).test(document.getElementById('weights-info').textContent)", jsString(which)), 10*time.Second)
	time.Sleep(300 * time.Millisecond) // the last chart redraw
	screenshot(t, tb, "dashboard-converged.png")
}
