package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// Known fingerprints, computed by Go (secret.Secret.String and
// Fingerprint), which the create page's JavaScript (web/static/hyfed.js)
// must reproduce (TestJSCrypto checks these and 40 random secrets):
//
//	secret.FromSeed(1) = _MuZgQhMYDHKiKSFzsf5AKTPZLtvkbNDF0Qxibzc4bA -> 876a00a95632ee65acc1e113865bdb98
//	secret.FromSeed(2) = RZu_fp9K3NTOtGsNEcE1NJaTZzklxKdAT2FQQG1vtXk -> 6dc6a1f2ed253388964a8b77def65451
var knownFingerprints = [][2]string{
	{"_MuZgQhMYDHKiKSFzsf5AKTPZLtvkbNDF0Qxibzc4bA", "876a00a95632ee65acc1e113865bdb98"},
	{"RZu_fp9K3NTOtGsNEcE1NJaTZzklxKdAT2FQQG1vtXk", "6dc6a1f2ed253388964a8b77def65451"},
}

// TestJSCrypto runs web/static/hyfed.js under node and checks its SHA-256,
// HMAC, base64url and fingerprint against Go's.
func TestJSCrypto(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is needed to test web/static/hyfed.js (CI is set)")
		}
		t.Skip("node not installed")
	}
	type jsCase struct {
		Msg    string `json:"msg"`    // hex
		Key    string `json:"key"`    // hex
		Secret string `json:"secret"` // hex
	}
	rng := rand.New(rand.NewPCG(7, 7))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	var cases []jsCase
	// Every length around the block and padding boundaries, and some long.
	for _, n := range []int{0, 1, 3, 31, 32, 54, 55, 56, 57, 63, 64, 65, 100, 119, 120, 127, 128, 129, 1000, 4097} {
		cases = append(cases, jsCase{Msg: hex.EncodeToString(randBytes(n)), Key: hex.EncodeToString(randBytes(int(rng.Uint32() % 130)))})
	}
	var secrets []secret.Secret
	secrets = append(secrets, secret.FromSeed(1), secret.FromSeed(2))
	for i := 0; i < 40; i++ {
		var s secret.Secret
		copy(s[:], randBytes(32))
		secrets = append(secrets, s)
	}
	for i, s := range secrets {
		if i < len(cases) {
			cases[i].Secret = hex.EncodeToString(s[:])
		} else {
			cases = append(cases, jsCase{Secret: hex.EncodeToString(s[:])})
		}
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	script := `
const fs = require('fs'), vm = require('vm');
vm.runInThisContext(fs.readFileSync(process.argv[1], 'utf8'));
const h = globalThis.hyfed;
const unhex = (s) => Uint8Array.from((s.match(/../g) || []).map((x) => parseInt(x, 16)));
const cases = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = cases.map((c) => {
  const r = {};
  if (c.msg !== undefined) {
    r.sha = h.hex(h.sha256(unhex(c.msg)));
    r.hmac = h.hex(h.hmacSha256(unhex(c.key), unhex(c.msg)));
  }
  if (c.secret) {
    const s = unhex(c.secret);
    r.text = h.b64url(s);
    r.back = h.hex(h.fromB64url(r.text));
    r.fp = h.fingerprint(s);
    r.pseud = h.hex(h.mac(s, 'hyfed pseudonym', new TextEncoder().encode('record-7')).subarray(0, 16));
  }
  return r;
});
process.stdout.write(JSON.stringify(out));
`
	cmd := exec.Command(node, "-e", script, filepath.Join("..", "web", "static", "hyfed.js"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outB, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var out []struct{ SHA, HMAC, Text, Back, FP, Pseud string }
	if err := json.Unmarshal(outB, &out); err != nil || len(out) != len(cases) {
		t.Fatalf("node output %q: %v", outB, err)
	}
	for i, c := range cases {
		if c.Msg != "" || c.Key != "" {
			msg, _ := hex.DecodeString(c.Msg)
			key, _ := hex.DecodeString(c.Key)
			sum := sha256.Sum256(msg)
			if out[i].SHA != hex.EncodeToString(sum[:]) {
				t.Errorf("sha256 of %d bytes: js %s, go %x", len(msg), out[i].SHA, sum)
			}
			m := hmac.New(sha256.New, key)
			m.Write(msg)
			if want := hex.EncodeToString(m.Sum(nil)); out[i].HMAC != want {
				t.Errorf("hmac (key %d bytes, msg %d bytes): js %s, go %s", len(key), len(msg), out[i].HMAC, want)
			}
		}
		if c.Secret != "" {
			var s secret.Secret
			b, _ := hex.DecodeString(c.Secret)
			copy(s[:], b)
			if out[i].Text != s.String() || out[i].Back != c.Secret {
				t.Errorf("secret %s: js text %s back %s, go %s", c.Secret, out[i].Text, out[i].Back, s.String())
			}
			if out[i].FP != s.Fingerprint() {
				t.Errorf("fingerprint of %s: js %s, go %s", s.String(), out[i].FP, s.Fingerprint())
			}
			if out[i].Pseud != s.Pseudonym("record-7") {
				t.Errorf("pseudonym under %s: js %s, go %s", s.String(), out[i].Pseud, s.Pseudonym("record-7"))
			}
		}
	}
	// The vectors in this file's comment (cases 0 and 1 are these secrets).
	for i, kv := range knownFingerprints {
		s := secrets[i]
		if s.String() != kv[0] || s.Fingerprint() != kv[1] || out[i].Text != kv[0] || out[i].FP != kv[1] {
			t.Errorf("secret.FromSeed(%d) = %s, fingerprint %s (js %s %s): want %s %s", i+1, s, s.Fingerprint(), out[i].Text, out[i].FP, kv[0], kv[1])
		}
	}
}

// TestViews runs a BGV and a plaintext federation over websockets and
// checks the model and the server view: their shapes, ciphertext counts
// and sizes, no plaintext dual value under BGV, readable ones in plaintext,
// and the layout the view assumes against the slots the participants got.
func TestViews(t *testing.T) {
	for _, scheme := range []string{"bgv", "plaintext"} {
		t.Run(scheme, func(t *testing.T) { testViews(t, scheme, false) })
	}
	t.Run("bgv sealed primal", func(t *testing.T) { testViews(t, "bgv", true) })
}

func testViews(t *testing.T, scheme string, sealPrimal bool) {
	p := smallData(t)
	ts := startServer(t, t.TempDir())
	sec := secret.FromSeed(5)
	const rounds = 12
	l, fed := ts.create(t, CreateRequest{Name: "views " + scheme, Config: protocol.Config{Lambda: 1e-2, Rounds: rounds, IIC: 0.2, Seed: 5, Clients: len(p.Blocks), NumFeatures: p.Data.M(), SealPrimal: sealPrimal}}, sec, scheme)

	for _, path := range []string{"/model", "/server-view"} {
		if code := ts.call(t, "GET", "/api/federations/nosuch"+path, "", nil, &apiError{}); code != 404 {
			t.Fatalf("%s of an unknown federation: HTTP %d", path, code)
		}
	}
	// Before training: no w, nothing sealed held.
	raw := ts.get(t, "/api/federations/"+fed.ID+"/model")
	var m0 map[string]any
	if err := json.Unmarshal(raw, &m0); err != nil {
		t.Fatal(err)
	}
	if w, ok := m0["w"]; !ok || w != nil || m0["round"] != 0.0 || m0["num_features"] != float64(p.Data.M()) {
		t.Fatalf("model before training: %s", raw)
	}
	var v0 ServerView
	if err := json.Unmarshal(ts.get(t, "/api/federations/"+fed.ID+"/server-view"), &v0); err != nil {
		t.Fatal(err)
	}
	if v0.State != "waiting" || v0.SealedAsOfRound != nil || v0.W != nil || v0.Dual != nil || len(v0.Participants) != 0 {
		t.Fatalf("server view before training: %+v", v0)
	}

	// Each participant on its own session, to learn its name and the slots
	// the coordinator gave its samples.
	var mu sync.Mutex
	slotsByName := map[string][]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make(chan error, len(p.Blocks))
	for i := range p.Blocks {
		b := &p.Blocks[i]
		var name string
		go func() {
			_, err := session.Run(ctx, l, b, session.Options{Dial: dialer(), RetryFor: 20 * time.Second,
				OnWelcome: func(_, n string) { mu.Lock(); name = n; mu.Unlock() },
				OnMessage: func(m *protocol.Message) {
					if m.Kind == protocol.KindSetup && m.Setup != nil {
						mu.Lock()
						slotsByName[name] = append([]int(nil), m.Setup.Slots...)
						mu.Unlock()
					}
				}})
			errs <- err
		}()
		// Register one after the other, so names follow block order.
		waitFor(t, "registration", 30*time.Second, func() bool { return len(ts.status(t, fed.ID).Participants) > i })
	}
	for range p.Blocks {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var v ServerView
	waitFor(t, "the last checkpoint", 30*time.Second, func() bool {
		raw = ts.get(t, "/api/federations/"+fed.ID+"/server-view")
		v = ServerView{}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v.SealedAsOfRound != nil && *v.SealedAsOfRound == rounds
	})

	// The last iterate, which the server view shows (the handed-out
	// model is the best round's).
	var model ModelView
	if err := json.Unmarshal(ts.get(t, "/api/federations/"+fed.ID+"/model?iterate=last"), &model); err != nil {
		t.Fatal(err)
	}
	if model.Round != rounds || model.NumFeatures != p.Data.M() || len(model.W) != p.Data.M() {
		t.Fatalf("model: round %d, %d features, %d values", model.Round, model.NumFeatures, len(model.W))
	}

	// What the privacy view shows is said in words (field names aside).
	if n := hasNotation(strings.ReplaceAll(string(raw), `"hat_w":`, "")); n != "" {
		t.Errorf("the server view says %q: %s", n, raw)
	}
	// The shape, as a page reads it.
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "state", "round", "scheme", "server_can_read_dual_values", "note", "num_features",
		"slots_per_ciphertext", "sealed_as_of_round", "dual", "norms", "w", "participants", "also_plaintext", "key_mode"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("server view without %q", k)
		}
	}
	if km := v.KeyMode; km == nil || km.Mode != map[string]string{"bgv": "shared", "plaintext": "none"}[scheme] || len(km.Opens) < 2 || km.Colluder == "" {
		t.Fatalf("server view: key mode %+v", km)
	}
	if v.Scheme != scheme || v.State != "finished" || v.NumFeatures != p.Data.M() || v.SlotsPerCipher != 4096 {
		t.Fatalf("server view: %+v", v)
	}
	if v.W == nil || v.W.Count != p.Data.M() || len(v.W.Values) != p.Data.M() || len(v.W.Head) != viewHead {
		t.Fatalf("w: %+v", v.W)
	}
	for i := range model.W {
		if v.W.Values[i] != model.W[i] {
			t.Fatalf("w[%d]: server view %v, model %v", i, v.W.Values[i], model.W[i])
		}
	}
	// 3 sample groups, one ciphertext each.
	if v.Dual == nil || v.Dual.Ciphertexts != 3 || v.Dual.Bytes <= 0 || v.Norms == nil || v.Norms.Ciphertexts != 3 || v.Norms.Bytes <= 0 {
		t.Fatalf("sealed totals: dual %+v norms %+v", v.Dual, v.Norms)
	}
	if len(v.Participants) != len(p.Blocks) {
		t.Fatalf("%d participants in the view", len(v.Participants))
	}
	for i, pv := range v.Participants {
		b := p.Blocks[i]
		if pv.Samples != len(b.IDs) || pv.Features != len(b.Features) {
			t.Errorf("%s: %d samples %d features, block %d %d", pv.Name, pv.Samples, pv.Features, len(b.IDs), len(b.Features))
		}
		if pv.Dual == nil || pv.Dual.Ciphertexts != 1 || pv.Dual.Bytes <= 0 || pv.Dual.Values != len(b.IDs) ||
			pv.Norms == nil || pv.Norms.Ciphertexts != 1 || pv.RoundAggregates == nil || pv.RoundAggregates.Bytes <= 0 {
			t.Errorf("%s: sealed %+v %+v %+v", pv.Name, pv.Dual, pv.Norms, pv.RoundAggregates)
		}
		if sealPrimal {
			// The server holds no participant's primal contribution or
			// change of one: only their sum, w.
			if pv.HatW != nil || pv.Change != nil || !pv.PrimalSealed {
				t.Errorf("%s under sealed primal: hat_w %+v, change %+v, sealed %v", pv.Name, pv.HatW, pv.Change, pv.PrimalSealed)
			}
		} else if pv.Change == nil || pv.Change.Count != len(b.Features) || pv.PrimalSealed {
			t.Errorf("%s: the last plaintext change of hat_w is %+v (sealed %v)", pv.Name, pv.Change, pv.PrimalSealed)
		}
		switch {
		case sealPrimal:
		case pv.HatW == nil || pv.HatW.Count != len(b.Features) || len(pv.HatW.Features) != len(b.Features):
			t.Errorf("%s: hat_w %+v", pv.Name, pv.HatW)
		default:
			for j, fi := range pv.HatW.Features {
				if fi != b.Features[j] {
					t.Errorf("%s: hat_w feature %d is %d, block's %d", pv.Name, j, fi, b.Features[j])
					break
				}
			}
		}
		if got, want := slotsByName[pv.Name], ts.heldSlots(t, fed.ID, i); !equalInts(got, want) {
			t.Errorf("%s: the coordinator gave slots %v..., the view assumes %v...", pv.Name, head(got), head(want))
		}
	}
	if scheme == "bgv" {
		if v.ServerCanReadDual || strings.Contains(string(raw), "readable_values") {
			t.Fatalf("a BGV federation's server view shows readable dual values: %s", raw)
		}
		for _, pv := range v.Participants {
			if pv.Dual.Form != formBGV {
				t.Fatalf("form %q", pv.Dual.Form)
			}
		}
		// Dual values are fixed point, a multiple of 2^-28: none may
		// appear among the numbers of the view other than w, hat_w and
		// its change.
		var stripped map[string]any
		json.Unmarshal(raw, &stripped)
		delete(stripped, "w")
		for _, pv := range stripped["participants"].([]any) {
			delete(pv.(map[string]any), "hat_w")
			delete(pv.(map[string]any), "change")
		}
		if n := countFloats(stripped); n != 0 {
			t.Fatalf("%d non-integer numbers in the sealed part of the view", n)
		}
		return
	}
	if !v.ServerCanReadDual || !strings.Contains(v.Note, "WITHOUT encryption") {
		t.Fatalf("plaintext federation: %+v", v)
	}
	nonzero := false
	for _, pv := range v.Participants {
		if pv.Dual.Form != formPlain || len(pv.Dual.Readable) != viewHead {
			t.Fatalf("%s: plaintext dual %+v", pv.Name, pv.Dual)
		}
		for _, x := range pv.Dual.Readable {
			nonzero = nonzero || x != 0
		}
	}
	if !nonzero {
		t.Fatal("after training every readable dual value is zero")
	}
}

func (ts *testServer) get(t *testing.T, path string) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", ts.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok := ts.tokenFor(path); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: HTTP %d %s %v", path, resp.StatusCode, b, err)
	}
	return b
}

