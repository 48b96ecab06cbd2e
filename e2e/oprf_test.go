package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// TestOPRFTabsChromium is oprfTabs in Chromium; TestOPRFTabsFirefox the
// same in Firefox.
func TestOPRFTabsChromium(t *testing.T) { oprfTabs(t, newChromium) }

func TestOPRFTabsFirefox(t *testing.T) { oprfTabs(t, newFirefox) }

// oprfTabs: four tabs join through a link that says OPRF pseudonyms; the
// committee (three of the tabs) makes the key, each tab has its ids
// evaluated and unblinds them in its WebAssembly participant, and the run
// equals hyfed experiment's with keyed pseudonyms, bit for bit. No frame the
// server received holds a keyed pseudonym of an id.
func oprfTabs(t *testing.T, start func(testing.TB) engine) {
	const rounds, seed = 8, 7
	blocks := loadBlocks(t, "breast-cancer", "grid:2,2")
	prep, err := experiment.Prepare(experiment.Options{Data: "breast-cancer", Partition: "grid:2,2"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := protocol.Config{Lambda: 1e-3, Rounds: rounds, Tol: protocol.NoTol, IIC: 0.2, Clients: len(blocks), NumFeatures: blocks[0].NumFeatures}
	if f, v, ok := prep.Data.ConstantFeature(); ok {
		cfg.BiasFeature, cfg.BiasValue = f, v // as hyfed experiment finds it in the data
	}
	var want []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(t.Context(), prep, experiment.Options{Data: "breast-cancer", Partition: "grid:2,2", Seed: seed, PStar: 1, Config: cfg}, &want); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, seeded)
	sec := secret.FromSeed(seed)
	req := server.CreateRequest{Name: "e2e: OPRF pseudonyms", RoundTimeout: server.Duration(time.Minute), Config: cfg}
	req.Pseudonyms, req.Seed, req.Fingerprint = protocol.PseudonymsOPRF, seed, sec.Fingerprint()
	resp := postCreate(t, ts.URL, req)
	link := joinLink(t, ts.URL, resp, sec.String()) + "&" + session.OPRFParam

	e := start(t)
	began := time.Now()
	var tabs []page
	for i, bl := range blocks { // one after another: the clients' numbers follow the blocks
		p := e.newPage()
		p.navigate(link)
		p.waitJS("the participant to load", "document.body.dataset.ready === '1'", joinTimeout)
		if s := p.text("#never-ids"); !strings.Contains(s, "OPRF pseudonyms") {
			p.fatalf("the page says of record ids %q", s)
		}
		p.upload("#file", writeBlockFile(t, bl, fmt.Sprintf("block-%d.libsvm", i)))
		p.waitJS("the summary of the file", "!document.getElementById('summary').hidden", 20*time.Second)
		p.click("#join")
		p.waitJS("the server's welcome", "document.body.dataset.registered === '1'", 20*time.Second)
		tabs = append(tabs, p)
	}
	for _, p := range tabs {
		p.waitJS("training to finish", "document.body.dataset.done === '1'", 3*time.Minute)
	}
	t.Logf("%s, 4 tabs: pseudonyms and %d rounds in %.1fs", e.name(), rounds, time.Since(began).Seconds())
	st := waitStatus(t, ts.URL, resp.ID, "the federation to finish", 10*time.Second, func(s server.Status) bool { return s.State == "finished" })
	if len(st.History) != len(want) || st.Config.Pseudonyms != protocol.PseudonymsOPRF {
		t.Fatalf("%s: %d rounds, pseudonyms %q; in process %d", e.name(), len(st.History)-1, st.Config.Pseudonyms, len(want)-1)
	}
	for i, r := range st.History {
		if float64(r.Primal) != want[i].Primal || float64(r.Dual) != want[i].Dual {
			t.Fatalf("%s: round %d: primal %v dual %v; in process with keyed pseudonyms %v %v", e.name(), i, float64(r.Primal), float64(r.Dual), want[i].Primal, want[i].Dual)
		}
	}
	frames := ts.Frames(resp.ID)
	n := 0
	for _, fs := range frames {
		n += len(fs)
	}
	if n == 0 {
		t.Fatal("no frame recorded")
	}
	for _, bl := range blocks {
		for _, id := range bl.IDs {
			p := sec.Pseudonym(id)
			for k, fs := range frames {
				for _, f := range fs {
					if strings.Contains(string(f), p) {
						t.Fatalf("%s: a frame from participant %d holds the keyed pseudonym of id %s", e.name(), k, id)
					}
				}
			}
		}
	}
}
