package server

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/hyfed/hyfed/shared/protocol"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/secret"
)

// TestAPI walks the organizer's path: create, health, status without
// secrets, admin actions with and without the token, the event stream,
// and bad requests with errors that name the field.
func TestAPI(t *testing.T) {
	p := smallData(t)
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(2)
	l, fed := ts.create(t, CreateRequest{Name: "api test", PStar: 0.25, Config: protocol.Config{Lambda: 1e-2, Rounds: 40, IIC: 0.2, Seed: 2, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, sec, "bgv")
	if st := ts.status(t, fed.ID); st.Config.PStar != 0.25 {
		t.Fatalf("status pstar %v, want the 0.25 given at creation (the pages plot the relative loss with it)", st.Config.PStar)
	}

	var health map[string]any
	if code := ts.call(t, "GET", "/healthz", "", nil, &health); code != 200 || health["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, health)
	}
	for _, tc := range []struct {
		body, want string
	}{
		{`{"min_participants":2,"rounds":10,"lambda":-1}`, "lambda"},
		{`{"min_participants":0,"rounds":10}`, "min_participants"},
		{`{"min_participants":2,"rounds":10,"loss":"square"}`, "square"},
		{`{"min_participants":2,"rounds":10,"roundz":3}`, "roundz"},
		{`{"min_participants":2,"rounds":10,"round_timeout":"soon"}`, "soon"},
		{`{"min_participants":2,"rounds":10,"algo":"fedavg"}`, "fedavg"},
		{`{"min_participants":2,"rounds":10,"pstar":-0.5}`, "pstar"},
		// A value given is used as given: no silent default for 0.
		{`{"min_participants":2,"rounds":10,"lambda":0}`, "lambda"},
		{`{"min_participants":2,"rounds":10,"iic":0}`, "IIC"},
		// Threshold keys split a key: plaintext has none.
		{`{"min_participants":2,"rounds":10,"keys":"threshold","scheme":"plaintext"}`, "no key to split"},
		{`{"min_participants":2,"rounds":10,"scheme":"bgv-threshold"}`, "scheme bgv-threshold"},
		{`{"min_participants":2,"rounds":10,"keys":"nobody"}`, "keys"},
	} {
		var e apiError
		req, _ := http.NewRequest("POST", ts.http.URL+"/api/federations", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testCreateToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: HTTP %d %q, want 400 naming %q", tc.body, resp.StatusCode, e.Error, tc.want)
		}
	}
	// A field left out takes protocol.Defaults.
	var made CreateResponse
	if code := ts.call(t, "POST", "/api/federations", testCreateToken, map[string]any{"min_participants": 2}, &made); code != 201 {
		t.Fatalf("create with defaults: HTTP %d", code)
	}
	if c, d := ts.status(t, made.ID).Config, protocol.Defaults(); c.Lambda != d.Lambda || c.IIC != d.IIC || c.Rounds != d.Rounds || c.Step != d.Step || c.Loss != d.Loss {
		t.Fatalf("a request without settings made %+v, want the defaults %+v", c.Config, d)
	}
	if code := ts.call(t, "GET", "/api/federations/nosuch", "", nil, &apiError{}); code != 404 {
		t.Fatalf("unknown federation: HTTP %d", code)
	}
	if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/pause", "wrong", nil, &apiError{}); code != 401 {
		t.Fatalf("pause with a wrong token: HTTP %d", code)
	}
	if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/pause", fed.InviteToken, nil, &apiError{}); code != 401 {
		t.Fatalf("pause with the invite token: HTTP %d", code)
	}

	// The event stream: the status first, then rounds as they finish.
	req, _ := http.NewRequest("GET", ts.http.URL+"/api/federations/"+fed.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+fed.ViewerToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
		close(events)
	}()
	first := <-events
	var st0 Status
	if err := json.Unmarshal([]byte(first), &st0); err != nil || st0.ID != fed.ID || st0.State != "waiting" {
		t.Fatalf("first event %s: %v", first, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := runAll(ctx, l, blockPtrs(p.Blocks))
		done <- err
	}()
	// Pause once training runs: the round in progress completes, then the
	// federation waits; resume lets it finish.
	waitFor(t, "round 5", 30*time.Second, func() bool { return ts.status(t, fed.ID).Round >= 5 })
	var st Status
	if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/pause", fed.AdminToken, nil, &st); code != 200 {
		t.Fatalf("pause: HTTP %d", code)
	}
	waitFor(t, "paused", 30*time.Second, func() bool { return ts.status(t, fed.ID).State == "paused" })
	held := ts.status(t, fed.ID).Round
	time.Sleep(200 * time.Millisecond)
	if r := ts.status(t, fed.ID).Round; r != held {
		t.Fatalf("paused at round %d, now %d", held, r)
	}
	if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/resume", fed.AdminToken, nil, &st); code != 200 {
		t.Fatalf("resume: HTTP %d", code)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st = ts.status(t, fed.ID)
	if st.State != "finished" || len(st.History) != 41 {
		t.Fatalf("state %s, %d rounds", st.State, len(st.History))
	}
	raw, _ := json.Marshal(st)
	for _, s := range []string{fed.AdminToken, fed.ViewerToken, fed.InviteToken, sec.String()} {
		if strings.Contains(string(raw), s) {
			t.Fatal("the status shows a token or the secret")
		}
	}
	for _, pv := range st.Participants {
		if pv.Name == "" || pv.Samples == 0 || pv.State != "finished" {
			t.Fatalf("participant %+v after the end, want state finished", pv)
		}
	}
	// The model handed out is the round with the lowest primal, and the
	// status and GET .../model agree on it.
	best := 0
	for i, r := range st.History {
		if float64(r.Primal) < float64(st.History[best].Primal) {
			best = i
		}
	}
	var mv ModelView
	if code := ts.call(t, "GET", "/api/federations/"+fed.ID+"/model", fed.ViewerToken, nil, &mv); code != 200 {
		t.Fatalf("model: HTTP %d", code)
	}
	if st.Model == nil || !st.Model.Best || st.Model.Round != st.History[best].Round || st.Model.Primal != st.History[best].Primal ||
		mv.ModelRound != st.Model.Round || !mv.Best || mv.Primal != st.Model.Primal || len(mv.W) != p.Data.M() {
		t.Fatalf("model %+v, /model round %d best %v primal %v (%d weights); the lowest primal is round %d's %v",
			st.Model, mv.ModelRound, mv.Best, mv.Primal, len(mv.W), st.History[best].Round, st.History[best].Primal)
	}
	var lastMV ModelView
	if code := ts.call(t, "GET", "/api/federations/"+fed.ID+"/model?iterate=last", fed.ViewerToken, nil, &lastMV); code != 200 || lastMV.ModelRound != 40 || lastMV.Best || len(lastMV.W) != p.Data.M() {
		t.Fatalf("the last iterate: HTTP %d, round %d, best %v", code, lastMV.ModelRound, lastMV.Best)
	}
	if code := ts.call(t, "GET", "/api/federations/"+fed.ID+"/model?iterate=first", fed.ViewerToken, nil, &apiError{}); code != 400 {
		t.Fatalf("iterate=first: HTTP %d, want 400", code)
	}
	rounds, states := 0, map[string]bool{}
	timeout := time.After(10 * time.Second)
	for rounds < 41 {
		select {
		case e := <-events:
			var ev event
			json.Unmarshal([]byte(e), &ev)
			if ev.Type == "round" {
				rounds++
			}
			if ev.Type == "state" {
				states[ev.State] = true
			}
		case <-timeout:
			t.Fatalf("%d round events, want 41", rounds)
		}
	}
	// Each state the federation passed through was an event, also the
	// ones no call made (pausing -> paused when the round completed).
	for _, s := range []string{"running", "pausing", "paused"} {
		if !states[s] {
			t.Errorf("no state event %q (got %v)", s, states)
		}
	}
	if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/stop", fed.AdminToken, nil, &apiError{}); code != 409 {
		t.Fatalf("stopping a finished federation: HTTP %d", code)
	}
}

