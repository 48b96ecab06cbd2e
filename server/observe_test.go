package server

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/curious"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// TestHooksAndAttackSeeEveryFrame: with the Received and Sent hooks set
// and the curious-server demonstration on, both observe every frame of a
// federation. An observer fed from the hooks' frames alone collects the
// same equations as the server's attack; the attack alone has the hellos
// as its participants' (the hooks see them as client -1, as Received
// promises).
func TestHooksAndAttackSeeEveryFrame(t *testing.T) {
	p := attackData(t)
	blocks := blockPtrs(p.Blocks)
	const rounds = 10
	type dir struct {
		toServer bool
		client   int
	}
	var mu sync.Mutex
	frames := map[dir]int{}
	feds := map[string]bool{}
	byHooks := curious.NewObserver("plaintext")
	var frameErr error
	hook := func(toServer bool) func(string, int, []byte) {
		return func(fed string, client int, frame []byte) {
			mu.Lock()
			defer mu.Unlock()
			feds[fed] = true
			frames[dir{toServer, client}]++
			if err := byHooks.Frame(toServer, client, frame); err != nil && frameErr == nil {
				frameErr = err
			}
		}
	}
	ts := startServerWith(t, t.TempDir(), func(o *Options) {
		o.Curious, o.Received, o.Sent = true, hook(true), hook(false)
	})
	l, fed := ts.create(t, attackRequest(rounds), secret.FromSeed(4), "plaintext")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := runAll(ctx, l, blocks); err != nil {
		t.Fatal(err)
	}
	waitAttack(t, ts, fed.ID, rounds)

	mu.Lock()
	defer mu.Unlock()
	if frameErr != nil {
		t.Fatalf("a frame the hooks saw did not decode: %v", frameErr)
	}
	if len(feds) != 1 || !feds[fed.ID] {
		t.Fatalf("the hooks saw frames of federations %v, want only %s", feds, fed.ID)
	}
	if n := frames[dir{true, -1}]; n != len(blocks) {
		t.Errorf("Received saw %d frames before registration, want the %d hellos", n, len(blocks))
	}
	if n := frames[dir{false, -1}]; n != 0 {
		t.Errorf("Sent saw %d frames to unregistered connections", n)
	}
	at := ts.Server.federation(fed.ID).attack
	for k, b := range blocks {
		in, out := frames[dir{true, k}], frames[dir{false, k}]
		got, want := at.obs.Progress(k), byHooks.Progress(k)
		t.Logf("client %d: the hooks saw %d frames from it and %d to it; the attack: %+v", k, in, out, got)
		if in < rounds || out < rounds {
			t.Errorf("client %d: the hooks saw %d frames from it and %d to it in %d rounds", k, in, out, rounds)
		}
		if got.Equations == 0 || got.Equations != want.Equations || got.Rounds != want.Rounds || got.LastRound != want.LastRound ||
			got.DualEquations != want.DualEquations || got.Unreadable != want.Unreadable || got.SetUp != want.SetUp || got.Samples != want.Samples {
			t.Errorf("client %d: the attack has %+v, an observer of the hooks' frames %+v", k, got, want)
		}
		if got.Features != len(b.Features) || want.Features != 0 {
			t.Errorf("client %d: features %d from the attack's hello, %d from the hooks', want %d and 0", k, got.Features, want.Features, len(b.Features))
		}
	}
}

// TestObserverPanicFailsItsFederation: a panic in an observer of frames
// (here the hooks: on a hello read, on a welcome about to be written)
// fails its federation alone, as any panic in a connection does.
func TestObserverPanicFailsItsFederation(t *testing.T) {
	blocks := blockPtrs(attackData(t).Blocks)
	for _, side := range []string{"received", "sent"} {
		t.Run(side, func(t *testing.T) {
			var victim atomic.Pointer[string]
			boom := func(fed string, _ int, _ []byte) {
				if v := victim.Load(); v != nil && *v == fed {
					panic("observer " + side)
				}
			}
			ts := startServerWith(t, t.TempDir(), func(o *Options) {
				o.Curious = true
				if side == "received" {
					o.Received = boom
				} else {
					o.Sent = boom
				}
			})
			la, a := ts.create(t, attackRequest(3), secret.FromSeed(7), "plaintext")
			_, b := ts.create(t, attackRequest(3), secret.FromSeed(8), "plaintext")
			victim.Store(&a.ID)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ran := make(chan error, 1)
			go func() {
				_, err := session.Run(ctx, la, blocks[0], session.Options{Dial: dialer()})
				ran <- err
			}()
			waitFor(t, "the federation to fail", 10*time.Second, func() bool { return ts.status(t, a.ID).State == "broken" })
			cancel() // the participant may retry
			if err := <-ran; err == nil {
				t.Fatal("a participant ran in a federation whose observer panicked")
			}
			if st := ts.status(t, a.ID); !strings.Contains(st.Error, "observer "+side) {
				t.Errorf("the failed federation says %q", st.Error)
			}
			if st := ts.status(t, b.ID); st.State != "waiting" {
				t.Errorf("the other federation: %s %q", st.State, st.Error)
			}
		})
	}
}
