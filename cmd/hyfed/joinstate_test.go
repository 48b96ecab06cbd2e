package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/session"
)

// TestJoinStateKeepsShare: hyfed join --state, a member of a 2-of-2 key
// committee (no sum is switched without its share), is killed with SIGKILL
// in the middle of training and started again with the same --state file:
// it takes back its seat and its share, and the federation (three more
// participants in this process) finishes every round. The file is 0600 and
// does not hold the link secret; a file of another federation is refused.
func TestJoinStateKeepsShare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hyfed serve and hyfed join as processes")
	}
	const rounds = 12
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, base, token := startServe(t, t.TempDir(), "127.0.0.1:0")
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"create", "--server", base, "--create-token", token, "--min-participants", "4", "--rounds", fmt.Sprint(rounds),
		"--lambda", "1e-2", "--round-timeout", "5s", "--keys", "threshold", "--key-committee", "2", "--key-threshold", "2"}, &out, &errb); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errb.String())
	}
	link := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "join: "); ok {
			link = v
		}
	}
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatalf("create printed %q: %v", out.String(), err)
	}
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:400,8,1,0.05,2", Holdout: 0.2, Partition: "grid:2,2"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "block-0.libsvm")
	var buf bytes.Buffer
	if err := partition.WriteLIBSVM(&buf, &p.Blocks[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(dir, "join.state")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	join := func() (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		cmd := exec.CommandContext(ctx, exe, "join", link, "--data", data, "--state", statePath, "--retry-for", "30s")
		cmd.Env = append(os.Environ(), "HYFED_MAIN=1")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &o, &e
	}
	status := func() server.Status {
		var st server.Status
		if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	waitFor := func(what string, cond func() bool) {
		for end := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("no %s in a minute", what)
			}
		}
	}
	readState := func() joinState {
		var st joinState
		b, err := os.ReadFile(statePath)
		if err != nil {
			return st
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("the state file: %v", err)
		}
		return st
	}

	// The join registers first: participant 0, on the key committee.
	first, _, firstErr := join()
	waitFor("registration of hyfed join", func() bool { return len(status().Participants) == 1 })
	others := make(chan error, 1)
	go func() {
		_, err := session.RunMany(ctx, l, []*partition.Block{&p.Blocks[1], &p.Blocks[2], &p.Blocks[3]},
			session.Options{Dial: session.WebSocket(64 << 20), RetryFor: time.Minute})
		others <- err
	}()
	waitFor("round 3", func() bool { return status().Round >= 3 })
	kept := readState()
	if kept.Session == "" || kept.KeyState == nil || kept.Federation != l.ID {
		t.Fatalf("the state file at round 3: federation %q, session %q, %d bytes of key state", kept.Federation, kept.Session, len(kept.KeyState))
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	killedAt := status().Round
	fi, err := os.Stat(statePath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(statePath)
	if fi.Mode().Perm() != 0o600 || bytes.Contains(raw, []byte(l.Secret.String())) {
		t.Fatalf("the state file: mode %v, holds the link secret: %v", fi.Mode().Perm(), bytes.Contains(raw, []byte(l.Secret.String())))
	}

	again, againOut, againErr := join()
	if err := again.Wait(); err != nil {
		t.Fatalf("hyfed join, started again: %v\n%s\n(before the kill: %s)", err, againErr, firstErr)
	}
	if err := <-others; err != nil {
		t.Fatalf("the other participants: %v", err)
	}
	st := status()
	if st.State != "finished" || len(st.History) != rounds+1 || len(st.Participants) != 4 {
		t.Fatalf("state %s, %d rounds recorded, %d participants; want finished, %d, 4", st.State, len(st.History), len(st.Participants), rounds+1)
	}
	if !strings.Contains(againErr.String(), "with its share of the threshold key") {
		t.Fatalf("the restarted join's stderr: %s", againErr)
	}
	var res map[string]any
	if err := json.Unmarshal(againOut.Bytes(), &res); err != nil || res["name"] != st.Participants[0].Name {
		t.Fatalf("the restarted join printed %q (%v); participant 0 is %s", againOut, err, st.Participants[0].Name)
	}
	t.Logf("hyfed join killed at round %d, started again with --state: finished as %s", killedAt, res["name"])

	// The same file for another federation's link is refused.
	other := strings.Replace(link, "/join/"+l.ID, "/join/x"+l.ID, 1)
	var o2, e2 bytes.Buffer
	if code := run(ctx, []string{"join", other, "--data", data, "--state", statePath}, &o2, &e2); code == 0 || !strings.Contains(e2.String(), "give another file") {
		t.Fatalf("join of another federation with the same --state: exit %d: %s", code, e2.String())
	}
}
