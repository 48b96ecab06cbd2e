package server

import (
	"context"
	"fmt"
	"github.com/hyfed/hyfed/shared/protocol"
	"math"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// attackData: 4 blocks (grid:2,2) of 150 samples on 20 features each, so
// that the inner-product attack needs about 20 rounds for full rank.
func attackData(t *testing.T) *experiment.Prepared {
	t.Helper()
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:300,40,1,0.05,3", Partition: "grid:2,2"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func curiousServer(t *testing.T) *testServer {
	t.Helper()
	return startServerWith(t, t.TempDir(), func(o *Options) { o.Curious = true })
}

func attackRequest(rounds int) CreateRequest {
	return CreateRequest{Config: protocol.Config{Loss: "logistic", Lambda: 1e-3, IIC: 0.2, Rounds: rounds, Seed: 4, Clients: 4, NumFeatures: 40}}
}

// waitAttack polls GET .../attack until every participant has a
// reconstruction from round `round` on, and returns it.
func waitAttack(t *testing.T, ts *testServer, id string, round int) AttackView {
	t.Helper()
	var v AttackView
	waitFor(t, fmt.Sprintf("the attack at round %d", round), 30*time.Second, func() bool {
		v = AttackView{}
		if code := ts.call(t, "GET", "/api/federations/"+id+"/attack", "", nil, &v); code != 200 {
			t.Fatalf("attack: HTTP %d", code)
		}
		for _, p := range v.Participants {
			if p.ReconstructedRound == nil || *p.ReconstructedRound < round {
				return false
			}
		}
		return len(v.Participants) == 4
	})
	return v
}

// TestAttackProgress: in an insecure federation the curious server's
// equations and rank grow with the rounds until every row is determined;
// under BGV it reads nothing, however long it watches.
func TestAttackProgress(t *testing.T) {
	p := attackData(t)
	blocks := blockPtrs(p.Blocks)
	for _, c := range []struct {
		scheme string
		rounds int
	}{{"plaintext", 30}, {"bgv", 6}} {
		t.Run(c.scheme, func(t *testing.T) {
			ts := curiousServer(t)
			l, fed := ts.create(t, attackRequest(c.rounds), secret.FromSeed(4), c.scheme)
			if !ts.status(t, fed.ID).Curious {
				t.Fatal("the status does not say that the curious server runs")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			var res []*session.Result
			go func() {
				var err error
				res, err = runAll(ctx, l, blocks)
				done <- err
			}()
			var mid AttackView
			if c.scheme == "plaintext" {
				// Hold the federation at a round boundary long before full
				// rank, and look.
				waitFor(t, "round 6", 30*time.Second, func() bool { return ts.status(t, fed.ID).Round >= 6 })
				if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/pause", fed.AdminToken, nil, &Status{}); code != 200 {
					t.Fatalf("pause: HTTP %d", code)
				}
				waitFor(t, "paused", 30*time.Second, func() bool { return ts.status(t, fed.ID).State == "paused" })
				held := ts.status(t, fed.ID).Round
				mid = waitAttack(t, ts, fed.ID, held)
				if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/resume", fed.AdminToken, nil, &Status{}); code != 200 {
					t.Fatalf("resume: HTTP %d", code)
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			end := waitAttack(t, ts, fed.ID, c.rounds)
			for k, e := range end.Participants {
				b := blocks[k]
				t.Logf("%s: %+v", c.scheme, e)
				if e.Client != k || e.Name == "" || e.Samples != b.N() || e.Features != len(b.Features) {
					t.Fatalf("participant %d: %+v; its block has %d samples, %d features", k, e, b.N(), len(b.Features))
				}
				if c.scheme == "bgv" {
					if e.Equations != 0 || e.Rank != 0 || e.RowsDetermined != 0 || e.Unreadable == 0 ||
						e.Status != fmt.Sprintf("nothing readable: %d sealed vectors", e.Unreadable) {
						t.Errorf("BGV, participant %d: %+v, want nothing readable", k, e)
					}
					// Its own rows: the columns, and no value.
					var out AttackRows
					if code := ts.call(t, "GET", "/api/federations/"+fed.ID+"/attack/rows", res[k].Session, nil, &out); code != 200 {
						t.Fatalf("BGV, participant %d's rows: HTTP %d", k, code)
					}
					if out.Client != k || len(out.Rows) != defaultAttackRows || !slices.Equal(out.Features, b.Features) || out.Status != e.Status {
						t.Fatalf("BGV, participant %d's rows: client %d, %d rows, features %v, status %q", k, out.Client, len(out.Rows), out.Features, out.Status)
					}
					for _, r := range out.Rows {
						if r.Values != nil {
							t.Fatalf("BGV, participant %d: row %d has values %v", k, r.Index, r.Values[:3])
						}
					}
					continue
				}
				m := mid.Participants[k]
				if m.Equations == 0 || m.Rank >= m.Features || m.RowsDetermined != 0 || m.Status != "collecting equations" {
					t.Errorf("paused at round %d, participant %d: %+v, want some equations, rank short of %d, no row yet", *m.ReconstructedRound, k, m, m.Features)
				}
				if e.Equations <= m.Equations || e.Rank != e.Features || e.RowsDetermined != e.Samples || e.Status != "rows recovered" || e.Unreadable != 0 {
					t.Errorf("at the end, participant %d: %+v; paused: %+v; want more equations, full rank, every row", k, e, m)
				}
			}
		})
	}
}

// TestAttackRowsOnlyToOwner: the reconstruction of a participant's rows
// goes to the holder of its session token and to nobody else.
func TestAttackRowsOnlyToOwner(t *testing.T) {
	p := attackData(t)
	blocks := blockPtrs(p.Blocks)
	const rounds = 30
	ts := curiousServer(t)
	l, fed := ts.create(t, attackRequest(rounds), secret.FromSeed(5), "plaintext")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := runAll(ctx, l, blocks)
	if err != nil {
		t.Fatal(err)
	}
	waitAttack(t, ts, fed.ID, rounds)
	rowsPath := "/api/federations/" + fed.ID + "/attack/rows"

	for _, c := range []struct {
		name, token, query string
		status             int
		code               string
	}{
		{"no token", "none", "", 401, "bad-token"},
		{"wrong token", res[0].Session + "x", "", 401, "bad-token"},
		{"old query token", "none", "?session=" + url.QueryEscape(res[0].Session), 401, "bad-token"},
		{"invite token", fed.InviteToken, "", 403, "bad-session"},
		{"viewer token", fed.ViewerToken, "", 403, "bad-session"},
		{"admin without a participant", fed.AdminToken, "", 400, "bad-field"},
		{"too many rows", res[0].Session, "?count=100000", 400, "bad-field"},
		{"negative start", res[0].Session, "?from=-1", 400, "bad-field"},
	} {
		var e apiError
		if got := ts.call(t, "GET", rowsPath+c.query, c.token, nil, &e); got != c.status || e.Code != c.code || e.Error == "" {
			t.Errorf("%s: HTTP %d %+v, want %d with code %s", c.name, got, e, c.status, c.code)
		}
	}
	// The organizer reads any participant's.
	var byAdmin AttackRows
	if code := ts.call(t, "GET", rowsPath+"?participant=2&count=3", fed.AdminToken, nil, &byAdmin); code != 200 || byAdmin.Client != 2 || len(byAdmin.Rows) != 3 {
		t.Fatalf("the admin's view of participant 2: HTTP %d, client %d, %d rows", code, byAdmin.Client, len(byAdmin.Rows))
	}

	for k, r := range res {
		var out AttackRows
		q := "?from=10&count=64"
		if code := ts.call(t, "GET", rowsPath+q, r.Session, nil, &out); code != 200 {
			t.Fatalf("participant %d's own rows: HTTP %d", k, code)
		}
		b := blocks[k]
		if out.Client != k || out.Name != r.Name || out.TotalRows != b.N() || out.From != 10 || len(out.Rows) != 64 ||
			!slices.Equal(out.Features, b.Features) || out.Round == nil || *out.Round != rounds {
			t.Fatalf("participant %d (%s) got client %d (%s), %d of %d rows from %d, features %v, round %v",
				k, r.Name, out.Client, out.Name, len(out.Rows), out.TotalRows, out.From, out.Features, out.Round)
		}
		own, other := rowsError(out.Rows, b), rowsError(out.Rows, blocks[(k+2)%4])
		t.Logf("participant %d: %s, rank %d; error against its own rows %.3g, against block %d's %.3g", k, out.Status, out.Rank, own, (k+2)%4, other)
		if own > 1e-6 || other < 0.5 {
			t.Errorf("participant %d: error %.3g against its own rows, %.3g against another block's", k, own, other)
		}
		for _, row := range out.Rows {
			if row.Training == b.Heldout[row.Index] {
				t.Fatalf("participant %d, row %d: training %v, held out in the block %v", k, row.Index, row.Training, b.Heldout[row.Index])
			}
		}
	}

	// Past the end: no rows. Without the demonstration: no endpoint.
	var out AttackRows
	if code := ts.call(t, "GET", rowsPath+"?from=100000", res[1].Session, nil, &out); code != 200 || len(out.Rows) != 0 {
		t.Fatalf("rows past the end: HTTP %d, %d rows", code, len(out.Rows))
	}
	plain := startServer(t, t.TempDir())
	_, other := plain.create(t, attackRequest(5), secret.FromSeed(6), "plaintext")
	for _, path := range []string{"/attack", "/attack/rows"} {
		var e apiError
		if code := plain.call(t, "GET", "/api/federations/"+other.ID+path, "", nil, &e); code != 404 || e.Code != "no-attack" {
			t.Errorf("%s without Options.Curious: HTTP %d %+v, want 404 no-attack", path, code, e)
		}
	}
	if plain.status(t, other.ID).Curious {
		t.Error("the status of a server without the demonstration says it runs")
	}
}

// rowsError is ||X_hat - X||_F / ||X||_F over the training rows returned,
// against block b's rows with the same indexes.
func rowsError(rows []AttackRow, b *partition.Block) float64 {
	var d, n float64
	for _, r := range rows {
		if b.Heldout[r.Index] {
			continue
		}
		for j := range b.Features {
			x := b.X.At(r.Index, j)
			e := float64(r.Values[j]) - x
			d += e * e
			n += x * x
		}
	}
	return math.Sqrt(d / n)
}
