package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// fullDisk makes writes of op ("write", "sync") to files named name under
// dir fail with ENOSPC while it is on; it returns the switch.
func fullDisk(t *testing.T, dir, op, name string) *atomic.Bool {
	t.Helper()
	var on atomic.Bool
	diskFault = func(o, path string) error {
		if on.Load() && o == op && strings.HasPrefix(path, dir) && filepath.Base(path) == name {
			return syscall.ENOSPC
		}
		return nil
	}
	t.Cleanup(func() { diskFault = nil })
	return &on
}

// TestDiskFullAtRegistration: while the sessions log cannot be written
// (the append, or its fsync), a new participant gets no welcome, only a
// "busy" refusal, and the federation shows itself degraded; once the disk
// takes writes again the participants register, and every session that
// was acknowledged is there after a restart.
func TestDiskFullAtRegistration(t *testing.T) {
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			dir := t.TempDir()
			full := fullDisk(t, dir, op, sessionsFile)
			ts := startServer(t, dir)
			p := smallData(t)
			l, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: 1e-2, Rounds: 10, IIC: 0.2, Seed: 3, Clients: len(p.Blocks), NumFeatures: p.Data.M()}},
				secret.FromSeed(3), "plaintext")
			full.Store(true)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var welcomed atomic.Bool
			_, err := session.Run(ctx, l, &p.Blocks[0], session.Options{Dial: dialer(), RetryFor: time.Second,
				OnWelcome: func(string, string) { welcomed.Store(true) }})
			cancel()
			if err == nil || welcomed.Load() {
				t.Fatalf("joined on a full disk: welcomed %v, error %v", welcomed.Load(), err)
			}
			st := ts.status(t, fed.ID)
			if st.State != "degraded" || !strings.Contains(st.Error, "registration could not be written") {
				t.Fatalf("state %q error %q, want degraded over the registration", st.State, st.Error)
			}
			full.Store(false)
			if _, err := runAll(context.Background(), l, blockPtrs(p.Blocks)); err != nil {
				t.Fatal(err)
			}
			st = ts.status(t, fed.ID)
			if st.State != "finished" || st.Error != "" {
				t.Fatalf("after the disk recovered: state %q error %q", st.State, st.Error)
			}
			ts.stop()
			known, err := readSessions(filepath.Join(dir, "federations", fed.ID))
			if err != nil {
				t.Fatal(err)
			}
			registered := map[int]bool{}
			for _, sm := range known {
				registered[sm.Client] = true
			}
			for k := range st.Participants {
				if !registered[k] {
					t.Errorf("participant %d (%s) was welcomed but its session is not on disk", k, st.Participants[k].Name)
				}
			}
		})
	}
}

// TestDiskFullDuringTraining: a checkpoint that cannot be written turns
// the federation degraded and pauses training at the next round
// boundary; when the disk takes writes again the retried checkpoint
// lifts it and training goes on to the end, every round recorded once.
func TestDiskFullDuringTraining(t *testing.T) {
	dir := t.TempDir()
	full := fullDisk(t, dir, "write", "round.bin")
	defer func(d time.Duration) { checkpointRetry = d }(checkpointRetry)
	checkpointRetry = 20 * time.Millisecond
	ts := startServer(t, dir)
	p := smallData(t)
	const rounds = 30
	l, fed := ts.create(t, CreateRequest{RoundTimeout: Duration(20 * time.Second),
		Config: protocol.Config{Lambda: 1e-2, Rounds: rounds, IIC: 0.2, Seed: 3, Clients: len(p.Blocks), NumFeatures: p.Data.M()}}, secret.FromSeed(3), "plaintext")
	done := make(chan error, 1)
	go func() {
		_, err := runAll(context.Background(), l, blockPtrs(p.Blocks))
		done <- err
	}()
	waitFor(t, "round 5", 30*time.Second, func() bool { return ts.status(t, fed.ID).Round >= 5 })
	full.Store(true)
	var st Status
	waitFor(t, "a degraded, paused federation", 30*time.Second, func() bool {
		st = ts.status(t, fed.ID)
		return st.State == "degraded" && ts.federation(fed.ID).coord.Waiting()
	})
	if !strings.Contains(st.Error, "checkpoint of round") || !strings.Contains(st.Error, "paused") {
		t.Fatalf("error %q: want the checkpoint named and training paused", st.Error)
	}
	held := st.Round
	time.Sleep(200 * time.Millisecond)
	if r := ts.status(t, fed.ID).Round; r != held {
		t.Fatalf("training ran on from round %d to %d without checkpoints", held, r)
	}
	if code := ts.call(t, "POST", "/api/federations/"+fed.ID+"/resume", "", nil, nil); code < 400 {
		t.Fatalf("the organizer resumed a degraded federation: HTTP %d", code)
	}
	full.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("training did not go on after the disk recovered")
	}
	st = ts.status(t, fed.ID)
	if st.State != "finished" || st.Error != "" || len(st.History) != rounds+1 {
		t.Fatalf("state %q error %q, %d rounds recorded", st.State, st.Error, len(st.History))
	}
	for i, r := range st.History {
		if r.Round != i {
			t.Fatalf("history entry %d is round %d", i, r.Round)
		}
	}
}

// TestStaleTempFilesRemoved: the temporary files of a write that a killed
// server never finished are removed when the federation loads.
func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir)
	p := smallData(t)
	_, fed := ts.create(t, CreateRequest{Config: protocol.Config{Lambda: 1e-2, Rounds: 10, IIC: 0.2, Seed: 3, Clients: len(p.Blocks), NumFeatures: p.Data.M()}},
		secret.FromSeed(3), "plaintext")
	ts.stop()
	fdir := filepath.Join(dir, "federations", fed.ID)
	stale := filepath.Join(fdir, ".round.bin.tmp123456")
	if err := os.WriteFile(stale, []byte("half a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts = startServer(t, dir)
	if ts.federation(fed.ID) == nil {
		t.Fatal("federation not loaded")
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temporary file still there: %v", err)
	}
}
