package main

import (
	"context"
	"testing"
	"time"
)

// TestRegisteredBigFramesKeepMemory: 16 registered participants of a
// training federation send 63 MB frames in place of their replies, each
// time they come back: every frame is refused at its header (too-large),
// three of them bar the participant, the hyfed serve process's resident
// memory stays within 50 MB of what it was before, and the honest
// participants finish. Before the frames were bounded by what a
// participant may send, 16 such seats took the server 3.69 GB up.
func TestRegisteredBigFramesKeepMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process and 20 participants")
	}
	cmd, base, token := startServe(t, t.TempDir(), "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const rounds = 2000
	m, err := startMembers(ctx, base, token, membersOptions{Honest: 4, Flood: 16, Rounds: rounds})
	if err != nil {
		t.Fatal(err)
	}
	defer m.close(ctx)
	if err := m.waitRound(ctx, 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// The baseline: the peak of a second of undisturbed training.
	baseline, _, _ := measureFlood(pid, 0, func() {})
	_, undisturbed, _ := measureFlood(pid, 0, func() { time.Sleep(time.Second) })
	baseline = max(baseline, undisturbed)
	r0 := m.round(ctx)
	_, peak, _ := measureFlood(pid, 0, func() { m.floodBigFrames(time.Minute) })
	r1 := m.round(ctx)
	t.Logf("RSS %.1f MB before, peak %.1f MB while %d frames of 63 MB came (rounds %d to %d); answers %v",
		baseline, peak, m.bigSent.Load(), r0, r1, m.floodAnswers())
	if err := m.barred(); err != nil {
		t.Error(err)
	}
	if n := m.bigSent.Load(); n < 3*16 {
		t.Errorf("%d big frames sent, want at least 3 a seat", n)
	}
	if peak-baseline > 50 {
		t.Errorf("the server's RSS rose %.1f MB under the frames, want at most 50", peak-baseline)
	}
	if err := m.honestDone(ctx); err != nil {
		t.Fatal(err)
	}
	if r := m.round(ctx); r < rounds {
		t.Fatalf("the honest participants stopped at round %d of %d", r, rounds)
	}
}
