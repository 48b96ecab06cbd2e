package tab

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
	"github.com/hyfed/hyfed/shared/table"
)

func blocks(t *testing.T) []partition.Block {
	t.Helper()
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:300,12,1,0.05,3", Holdout: 0.2, Partition: "grid:2,2"})
	if err != nil {
		t.Fatal(err)
	}
	return p.Blocks
}

func blockFile(t *testing.T, b *partition.Block, csv bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	write := partition.WriteLIBSVM
	if csv {
		write = partition.WriteCSV
	}
	if err := write(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestLoadSummarizes(t *testing.T) {
	bs := blocks(t)
	for _, csv := range []bool{false, true} {
		b := &bs[1]
		got, s, err := Load("mine", blockFile(t, b, csv), nil, table.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.N() != b.N() || s.Samples != b.N() || s.Features != len(b.Features) || s.NumFeatures != 12 {
			t.Fatalf("csv=%v: summary %+v for a block of %d samples x %d features", csv, s, b.N(), len(b.Features))
		}
		if s.Train+s.Heldout != s.Samples || s.Positive+s.Negative+s.Unlabelled != s.Train || s.Heldout == 0 {
			t.Errorf("csv=%v: counts do not add up: %+v", csv, s)
		}
		if len(s.Preview) != PreviewRows {
			t.Fatalf("csv=%v: %d preview rows", csv, len(s.Preview))
		}
		own := map[int]bool{}
		for _, f := range b.Features {
			own[f] = true
		}
		for i, r := range s.Preview {
			if r.Index != i || r.ID != b.IDs[i] || r.Heldout != b.Heldout[i] {
				t.Fatalf("csv=%v: preview row %d is %+v; the block's row %d is %s, held out %v", csv, i, r, i, b.IDs[i], b.Heldout[i])
			}
			for j, f := range r.Features {
				if !own[f] || r.Values[j] == 0 {
					t.Fatalf("csv=%v: preview row %s has feature %d = %v, not one of the block's non-zeros", csv, r.ID, f, r.Values[j])
				}
			}
		}
		if s.Image {
			t.Error("12 features taken for an image")
		}
	}
}

func TestLoadRefusesWithReasons(t *testing.T) {
	good := string(blockFile(t, &blocks(t)[0], false))
	lines := strings.SplitAfter(good, "\n")
	cases := []struct {
		name, data, want string
	}{
		{"empty", "", "empty"},
		{"plain libsvm", "1 1:0.5 2:1\n-1 3:1\n", "hyfed partition"},
		{"bad value", lines[0] + lines[1] + "1 1:x # r9\n", "bad.libsvm:3"},
		{"no samples", lines[0], "no samples"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Load("bad.libsvm", []byte(c.data), nil, table.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
			// The page shows the message as it is: one hint, not the
			// reader's and a second one around it.
			if n := strings.Count(err.Error(), "hyfed partition"); n > 1 {
				t.Fatalf("error %q gives its hint %d times", err, n)
			}
		})
	}
}

const ownSchema = `{"id": "patient", "label": {"column": "outcome", "positive": ["yes"], "negative": ["no"]},
 "features": [{"name": "age"}, {"name": "smoker", "categories": ["never", "current"]}, {"name": "bmi"}],
 "labels": "shared-with-co-holders", "missing": "mean"}`

// TestLoadOwnFile: with the federation's schema the tab reads the user's
// own CSV file and its summary carries the mapping the page shows.
func TestLoadOwnFile(t *testing.T) {
	sch, err := schema.Parse(strings.NewReader(ownSchema))
	if err != nil {
		t.Fatal(err)
	}
	file := "patient;Age;smoker;outcome;notes\r\np1;50,5;never;yes;x\r\np2;61;current;no;y\r\np3;;never;;z\r\n"
	b, s, err := Load("mine.csv", []byte(file), sch, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := s.Mapping
	if m == nil || b.N() != 3 || s.Samples != 3 || m.Delimiter != "semicolon" || m.Rows != 3 || m.Labelled != 2 || m.Filled != 1 {
		t.Fatalf("summary %+v, mapping %+v", s, m)
	}
	if strings.Join(m.NotHeld, ",") != "bmi" || len(m.Held) != 2 || m.Uses[4].Use != "ignored" {
		t.Fatalf("mapping %+v", m)
	}
	if s.Unlabelled != 1 || s.Image {
		t.Fatalf("summary %+v", s)
	}
	// The delimiter the user chose is the one used.
	if _, _, err := Load("mine.csv", []byte(file), sch, table.Options{Delimiter: ','}); err == nil {
		t.Fatal("a semicolon file read with commas loaded")
	}
	// A category the schema does not list: the file, the line and the column.
	bad := strings.Replace(file, "current", "sometimes", 1)
	_, _, err = Load("mine.csv", []byte(bad), sch, table.Options{})
	if err == nil || !containsAll(err.Error(), "mine.csv:3:", `column "smoker" (3)`, `"sometimes"`) {
		t.Fatalf("error %v", err)
	}
	// A block file is refused in a federation with a schema, and a CSV of
	// one's own in one without.
	if _, _, err := Load("block.libsvm", blockFile(t, &blocks(t)[0], false), sch, table.Options{}); err == nil || !strings.Contains(err.Error(), "your own file") {
		t.Fatalf("a block file in a schema federation: %v", err)
	}
	if _, _, err := Load("mine.csv", []byte(file), nil, table.Options{}); err == nil || !strings.Contains(err.Error(), "no schema") {
		t.Fatalf("an own file without a schema: %v", err)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// events collects one participant's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(typ string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.all {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func startServer(t *testing.T) (*httptest.Server, func(rounds, min int, sec secret.Secret) string) {
	t.Helper()
	srv, err := server.New(server.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); srv.Close() })
	create := func(rounds, min int, sec secret.Secret) string {
		resp, err := srv.Create(server.CreateRequest{
			Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Lambda: 1e-2, Rounds: rounds, IIC: 0.2, Clients: min}})
		if err != nil {
			t.Fatal(err)
		}
		return hs.URL + resp.JoinPath + "&secret=" + sec.String()
	}
	return hs, create
}

// The tab's Run, over real websockets, reports what a page shows: its
// name, every round, and what it sent, split into ciphertexts and
// plaintext numbers.
func TestRunReportsProgressAndWhatLeft(t *testing.T) {
	bs := blocks(t)
	_, create := startServer(t)
	sec, _ := secret.New()
	link := create(4, len(bs), sec)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ev events
	done := make(chan error, 1)
	go func() { done <- Run(ctx, link, Resume{}, &bs[0], session.WebSocket(64<<20), ev.add) }()
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatal(err)
	}
	// The other three join once the first is registered (their order fixes
	// the clients' numbers).
	for len(ev.of("state")) < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	others := []*partition.Block{&bs[1], &bs[2], &bs[3]}
	if _, err := session.RunMany(ctx, l, others, session.Options{Dial: session.WebSocket(64 << 20)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := ev.of("state")
	if st[0].State != "connecting" || st[1].State != "registered" || st[1].Name == "" {
		t.Errorf("states %+v", st)
	}
	prog := ev.of("progress")
	if len(prog) == 0 || prog[len(prog)-1].Round != 4 || prog[len(prog)-1].Rounds != 4 {
		t.Fatalf("last progress %+v, want round 4 of 4", prog[len(prog)-1])
	}
	fin := ev.of("done")
	if len(fin) != 1 || fin[0].Result.Rounds != 4 {
		t.Fatalf("done events %+v", fin)
	}
	sent := ev.of("sent")
	s := sent[len(sent)-1].Sent
	if s.Bytes != fin[0].Result.BytesSent || s.SealedBytes+s.PlainBytes != s.Bytes {
		t.Errorf("sent %+v does not add up to the %d bytes sent", s, fin[0].Result.BytesSent)
	}
	// Grams and inner products leave only sealed; the primal
	// contribution is the plaintext the protocol allows.
	for _, k := range []protocol.Kind{protocol.KindGramPart, protocol.KindIPPart} {
		if ks := s.ByKind[string(k)]; ks == nil || ks.SealedBytes == 0 || ks.PlainNumbers != 0 {
			t.Errorf("%s: %+v, want sealed bytes and no plaintext numbers", k, ks)
		}
	}
	if ks := s.ByKind[string(protocol.KindDirPart)]; ks == nil || ks.PlainNumbers == 0 {
		t.Errorf("dir-part: %+v, want the plaintext direction on the block's features", ks)
	}
	if _, err := json.Marshal(ev.all); err != nil {
		t.Fatal(err)
	}
}

// A link with another secret ends with the server's typed error, which the
// page turns into its message.
func TestRunWrongSecret(t *testing.T) {
	bs := blocks(t)
	_, create := startServer(t)
	sec, _ := secret.New()
	link := create(2, 4, sec)
	other, _ := secret.New()
	link = link[:strings.Index(link, "&secret=")] + "&secret=" + other.String()
	var ev events
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, link, Resume{}, &bs[0], session.WebSocket(64<<20), ev.add); err == nil {
		t.Fatal("joined with a wrong secret")
	}
	errs := ev.of("error")
	if len(errs) != 1 || errs[0].Code != protocol.CodeWrongSecret {
		t.Fatalf("error events %+v, want one %q", errs, protocol.CodeWrongSecret)
	}
}

// Replaying a recorded trace computes the plaintext replies the recorded
// participant sent, every time (the browser's replay is compared with the
// native one by this hash): with the shared key, and with threshold keys
// for a committee member, whose replay switches sums as in the run.
func TestReplayIsFaithful(t *testing.T) {
	bs := blocks(t)
	sec, _ := secret.New()
	cfg := protocol.Config{Lambda: 1e-2, Loss: "hinge", Step: "block", Gamma: 1, Inner: 40, Rounds: 3, Fraction: 1, Clients: len(bs), Seed: 1}
	thr := cfg
	thr.Keys, thr.KeyCommittee, thr.KeyThreshold = protocol.KeysThreshold, 3, 2
	var enc []byte
	for _, tc := range []struct {
		name, scheme string
		cfg          protocol.Config
		client       int
	}{{"shared key", "bgv", cfg, 2}, {"threshold keys, a member", "bgv-threshold", thr, 0}} {
		if err := tc.cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		tr, err := Record(bs, tc.client, sec, tc.cfg, tc.scheme)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if enc, err = tr.Encode(); err != nil {
			t.Fatal(err)
		}
		tr2, err := DecodeTrace(enc)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Replay(tr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, err := Replay(tr2)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if a.Rounds != 3 || a.Replies == 0 || a.PlainHash != b.PlainHash || a.PlainHash != tr.PlainHash {
			t.Fatalf("%s: replays %+v and %+v, the recorded participant's hash %s", tc.name, a, b, tr.PlainHash)
		}
		if member := tc.cfg.Keys == protocol.KeysThreshold; member != (a.SwitchShares > 0) {
			t.Fatalf("%s: the replay answered %d switch requests", tc.name, a.SwitchShares)
		}
		// Another block gives other replies: the hash tells them apart.
		tr2.Block = blockFile(t, &bs[3], false)
		if c, err := Replay(tr2); err == nil && c.PlainHash == a.PlainHash {
			t.Fatalf("%s: a replay with another block has the same hash", tc.name)
		}
	}
	if _, err := DecodeTrace(enc[:len(enc)/2]); err == nil {
		t.Fatal("a truncated trace decoded")
	}
}
