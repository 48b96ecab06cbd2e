package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// TestMain lets the test binary act as the hyfed command (HYFED_MAIN=1),
// so that tests can run hyfed serve as a process and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("HYFED_MAIN") == "1" {
		// As main: an interrupt ends the command through its context (hyfed
		// serve then writes its profiles).
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// startServe runs hyfed serve as a child process and returns it with its
// base URL.
// startServe runs hyfed serve with extra flags; it returns the process,
// its base URL and its create token.
func startServe(t *testing.T, dir, addr string, extra ...string) (*exec.Cmd, string, string) {
	t.Helper()
	cmd, base, token, err := startServeProcess(context.Background(), dir, addr, os.Stderr, nil, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, base, token
}

// TestServerKilledMidTraining kills hyfed serve with SIGKILL in the middle
// of training and starts it again on the same data directory. The
// participants (their own connections, in this process) come back with
// their session tokens; the federation resumes at the last checkpointed
// round, records every round exactly once, and ends at the optimum.
func TestServerKilledMidTraining(t *testing.T) {
	killMidTraining(t, protocol.KeysShared, 300)
}

// TestServerKilledMidTrainingThreshold is TestServerKilledMidTraining with
// threshold keys (2-of-3 over six participants): the checkpoint carries the
// key setup, the participants come back with their parties (the session
// keeps their key state across connections), the committee members prove
// they still hold their shares, and the switching goes on.
func TestServerKilledMidTrainingThreshold(t *testing.T) {
	killMidTraining(t, protocol.KeysThreshold, 30)
}

func killMidTraining(t *testing.T, keys string, rounds int) {
	if testing.Short() {
		t.Skip("runs a server process twice")
	}
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:600,12,1,0.05,3", Holdout: 0.2, Partition: "grid:3,2"})
	if err != nil {
		t.Fatal(err)
	}
	const lambda = 1e-2
	opt, err := central.Solve(context.Background(), p.Data, central.Config{Lambda: lambda, Loss: loss.Hinge{}, Tol: 1e-10})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// --insecure-demo admits the seeded federation this test replays.
	cmd, base, token := startServe(t, dir, "127.0.0.1:0", "--insecure-demo")
	sec := secret.FromSeed(5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var resp server.CreateResponse
	req := server.CreateRequest{
		Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(5 * time.Second), Config: protocol.Config{Lambda: lambda, Rounds: rounds, Tol: protocol.NoTol, IIC: 0.2, Seed: 5, Clients: len(p.Blocks), Keys: keys}}
	if err := postJSON(ctx, base+"/api/federations", token, req, &resp); err != nil {
		t.Fatal(err)
	}
	l, err := session.ParseLink(joinLink(base, &resp, sec, req))
	if err != nil {
		t.Fatal(err)
	}
	blocks := make([]*partition.Block, len(p.Blocks))
	for i := range p.Blocks {
		blocks[i] = &p.Blocks[i]
	}
	done := make(chan error, 1)
	var results []*session.Result
	go func() {
		var err error
		results, err = session.RunMany(ctx, l, blocks, session.Options{Dial: session.WebSocket(64 << 20), RetryFor: time.Minute})
		done <- err
	}()
	var st server.Status
	for st.Round < rounds/3 {
		time.Sleep(20 * time.Millisecond)
		if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killedAt := st.Round
	time.Sleep(300 * time.Millisecond) // participants notice and retry meanwhile
	addr := strings.TrimPrefix(base, "http://")
	addr = strings.Replace(addr, "localhost", "127.0.0.1", 1)
	_, base2, _ := startServe(t, dir, addr, "--insecure-demo")
	if base2 != base {
		t.Fatalf("restarted on %s, was %s", base2, base)
	}
	if err := <-done; err != nil {
		t.Fatalf("participants: %v", err)
	}
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		t.Fatal(err)
	}
	if st.State != "finished" || len(st.History) != rounds+1 {
		t.Fatalf("state %s with %d rounds recorded, want finished with %d", st.State, len(st.History), rounds+1)
	}
	for i, r := range st.History {
		if r.Round != i {
			t.Fatalf("history entry %d is round %d: a round lost or doubled", i, r.Round)
		}
	}
	reconnects := 0
	for _, r := range results {
		reconnects += r.Reconnects
	}
	if reconnects < len(blocks) {
		t.Fatalf("%d reconnects: the participants did not notice the kill", reconnects)
	}
	// The uninterrupted run, in process, with the same settings.
	var whole []protocol.RoundMetrics
	if _, err := experiment.RunPreparedWithHistory(ctx, p, experiment.Options{Partition: "grid:3,2", Seed: 5, PStar: opt.Primal, Plaintext: true, Config: protocol.Config{Lambda: lambda, Rounds: rounds, Tol: protocol.NoTol, IIC: 0.2}}, &whole); err != nil {
		t.Fatal(err)
	}
	last := st.History[len(st.History)-1]
	gap := (opt.Primal - float64(last.Dual)) / opt.Primal
	ref := (opt.Primal - whole[rounds].Dual) / opt.Primal
	if st.Config.Keys != keys {
		t.Fatalf("keys %q after the restart, want %s", st.Config.Keys, keys)
	}
	t.Logf("keys %s: killed at round %d; %d reconnects; relative dual gap %.3g (uninterrupted: %.3g)", keys, killedAt, reconnects, gap, ref)
	if keys == protocol.KeysShared {
		// Every participant kept its boundary and resumed it: the restart
		// changed nothing, to the last bit.
		for i, r := range st.History {
			if w := whole[i]; !sameFloat(float64(r.Primal), w.Primal) || !sameFloat(float64(r.Dual), w.Dual) {
				t.Fatalf("round %d after a restart at %d: primal %v dual %v, uninterrupted %v %v", i, killedAt, r.Primal, r.Dual, w.Primal, w.Dual)
			}
		}
		return
	}
	// With threshold keys the restart costs a refresh and the rounds since
	// the last checkpoint at most; the trajectories part in the last bits.
	if math.IsNaN(gap) || gap < -1e-9 || gap > 2*ref+1e-4 {
		t.Fatal(fmt.Sprintf("relative dual gap %.3g after the restart, %.3g without", gap, ref))
	}
}

// sameFloat is == that takes two NaNs (a round without a number) as equal.
func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