// A federation without encryption is refused unless the server was started
// for an insecure demonstration, and is marked insecure when admitted.
func TestPlaintextNeedsInsecureDemo(t *testing.T) {
	sec := secret.FromSeed(4)
	for _, insecure := range []bool{false, true} {
		ts := startServerWith(t, t.TempDir(), func(o *Options) { o.InsecureDemo = insecure })
		req := CreateRequest{Scheme: "plaintext", Fingerprint: sec.Fingerprint(), Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}}
		var resp CreateResponse
		var e apiError
		out := any(&resp)
		if !insecure {
			out = &e
		}
		code := ts.call(t, "POST", "/api/federations", "", req, out)
		switch {
		case !insecure && (code != 400 || !strings.Contains(e.Error, "--insecure-demo")):
			t.Fatalf("plaintext without --insecure-demo: HTTP %d %q", code, e.Error)
		case insecure && code != 201:
			t.Fatalf("plaintext with --insecure-demo: HTTP %d", code)
		case insecure:
			if st := ts.status(t, resp.ID); !st.Insecure || st.Config.Scheme != "plaintext" {
				t.Fatalf("status insecure %v scheme %q", st.Insecure, st.Config.Scheme)
			}
			var list []Summary
			ts.call(t, "GET", "/api/federations", "", nil, &list)
			if len(list) != 1 || !list[0].Insecure {
				t.Fatalf("list %+v: the federation is not marked insecure", list)
			}
		}
		// An encrypted federation is never marked.
		if st := ts.status(t, ts.mustCreateBGV(t, sec)); st.Insecure {
			t.Fatal("a BGV federation marked insecure")
		}
	}
}

func (ts *testServer) mustCreateBGV(t *testing.T, sec secret.Secret) string {
	t.Helper()
	var resp CreateResponse
	if code := ts.call(t, "POST", "/api/federations", "", CreateRequest{Fingerprint: sec.Fingerprint(), Config: protocol.Config{Lambda: protocol.DefaultLambda, IIC: protocol.DefaultIIC, Rounds: 3, Clients: 2}}, &resp); code != 201 {
		t.Fatalf("create: HTTP %d", code)
	}
	return resp.ID
}
