package server

import (
	"fmt"
	"runtime/debug"
	"time"
)

// Every goroutine that handles what participants send (their
// connections' readers and writers, the deadlines' callbacks, the
// checkpoint writer, the curious-server worker) recovers from a panic:
// the panic is logged with its stack and only its federation fails (it
// turns "broken" and its connections close), never the process.

// recoverFail is deferred by such goroutines: a panic fails f.
func (f *federation) recoverFail(where string) {
	if r := recover(); r != nil {
		f.log.Error("internal error: the federation is stopped", "where", where, "panic", r, "stack", string(debug.Stack()))
		f.fail(fmt.Sprintf("internal error in %s: %v", where, r))
	}
}

// failLockWait is how long fail waits for the federation's lock, which a
// panic may have left held: then the federation stays as it is (every
// call on it waits), and the log says so.
const failLockWait = 2 * time.Second

// fail marks f broken and closes its connections. Called without f.mu.
func (f *federation) fail(why string) {
	deadline := time.Now().Add(failLockWait)
	for !f.mu.TryLock() {
		if time.Now().After(deadline) {
			f.log.Error("the federation's lock is held after a panic; it stays as it is", "reason", why)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer f.mu.Unlock()
	if f.broken == "" {
		f.broken = why
	}
	for k, c := range f.conns {
		c.closeNow()
		delete(f.conns, k)
	}
	if f.timer != nil {
		f.timer.Stop()
	}
	f.lastState = f.stateLocked()
	f.events.publish(event{Type: "state", State: f.lastState})
}
