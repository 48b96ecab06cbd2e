package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/demo"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/session"
	"github.com/hyfed/hyfed/shared/table"
)

// make run's flow: hyfed serve --demo, one participant takes a demo block
// from the page's endpoint, the dashboard's "fill the free seats" runs the
// rest as simulated participants, and training finishes.
func TestDemoBlocksAndFill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- runServe(ctx, []string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--demo",
			"--demo-partition", "quadrants:1", "--demo-rounds", "6", "--insecure-demo"}, pw, io.Discard)
		pw.Close()
	}()
	lines := map[string]string{}
	sc := bufio.NewScanner(pr)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "open the join link") {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			lines[k] = v
		}
	}
	go io.Copy(io.Discard, pr)
	if lines["join"] == "" || lines["dashboard"] == "" {
		t.Fatalf("hyfed serve --demo printed %v", lines)
	}
	l, err := session.ParseLink(lines["join"])
	if err != nil {
		t.Fatal(err)
	}
	api, admin := apiOf(t, lines["dashboard"])
	get := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequest("GET", api+path, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return b
	}
	// --insecure-demo: the same demo without encryption beside it, marked.
	if !strings.Contains(lines["insecure join"], "&secret=plaintext:") {
		t.Fatalf("insecure join link %q, want a plaintext: secret", lines["insecure join"])
	}
	var ist server.Status
	iapi, iadmin := apiOf(t, lines["insecure dashboard"])
	req0, _ := http.NewRequest("GET", iapi, nil)
	req0.Header.Set("Authorization", "Bearer "+iadmin)
	resp0, err := http.DefaultClient.Do(req0)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp0.Body).Decode(&ist)
	resp0.Body.Close()
	if !ist.Insecure || ist.Config.Scheme != "plaintext" || !ist.Demo || ist.Config.PStar <= 0 || !ist.Curious {
		t.Fatalf("insecure demo status: insecure %v scheme %q demo %v pstar %v curious %v (--demo turns the curious server on)",
			ist.Insecure, ist.Config.Scheme, ist.Demo, ist.Config.PStar, ist.Curious)
	}
	var list []server.DemoBlock
	if err := json.Unmarshal(get("/demo-blocks"), &list); err != nil || len(list) != 4 {
		t.Fatalf("demo blocks %v %v", list, err)
	}
	// The demo is a schema federation: its blocks are named CSV files of
	// raw pixels, read as a participant's own file.
	var st server.Status
	json.Unmarshal(get(""), &st)
	sch := st.Config.Schema
	if sch == nil || sch.NumColumns() != 785 || sch.Features[0].Scale != 255 || ist.Config.Schema == nil {
		t.Fatalf("demo schema %+v (insecure demo's: %v), want 784 pixels declared at 255 and an intercept", sch, ist.Config.Schema != nil)
	}
	file := get("/demo-blocks/2")
	if list[2].File != "demo-block-2.csv" || !bytes.HasPrefix(file, []byte("id,label,px_")) {
		t.Fatalf("block 2: listed as %+v, starts %.40q", list[2], file)
	}
	b, mapping, err := table.Load(list[2].File, file, sch, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if mapping == nil || b.N() != list[2].Samples || len(b.Features) != list[2].Features+1 || b.Raw == nil {
		t.Fatalf("block 2: %d x %d (mapping %v), listed as %+v", b.N(), len(b.Features), mapping != nil, list[2])
	}
	// Loading a block takes no seat (a page left without joining leaves it
	// free); joining with it does.
	json.Unmarshal(get("/demo-blocks"), &list)
	for _, e := range list {
		if e.Taken {
			t.Fatalf("after handing out block 2, before anyone joined: %+v, want every block free", list)
		}
	}
	done := make(chan error, 1)
	welcomed := make(chan struct{})
	go func() {
		var once sync.Once
		_, err := session.Run(ctx, l, b, session.Options{Dial: session.WebSocket(64 << 20),
			OnWelcome: func(string, string) { once.Do(func() { close(welcomed) }) },
			OnRetry:   func(err error, _ time.Duration) { t.Logf("participant reconnects: %v", err) }})
		done <- err
	}()
	<-welcomed
	json.Unmarshal(get("/demo-blocks"), &list)
	for _, e := range list {
		if e.Taken != (e.Block == 2) {
			t.Fatalf("after a participant joined with block 2: %+v, want only block 2 taken", list)
		}
	}
	// Filling the seats is the organizer's: not with the invite.
	post := func(tok string) *http.Response {
		req, _ := http.NewRequest("POST", api+"/fill", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := post(l.Invite); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("fill with the invite: %s, want 401", r.Status)
	}
	resp := post(admin)
	var fill struct {
		Started int   `json:"started"`
		Blocks  []int `json:"blocks"`
	}
	json.NewDecoder(resp.Body).Decode(&fill)
	resp.Body.Close()
	if resp.StatusCode != 200 || fill.Started != 3 || len(fill.Blocks) != 3 {
		t.Fatalf("fill: %s %+v, want 3 seats (blocks 0, 1, 3)", resp.Status, fill)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(get(""), &st)
	if st.State != "finished" || st.Round != 6 || len(st.Participants) != 4 {
		t.Fatalf("status: %s, round %d, %d participants", st.State, st.Round, len(st.Participants))
	}
	// The model, as a join page downloads it with its invite: it scores
	// raw values, and hyfed predict on the demo's files (pooled, the
	// held-out samples) gives the held-out accuracy the dashboard shows.
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.model")
	for _, f := range []struct{ format, file string }{{"liblinear", path}, {"json", path + ".json"}} {
		req, _ := http.NewRequest("GET", api+"/model?format="+f.format, nil)
		req.Header.Set("Authorization", "Bearer "+l.Invite)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("model %s: %s %s", f.format, resp.Status, b)
		}
		os.WriteFile(f.file, b, 0o644)
	}
	m, info, err := model.ReadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Data != "mnist" || info.Partition != "quadrants:1" || info.Schema == nil || len(info.Weights) != 785 ||
		info.Weights[29].Name != "px_1_1" || info.Weights[784].Name != schema.InterceptName || m.Bias != 1 ||
		st.Model == nil || info.ModelRound != st.Model.Round {
		t.Fatalf("demo model sidecar %+v, status model %+v", info, st.Model)
	}
	var own []*partition.Block
	for k := range list {
		b, _, err := table.Load(list[k].File, get("/demo-blocks/"+strconv.Itoa(k)), sch, table.Options{})
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, b)
	}
	raw, err := demo.Pool(sch, own)
	if err != nil {
		t.Fatal(err)
	}
	held := filepath.Join(dir, "heldout.csv")
	var buf bytes.Buffer
	if err := demo.WriteCSV(&buf, sch, raw, func(i int) bool { return raw.Heldout[i] }); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(held, buf.Bytes(), 0o644)
	var pout, perr bytes.Buffer
	if code := run(ctx, []string{"predict", "--model", path, "--data", held}, &pout, &perr); code != 0 {
		t.Fatalf("predict: %s", perr.String())
	}
	var pred struct {
		Accuracy float64 `json:"accuracy"`
		Labelled int     `json:"labelled"`
	}
	if err := json.Unmarshal(pout.Bytes(), &pred); err != nil {
		t.Fatal(err)
	}
	if d := pred.Accuracy - float64(st.Model.HeldoutAccuracy); pred.Labelled < 900 || !(d <= 1e-9 && d >= -1e-9) {
		t.Fatalf("predict on the %d held-out samples: accuracy %v, the dashboard's %v", pred.Labelled, pred.Accuracy, st.Model.HeldoutAccuracy)
	}
	// The dashboard's relative loss is against the optimum of the table
	// the federation trains: the pooled files, pixels/255, the intercept
	// at 1. The model's primal on it is the one the status reports (to the
	// sealed inner products' fixed-point precision: 4e-8 measured).
	tr, err := demo.Trained(sch, raw)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := central.Solve(ctx, tr, central.Config{Lambda: demoLambda, Loss: loss.Hinge{}, Tol: 1e-9, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, len(info.Weights))
	for j, x := range info.Weights {
		w[j] = x.Weight
	}
	p, _, _, _ := central.Objectives(tr, loss.Hinge{}, demoLambda, w, nil)
	if math.Abs(st.Config.PStar-opt.Primal) > 1e-9*opt.Primal || math.Abs(p-float64(st.Model.Primal)) > 1e-6*p {
		t.Fatalf("P*: the status' %v, the pooled table's %v; the model's primal on it %v, the status' %v", st.Config.PStar, opt.Primal, p, st.Model.Primal)
	}
	// No seats are left, and a second fill says so.
	resp = post(admin)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("second fill: %s, want 409", resp.Status)
	}
	// A page that loads a demo block and leaves without joining takes no
	// seat: "fill the free seats" fills them all (the insecure demo's 4).
	ireq := func(method, path string) *http.Response {
		req, _ := http.NewRequest(method, iapi+path, nil)
		req.Header.Set("Authorization", "Bearer "+iadmin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	r := ireq("GET", "/demo-blocks/1")
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("insecure demo block 1: %s", r.Status)
	}
	r = ireq("POST", "/fill")
	fill.Started, fill.Blocks = 0, nil
	json.NewDecoder(r.Body).Decode(&fill)
	r.Body.Close()
	if r.StatusCode != 200 || fill.Started != 4 {
		t.Fatalf("fill after a block was loaded but nobody joined: %s %+v, want all 4 seats", r.Status, fill)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// apiOf turns a printed dashboard URL (/federations/<id>#admin=<token>)
// into the federation's API base and the token.
func apiOf(t *testing.T, dashboard string) (api, token string) {
	t.Helper()
	u, tok, ok := strings.Cut(dashboard, "#admin=")
	if !ok {
		t.Fatalf("dashboard %q: no admin token after '#'", dashboard)
	}
	return strings.Replace(u, "/federations/", "/api/federations/", 1), tok
}

// TestDemoConvergesForEverySeed: make run's demo federation (its files,
// read as participants read them, partition and settings, everyone
// present) brings the relative loss below 1e-2 before round 100 whatever
// the seed, which draws the picks and the secret: the demo must converge
// for every visitor, not for a lucky seed. In process and without
// encryption: an encrypted run computes the same numbers bit for bit.
func TestDemoConvergesForEverySeed(t *testing.T) {
	if testing.Short() {
		t.Skip("five federations of 100 rounds on MNIST")
	}
	d, err := demo.Load("mnist", demoPartition)
	if err != nil {
		t.Skip(err) // make data
	}
	own, err := d.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	p := &experiment.Prepared{Data: d.Trained}
	for _, b := range own {
		p.Blocks = append(p.Blocks, *b)
	}
	r, err := central.Solve(context.Background(), d.Trained, central.Config{Lambda: demoLambda, Loss: loss.Hinge{}, Tol: 1e-9, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 5; seed++ {
		s, err := experiment.RunPrepared(context.Background(), p, experiment.Options{Partition: demoPartition, Seed: seed, Plaintext: true, PStar: r.Primal, Config: demoConfig(d, 99, false)})
		if err != nil {
			t.Fatal(err)
		}
		at := s.RoundsTo["0.01"]
		t.Logf("seed %d: relative loss below 1e-2 at round %d; %.3g after 99 rounds (the model: %.3g, round %d)", seed, at, s.RelativeLoss, float64(s.BestRelativeLoss), s.BestRound)
		if at < 0 || !(float64(s.BestRelativeLoss) < 1e-2) {
			t.Errorf("seed %d: the demo's model is at relative loss %.3g after 99 rounds, want below 1e-2", seed, float64(s.BestRelativeLoss))
		}
	}
}
