package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
)

// A data directory that stops taking writes (a full disk, a failing one)
// never lets a federation run on unsaved: a registration that cannot be
// saved is refused, and a checkpoint that cannot be written marks the
// federation degraded and pauses it until a retry succeeds.

// diskFault, when set (tests), fails writes under the data directory as
// a full disk would: it is asked before each write ("write") and fsync
// ("sync") with the file's path.
var diskFault func(op, path string) error

// diskCheck is diskFault's answer (nil: go ahead).
func diskCheck(op, path string) error {
	if diskFault != nil {
		return diskFault(op, path)
	}
	return nil
}

// checkpointRetry is how long the checkpoint writer waits before it tries
// a failed checkpoint again.
var checkpointRetry = 2 * time.Second

// diskFailed marks the federation degraded because what could not be
// written; a checkpoint (pause) also pauses its training at the next
// round boundary. Called with f.mu held.
func (f *federation) diskFailed(what string, err error, pause bool) {
	reason := fmt.Sprintf("%s could not be written (%v)", what, err)
	if pause {
		reason += ": training is paused until the data directory takes writes again"
	}
	if f.degraded == "" {
		f.log.Error("federation degraded", "reason", reason)
	}
	f.degraded = reason
	f.byCheckpoint = f.byCheckpoint || pause
	if pause && f.coord.Started() && !f.finished && !f.coord.Paused() {
		f.pausedForDisk = true
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputPause}))
		return
	}
	f.publishState()
}

// diskRecovered lifts the degraded state once a write succeeded again
// (checkpoint: a checkpoint's), and resumes the training it paused.
// Called with f.mu held.
func (f *federation) diskRecovered(checkpoint bool) {
	if f.degraded == "" || (f.byCheckpoint && !checkpoint) {
		return
	}
	f.log.Info("the data directory takes writes again", "was", f.degraded)
	f.degraded, f.byCheckpoint = "", false
	if f.pausedForDisk {
		f.pausedForDisk = false
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputResume}))
		return
	}
	f.publishState()
}

// checkpointWritten is the checkpoint writer's report (err nil: written).
func (f *federation) checkpointWritten(round int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.diskFailed(fmt.Sprintf("the checkpoint of round %d", round), err, true)
		return
	}
	// The participants may let go of the boundaries before it.
	f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputSaved, Round: round}))
	f.diskRecovered(true)
}

// removeStaleTemps removes the temporary files a killed server left in
// dir (writeFileAtomic's, never renamed into place).
func removeStaleTemps(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp") && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sessionUnsaved handles a registration whose fsync failed: its welcome
// is withheld and the federation marked degraded.
func (f *federation) sessionUnsaved(c *conn, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log.Error("cannot save the new session", "client", c.client, "error", err)
	f.diskFailed("a new participant's registration", err, false)
}
