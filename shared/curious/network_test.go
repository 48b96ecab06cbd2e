package curious_test

import (
	"context"
	"github.com/hyfed/hyfed/shared/protocol"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/curious"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// TestAttackOnServerFrames runs the inner-product attack on exactly the
// frames a real server received and sent over loopback websockets (its
// Received and Sent hooks), with native participants: in an insecure-demo
// federation it recovers client 0's training rows; under BGV the same
// frames give it nothing. Under BGV the plaintext changes of the primal
// contributions (dw_k) are in the frames; with sealed primal they are not.
func TestAttackOnServerFrames(t *testing.T) {
	o := curious.MNISTOptions(200, true)
	o.Loss = "logistic"
	p := curious.PrepareMNIST(t, o)
	blocks := make([]*partition.Block, len(p.Blocks))
	for i := range p.Blocks {
		blocks[i] = &p.Blocks[i]
	}
	for _, c := range []struct {
		scheme     string
		rounds     int
		sealPrimal bool
	}{{"plaintext", 200, false}, {"bgv", 20, false}, {"bgv", 20, true}} {
		obs := curious.NewObserver(c.scheme)
		var mu sync.Mutex
		var frameErr error
		hook := func(toServer bool) func(string, int, []byte) {
			return func(_ string, client int, frame []byte) {
				if err := obs.Frame(toServer, client, frame); err != nil {
					mu.Lock()
					frameErr = err
					mu.Unlock()
				}
			}
		}
		srv, err := server.New(server.Options{DataDir: t.TempDir(), InsecureDemo: true, Received: hook(true), Sent: hook(false)})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		sec := secret.FromSeed(1)
		// IIC 0.05: the attack needs rounds, not a large H (a group's
		// block solve grows with H^2).
		resp, err := srv.Create(server.CreateRequest{Scheme: c.scheme, Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(time.Minute), Config: protocol.Config{Loss: "logistic", Lambda: 1e-3, IIC: 0.05, Rounds: c.rounds, SealPrimal: c.sealPrimal, Clients: len(blocks), NumFeatures: p.Data.M(), Seed: 1}})
		if err != nil {
			t.Fatal(err)
		}
		frag := sec.String()
		if c.scheme == "plaintext" {
			frag = "plaintext:" + frag
		}
		l, err := session.ParseLink(hs.URL + resp.JoinPath + "&secret=" + frag)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		start := time.Now()
		_, err = session.RunMany(ctx, l, blocks, session.Options{Dial: session.WebSocket(64 << 20)})
		cancel()
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d rounds over websockets in %.1fs", c.scheme, c.rounds, time.Since(start).Seconds())
		mu.Lock()
		if frameErr != nil {
			t.Fatalf("a frame the server handled did not decode: %v", frameErr)
		}
		mu.Unlock()
		changes := 0
		for k := range blocks {
			changes += len(obs.Changes(k))
		}
		t.Logf("%s (sealed primal %v): %d plaintext changes of a primal contribution in the frames", c.scheme, c.sealPrimal, changes)
		if c.sealPrimal != (changes == 0) {
			t.Errorf("%s, sealed primal %v: %d plaintext changes of primal contributions reached the server", c.scheme, c.sealPrimal, changes)
		}
		_, train := curious.ErrorsAt(t, obs, &p.Blocks[0], false, []int{c.rounds})
		switch {
		case c.scheme == "plaintext" && train[0] >= 1e-3:
			t.Errorf("insecure: training rows recovered to %.3g from the server's frames, want < 1e-3", train[0])
		case c.scheme == "bgv" && train[0] <= 0.5:
			t.Errorf("BGV: training rows recovered to %.3g from the server's frames, want > 0.5", train[0])
		}
	}
}