func (ts *testServer) heldSlots(t *testing.T, id string, k int) []int {
	t.Helper()
	f := ts.federation(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.coord.Held()
	if k >= len(h.Clients) || h.Clients[k].Slots == nil {
		t.Fatalf("no layout for client %d", k)
	}
	return append([]int(nil), h.Clients[k].Slots...)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func head(x []int) []int { return x[:min(len(x), 5)] }

// countFloats counts the non-integer numbers in a decoded JSON value.
func countFloats(v any) int {
	switch x := v.(type) {
	case float64:
		if x != float64(int64(x)) {
			return 1
		}
	case map[string]any:
		n := 0
		for _, e := range x {
			n += countFloats(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += countFloats(e)
		}
		return n
	}
	return 0
}

// TestPages serves the pages this file's endpoints feed, and the script.
func TestPages(t *testing.T) {
	ts := startServer(t, t.TempDir())
	for _, tc := range []struct{ path, want string }{
		{"/federations/abc", `id="chart-loss"`},
		{"/federations/abc/privacy", "In your browser tab (never sent)"},
		{"/new", "getRandomValues"},
		{"/static/hyfed.js", "hmacSha256"},
	} {
		if b := ts.get(t, tc.path); !bytes.Contains(b, []byte(tc.want)) {
			t.Errorf("%s does not contain %q", tc.path, tc.want)
		}
	}
}

// TestKeyModeView: the key mode in words for the cases a live federation
// test does not reach: t = 3 (the server with up to two participants), a
// committee member back without its share, names beyond the seats, and a
// threshold federation before its key setup (t from the configuration).
func TestKeyModeView(t *testing.T) {
	cfg := protocol.Defaults()
	cfg.Keys, cfg.KeyCommittee, cfg.KeyThreshold = protocol.KeysThreshold, 5, 3
	v := keyMode(cfg, "bgv-threshold", []string{"a", "b", "c", "d"}, []int{0, 1, 2, 3, 4}, []bool{true, false, true, true, true}, 3)
	got := []string{}
	for _, m := range v.Committee {
		got = append(got, fmt.Sprintf("%s %v", m.Name, m.HoldsShare))
	}
	if v.Mode != "threshold" || v.Threshold != 3 || strings.Join(got, ", ") != "a true, b false, c true, d true, participant 4 true" ||
		v.Opens[1].Who != "the server with up to 2 participants, committee members or not" ||
		!strings.Contains(v.Opens[2].Who, "3 committee members") || !strings.Contains(v.Summary, "3-of-5") || !strings.Contains(v.Colluder, "it takes 3") {
		t.Fatalf("3-of-5: %+v (committee %v)", v, got)
	}
	before := keyMode(cfg, "bgv-threshold", nil, nil, nil, 0)
	if before.Threshold != 3 || len(before.Committee) != 0 || !strings.Contains(before.Summary, "3-of-5") {
		t.Fatalf("before the key setup: %+v", before)
	}
	for _, k := range []*KeyModeView{v, before, keyMode(protocol.Defaults(), "bgv", nil, nil, nil, 0), keyMode(protocol.Defaults(), "plaintext", nil, nil, nil, 0)} {
		for _, s := range append([]string{k.Summary, k.Colluder}, func() (o []string) {
			for _, l := range k.Opens {
				o = append(o, l.Who, l.Opens)
			}
			return o
		}()...) {
			if n := hasNotation(s); n != "" {
				t.Errorf("%s key mode says %q: %s", k.Mode, n, s)
			}
		}
	}
}
