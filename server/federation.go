package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
)

// federation is one federation on the server: its coordinator, the
// participants' connections and sessions. mu guards everything; the
// coordinator runs under it (it is a state machine without I/O), while
// decoding and encoding frames happen in the connections' goroutines.
type federation struct {
	srv    *Server
	log    *slog.Logger
	scheme seal.Scheme

	mu     sync.Mutex
	meta   meta
	coord  *protocol.Coordinator
	broken string // the state on disk could not be restored
	// degraded says what the data directory did not take (disk.go),
	// byCheckpoint that a checkpoint failed (only a written one lifts it),
	// pausedForDisk that training was paused for it, not by the organizer.
	degraded      string
	byCheckpoint  bool
	pausedForDisk bool
	conns         map[int]*conn
	// sessions maps session token hashes to clients. It has its own lock
	// so that checking a token never waits for a round's work under mu;
	// loadSessions fills it (and registered) from disk once.
	sessMu     sync.RWMutex
	sessions   map[string]int
	sessOnce   sync.Once
	sessErr    error
	registered []sessionMeta
	sessLog    sessionLog // sessions.jsonl, appended to as participants register
	names      []string   // per client
	timer      *time.Timer
	timerSeq   int
	phase      string
	finished   bool
	// lastState is the state last published as an event.
	lastState string
	events    *hub
	saver     *saver
	// wire counts the bytes of the frames actually received and sent.
	wireIn, wireOut atomic.Int64
	// chunks bounds the chunk indexes of sealed vectors once the
	// federation has started (Coordinator.MaxChunks), for the decode
	// limits of the connections' readers (no lock there).
	chunks atomic.Int64
	// attack is the curious-server demonstration (Options.Curious), nil
	// without it. Set once when loaded; it has its own locks.
	attack *attack
	// observers see every frame of the connections (observe.go): the
	// hooks of Options, the attack. Set once when loaded.
	observers []frameObserver

	// pending counts sockets not registered yet (Options.MaxPending).
	pending pendingCount
	// limitSeq and limitChunks are the coordinator's PhaseSeq and
	// MaxChunks the connections' limits were last set at, limitsFinal
	// that every one was final then (setLimits).
	limitSeq, limitChunks int
	limitsFinal           bool

	loadOnce sync.Once
	loaded   atomic.Bool // ensure ran: the coordinator and workers exist
	usable   bool
	// ended: finished or stopped (not counted by the quotas; removed
	// Options.Retention after meta.Ended).
	ended atomic.Bool
}

// newFederation makes a federation from its record. It is cheap (no
// goroutine, no file read): a server restarting over many federations
// answers at once and loads each one when it is first used (ensure).
func newFederation(s *Server, m meta, scheme seal.Scheme) *federation {
	f := &federation{srv: s, meta: m, scheme: scheme, conns: map[int]*conn{}, sessions: map[string]int{},
		log: s.log.With("federation", m.ID), events: newHub()}
	f.ended.Store(!m.Ended.IsZero() || m.Stopped)
	return f
}

// loadSessions reads the registrations once (a small file): checking a
// session token needs them, the rest of the federation not (ensure).
func (f *federation) loadSessions() error {
	f.sessOnce.Do(func() {
		sessions, err := readSessions(f.dir())
		if err != nil {
			f.log.Error("registrations cannot be read", "error", err)
			f.sessErr = err
		}
		f.registered = append(append([]sessionMeta(nil), f.meta.Sessions...), sessions...)
		f.sessMu.Lock()
		for _, sm := range f.registered {
			f.sessions[sm.Hash] = sm.Client
		}
		f.sessMu.Unlock()
	})
	return f.sessErr
}

// ensure loads the federation once: its registrations, its checkpoint,
// its background workers. It reports false if the federation cannot be
// had at all (not even as broken).
func (f *federation) ensure() bool {
	f.loadOnce.Do(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.usable = f.loadLocked()
		f.loaded.Store(true)
	})
	return f.usable
}

func (f *federation) loadLocked() bool {
	if err := f.loadSessions(); err != nil {
		f.broken = err.Error()
	}
	for _, sm := range f.registered {
		for len(f.names) <= sm.Client {
			f.names = append(f.names, "")
		}
		f.names[sm.Client] = sm.Name
	}
	if err := removeStaleTemps(f.dir()); err != nil {
		f.log.Warn("stale temporary files", "error", err)
	}
	f.saver = newSaver(f.dir(), f.log, f.checkpointWritten)
	if f.srv.opt.Curious {
		f.attack = newAttack(f)
	}
	f.observers = f.observersOf()
	if err := f.loadCoordinator(); err != nil {
		// Keep it visible as broken rather than losing it.
		f.log.Error("federation cannot be restored", "error", err)
		f.broken = err.Error()
		if f.coord, err = protocol.NewCoordinator(f.meta.Config, f.scheme); err != nil {
			f.log.Error("federation dropped: its configuration is not valid", "error", err)
			return false
		}
	}
	return true
}

// newCoordinator creates or restores the coordinator from the data
// directory.
func (f *federation) loadCoordinator() error {
	setup, errS := os.ReadFile(filepath.Join(f.dir(), "setup.bin"))
	round, errR := os.ReadFile(filepath.Join(f.dir(), "round.bin"))
	var c *protocol.Coordinator
	var err error
	if errS == nil && errR == nil {
		c, err = protocol.Restore(f.scheme, setup, round)
		if err != nil {
			return fmt.Errorf("federation %s: %w", f.meta.ID, err)
		}
		f.saver.written = sha256.Sum256(setup)
		f.log.Info("restored from checkpoint", "round", c.Round(), "finished", c.Finished())
	} else {
		if c, err = protocol.NewCoordinator(f.meta.Config, f.scheme); err != nil {
			return err
		}
		if f.meta.Fingerprint != "" {
			c.ExpectFingerprint(f.meta.Fingerprint)
		}
		if !f.meta.AutoStart {
			c.HoldStart()
		}
	}
	c.EnableCheckpoints()
	c.SetNamer(f.name)
	f.coord = c
	f.chunks.Store(int64(c.MaxChunks()))
	f.finished = c.Finished()
	if f.meta.Stopped && !c.Finished() {
		c.Step(protocol.Input{Kind: protocol.InputStop, Reason: "stopped before the server restarted"}) // nobody is connected yet
		f.finished = true
	}
	if f.finished {
		f.markEnded()
	}
	if c.Waiting() {
		f.armResume()
	}
	return nil
}

func (f *federation) timeout() time.Duration {
	if f.meta.RoundTimeout <= 0 {
		return time.Minute
	}
	return time.Duration(f.meta.RoundTimeout)
}

// armResume lets a restored federation go on with whoever is back once a
// deadline has passed (everyone back resumes it at once).
func (f *federation) armResume() {
	time.AfterFunc(f.timeout(), func() {
		defer f.recoverFail("resuming after a restart")
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.coord.Waiting() || f.coord.Paused() || f.finished {
			return
		}
		if f.degraded != "" {
			f.armResume() // not on unsaved state
			return
		}
		n := 0
		for _, ci := range f.coord.Clients() {
			if ci.Connected {
				n++
			}
		}
		if n == 0 {
			f.armResume()
			return
		}
		f.log.Info("resuming with the participants that are back", "connected", n)
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputResume}))
	})
}

// dispatch queues the coordinator's envelopes on the connections. Called
// with f.mu held.
func (f *federation) dispatch(envs []protocol.Envelope) {
	for _, e := range envs {
		c := f.conns[e.To]
		if e.Msg.Kind == protocol.KindError {
			f.log.Warn("rejected", "client", e.To, "name", f.name(e.To), "round", e.Msg.Round, "code", e.Msg.Code, "error", e.Msg.Err)
		}
		if c == nil {
			continue
		}
		if e.Msg.Kind == protocol.KindError && !e.Msg.Close {
			c.rejected++
			if c.rejected > maxRejected {
				f.abuse(c, "too many rejected messages")
				continue
			}
		}
		c.send(e.Msg)
		if e.Msg.Close {
			// The coordinator already counts the client gone.
			delete(f.conns, e.To)
			f.events.publish(event{Type: "participant", Name: f.name(e.To), State: "away"})
		}
	}
}

// maxRejected is how many rejected messages a connection may send before
// it counts as abuse and is closed.
const maxRejected = 16

// tooLarge closes a connection whose frame went past its participant's
// limit: a strike against the participant in the coordinator, which drops
// it at the third (an honest participant sends none).
func (f *federation) tooLarge(c *conn, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log.Warn("disconnecting abusive connection", "client", c.client, "name", f.name(c.client), "code", protocol.CodeTooLarge, "reason", why)
	c.send(protocol.Message{Kind: protocol.KindError, Code: protocol.CodeTooLarge, Close: true, Err: "disconnected: " + why})
	if f.conns[c.client] == c {
		delete(f.conns, c.client)
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputMisbehaved, From: c.client, Reason: why}))
		f.events.publish(event{Type: "participant", Name: f.name(c.client), State: "away"})
	}
}

// abuse closes a connection and takes its participant out of the round.
// Called with f.mu held.
func (f *federation) abuse(c *conn, why string) {
	f.disconnect(c, protocol.CodeAbuse, why)
}

// disconnect closes a connection with an error of code and takes its
// participant out of the round. Called with f.mu held.
func (f *federation) disconnect(c *conn, code, why string) {
	f.log.Warn("disconnecting abusive connection", "client", c.client, "name", f.name(c.client), "code", code, "reason", why)
	c.send(protocol.Message{Kind: protocol.KindError, Code: code, Close: true, Err: "disconnected: " + why})
	if f.conns[c.client] == c {
		delete(f.conns, c.client)
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputLeave, From: c.client}))
		f.events.publish(event{Type: "participant", Name: f.name(c.client), State: "away"})
	}
}

func (f *federation) name(k int) string {
	if k >= 0 && k < len(f.names) {
		return f.names[k]
	}
	return fmt.Sprintf("client-%d", k)
}

// apply sends what a Step of the coordinator produced and follows its
// state: frame and decode limits, checkpoints, round and phase events,
// the phase's deadline, the end. Called with f.mu held.
func (f *federation) apply(r protocol.Ready) {
	f.setLimits(r)
	f.dispatch(r.Envelopes)
	f.follow(r)
}

// setLimits sets every connection's frame limit again when a phase has
// started or the layout changed, before the envelopes that may need the
// room go out; once every limit is final only a new layout changes them
// (a connection gets its own as it registers). Called with f.mu held.
func (f *federation) setLimits(r protocol.Ready) {
	if r.MaxChunks == f.limitChunks && (r.PhaseSeq == f.limitSeq || f.limitsFinal) {
		return
	}
	f.limitSeq, f.limitChunks = r.PhaseSeq, r.MaxChunks
	f.limitsFinal = len(f.conns) > 0
	for _, c := range f.conns {
		if !f.setLimit(c) {
			f.limitsFinal = false
		}
	}
}

// setLimit sets what c's participant may send (Coordinator.FrameLimit,
// within Options.Limits.MaxBytes) and reports whether that is final.
// Until then it only grows: a frame answering the layout before may still
// come. Once final, the reader refuses a larger frame at its header.
// Called with f.mu held.
func (f *federation) setLimit(c *conn) bool {
	most := int64(f.srv.opt.Limits.MaxBytes)
	fl := f.coord.FrameLimit(c.client)
	n := int64(fl.Bytes)
	if n <= 0 || n > most {
		n = most
	}
	ceiling := most
	if fl.Final {
		ceiling = n
	} else {
		n = max(n, c.limit.Load())
	}
	c.limit.Store(n)
	c.ceiling.Store(ceiling)
	return fl.Final
}

// follow is apply without the envelopes.
func (f *federation) follow(r protocol.Ready) {
	f.chunks.Store(int64(r.MaxChunks))
	if r.Checkpoint != nil {
		f.saver.offer(r.Checkpoint)
	}
	for _, m := range r.Rounds {
		f.events.publish(event{Type: "round", Round: m.Round, Metrics: metricsView(m)})
		f.attack.roundDone(m.Round)
	}
	if r.Phase != f.phase {
		f.phase = r.Phase
		if r.Phase != "" {
			f.events.publish(event{Type: "phase", Round: r.Round, Phase: r.Phase})
		}
	}
	if r.PhaseSeq != f.timerSeq {
		f.timerSeq = r.PhaseSeq
		if f.timer != nil {
			f.timer.Stop()
		}
		if r.Phase != "" {
			seq := r.PhaseSeq
			f.timer = time.AfterFunc(f.timeout(), func() { f.expire(seq) })
		}
	}
	if r.Finished && !f.finished {
		f.finished = true
		f.markEnded()
		if f.timer != nil {
			f.timer.Stop()
		}
		f.log.Info("federation finished", "round", r.Round, "stopped", r.Stopped)
	}
	f.publishState()
}

// publishState makes every change of state an event (pausing -> paused
// happens when a round completes, not on the organizer's call). Called
// with f.mu held.
func (f *federation) publishState() {
	if st := f.stateLocked(); st != f.lastState {
		f.lastState = st
		f.events.publish(event{Type: "state", State: st})
	}
}

// expire ends a phase that waited too long.
func (f *federation) expire(seq int) {
	defer f.recoverFail("a phase deadline")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timerSeq != seq || f.phase == "" {
		return
	}
	f.log.Warn("phase deadline", "round", f.coord.Round(), "phase", f.phase, "timeout", f.timeout())
	f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputDeadline}))
}

// stateLocked names the federation's state. Called with f.mu held.
func (f *federation) stateLocked() string {
	switch {
	case f.broken != "":
		return "broken"
	case f.coord.Stopped():
		return "stopped"
	case f.coord.Finished():
		return "finished"
	case f.degraded != "":
		return "degraded"
	case !f.coord.Started():
		return "waiting"
	case f.coord.Waiting() && f.coord.Paused():
		return "paused"
	case f.coord.Waiting():
		return "resuming"
	case f.coord.Paused():
		return "pausing"
	}
	return "running"
}

// register admits a connection's hello: a new participant with the invite,
// or a returning one with its session token. It returns false if the
// connection was refused (the reply is queued on c).
func (f *federation) register(c *conn, hello protocol.Message, a access) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	refuse := func(code, msg string) bool {
		f.log.Warn("registration refused", "client", c.client, "returning", a.role == roleSession, "code", code, "error", msg)
		c.send(protocol.Message{Kind: protocol.KindError, Code: code, Close: true, Err: msg})
		return false
	}
	if f.broken != "" {
		return refuse(protocol.CodeStopped, "the federation's saved state could not be restored: "+f.broken)
	}
	if f.finished {
		return refuse(protocol.CodeFinished, "the federation has finished")
	}
	k, isNew := -1, false
	switch a.role {
	case roleSession:
		k = a.client
	case roleInvite:
		if len(f.names) >= f.srv.opt.MaxParticipants {
			return refuse(protocol.CodeStarted, fmt.Sprintf("the federation is full (%d participants)", f.srv.opt.MaxParticipants))
		}
		if n, most := f.seats(); n >= most {
			return refuse(protocol.CodeStarted, fmt.Sprintf("the federation is full (%d participants)", most))
		}
		k, isNew = len(f.names), true
	default:
		return refuse(protocol.CodeBadInvite, "the invite token is missing or not this federation's")
	}
	if old := f.conns[k]; old != nil {
		// The same participant connected again (a reloaded page, a
		// half-open connection): the newer connection wins.
		old.send(protocol.Message{Kind: protocol.KindError, Code: protocol.CodeReplaced, Close: true, Err: "this participant connected again elsewhere"})
		delete(f.conns, k)
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputLeave, From: k}))
	}
	c.client = k
	c.limit.Store(0) // the hello's is no participant's
	var tok string
	var sm sessionMeta
	if isNew {
		// Saved before the coordinator hears of it: a registration the
		// disk does not take is refused whole. (A refused hello leaves a
		// line whose token nobody was given.)
		tok = newToken(24)
		sm = sessionMeta{Hash: hashToken(tok), Client: k, Name: pseudonymFor(k, f.meta.ID)}
		seq, err := f.appendSession(sm)
		if err != nil {
			f.diskFailed("a new participant's registration", err, false)
			return refuse(protocol.CodeBusy, "the server cannot save registrations now: try again shortly")
		}
		c.durable.Store(seq) // its writer fsyncs before the welcome
		f.diskRecovered(false)
	}
	joined := f.coord.Step(protocol.Input{Kind: protocol.InputJoin, From: k, Msg: hello})
	for _, e := range joined.Envelopes {
		if e.To == k && e.Msg.Kind == protocol.KindError {
			f.follow(joined)
			f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputLeave, From: k}))
			return refuse(e.Msg.Code, e.Msg.Err)
		}
	}
	f.observeRegistered(k, &hello) // before the welcome and the setup: what the server got first
	if isNew {
		f.names = append(f.names, sm.Name)
		f.sessMu.Lock()
		f.sessions[sm.Hash] = k
		f.sessMu.Unlock()
		// A demo block's seat is taken by the participant that joins with
		// it, not by the page that loaded it, and before the welcome. (s.mu is never held while
		// taking f.mu, so taking it here is safe.)
		if f.meta.Demo && f.srv.opt.Demo != nil {
			if b := f.srv.opt.Demo.Seat(f.meta.ID, &hello); b >= 0 {
				f.srv.take(f.meta.ID, b)
				f.log.Info("demo seat taken", "client", k, "block", b)
			}
		}
		c.send(protocol.Message{Kind: protocol.KindWelcome, Session: tok, Name: sm.Name})
	} else {
		c.send(protocol.Message{Kind: protocol.KindWelcome, Name: f.name(k)})
	}
	f.conns[k] = c
	f.setLimit(c)
	f.events.publish(event{Type: "participant", Name: f.name(k), State: "connected"})
	f.log.Info("participant connected", "client", k, "name", f.name(k), "new", isNew)
	f.apply(joined)
	return true
}

// seats counts the seats the invite holds and bounds them: by the
// participants the organizer declared (CreateRequest.MaxParticipants),
// else under an automatic start by min_participants, else by the server's
// limit. Under an automatic start a seat counts while connected (one left
// before the start gives its place to the next and is forgotten at the
// start); under a manual start every registration counts, as its token
// may come back. Called with f.mu held.
func (f *federation) seats() (taken, most int) {
	registered, connected := f.coord.Seats()
	most = f.srv.opt.MaxParticipants
	switch {
	case f.meta.MaxParticipants > 0:
		most = f.meta.MaxParticipants
	case f.meta.AutoStart:
		most = f.meta.Config.Clients
	}
	if f.meta.AutoStart {
		return connected, most
	}
	return registered, most
}

// receive hands a decoded message to the coordinator.
func (f *federation) receive(c *conn, m protocol.Message, size int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns[c.client] != c {
		return // replaced or closed meanwhile
	}
	f.wireIn.Add(int64(size))
	f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputMessage, From: c.client, Msg: m}))
}

// refuseFrame answers a frame that did not decode.
func (f *federation) refuseFrame(c *conn, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log.Warn("malformed frame", "client", c.client, "name", f.name(c.client), "error", err)
	if f.conns[c.client] != c {
		return
	}
	c.rejected++
	if c.rejected > maxRejected {
		f.abuse(c, "too many malformed frames")
		return
	}
	c.send(protocol.Message{Kind: protocol.KindError, Round: f.coord.Round(), Code: protocol.CodeBadMessage, Err: err.Error()})
}

// leave records a closed connection.
func (f *federation) leave(c *conn, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.client < 0 || f.conns[c.client] != c {
		return
	}
	delete(f.conns, c.client)
	f.log.Info("participant left", "client", c.client, "name", f.name(c.client), "round", f.coord.Round(), "phase", f.coord.Phase(), "error", err)
	f.events.publish(event{Type: "participant", Name: f.name(c.client), State: "away"})
	f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputLeave, From: c.client}))
}

// admin runs an organizer's action.
func (f *federation) admin(action string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != "" {
		return errors.New("the federation's saved state could not be restored")
	}
	switch action {
	case "start":
		r := f.coord.Step(protocol.Input{Kind: protocol.InputStart})
		if r.Err != nil {
			return r.Err
		}
		f.apply(r)
	case "pause":
		if f.finished {
			return errors.New("the federation has finished")
		}
		f.pausedForDisk = false // the organizer's pause outlasts the disk's
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputPause}))
	case "resume":
		if f.finished {
			return errors.New("the federation has finished")
		}
		if f.degraded != "" {
			return errors.New(f.degraded)
		}
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputResume}))
	case "stop":
		if f.finished {
			return errors.New("the federation has finished")
		}
		f.apply(f.coord.Step(protocol.Input{Kind: protocol.InputStop, Reason: "by the organizer"}))
		f.meta.Stopped = true
		if err := f.saveMeta(); err != nil {
			f.log.Error("cannot save the stop", "error", err)
		}
	default:
		return fmt.Errorf("unknown action %q (start, pause, resume, stop)", action)
	}
	f.log.Info("organizer action", "action", action)
	return nil
}

// close ends the federation's connections and writes its last checkpoint.
func (f *federation) close() {
	f.loadOnce.Do(func() {}) // never loads after this; waits for a load under way
	if !f.loaded.Load() {
		f.events.close()
		return
	}
	f.mu.Lock()
	if f.timer != nil {
		f.timer.Stop()
	}
	for _, c := range f.conns {
		c.closeNow()
	}
	f.conns = map[int]*conn{}
	f.mu.Unlock()
	if err := f.sessLog.close(); err != nil {
		f.log.Error("registrations log", "error", err)
	}
	f.saver.stop()
	f.attack.stop()
	f.events.close()
}

// saver writes checkpoints in the background, newest first: a slow disk
// delays checkpoints, never rounds.
type saver struct {
	dir     string
	log     *slog.Logger
	mu      sync.Mutex
	pending *protocol.Checkpoint
	stopped bool
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	written [32]byte // digest of the setup on disk
	// setup is the setup part a checkpoint carried (only the first does),
	// kept until written; setupFor its digest.
	setup    []byte
	setupFor [32]byte
	saved    int // checkpoints written
	last     int // round of the last one written
	// report, if set, hears how each write went (without s.mu); failing
	// says the last one failed, retry that a retry is armed.
	report  func(round int, err error)
	failing bool
	retry   *time.Timer
}

func newSaver(dir string, log *slog.Logger, report func(round int, err error)) *saver {
	s := &saver{dir: dir, log: log, report: report, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *saver) offer(cp *protocol.Checkpoint) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.pending = cp
	if cp.Setup != nil {
		s.setup, s.setupFor = cp.Setup, cp.SetupDigest
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *saver) loop() {
	defer close(s.done)
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("internal error in the checkpoint writer: no more checkpoints", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	for {
		select {
		case <-s.wake:
			s.flush()
		case <-s.quit:
			s.flush()
			return
		}
	}
}

func (s *saver) flush() {
	s.mu.Lock()
	cp := s.pending
	s.pending = nil
	s.mu.Unlock()
	if cp == nil {
		return
	}
	// The round part is encoded in write, here, off the federation's lock.
	err := s.write(cp)
	s.mu.Lock()
	if err != nil && !s.stopped {
		if s.pending == nil {
			s.pending = cp // tried again unless a newer one comes first
		}
		if s.retry != nil {
			s.retry.Stop()
		}
		s.retry = time.AfterFunc(checkpointRetry, func() {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		})
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Error("checkpoint not written", "round", cp.Round, "error", err)
	}
	if s.report != nil {
		s.report(cp.Round, err)
	}
}

func (s *saver) write(cp *protocol.Checkpoint) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if cp.SetupDigest != s.written {
		s.mu.Lock()
		setup, ok := s.setup, s.setupFor == cp.SetupDigest && s.setup != nil
		s.mu.Unlock()
		if !ok {
			return fmt.Errorf("round %d's checkpoint names a setup part that never came", cp.Round)
		}
		if err := writeFileAtomic(filepath.Join(s.dir, "setup.bin"), setup); err != nil {
			return err
		}
		s.written = cp.SetupDigest
	}
	s.mu.Lock()
	if s.setupFor == s.written {
		s.setup = nil // on disk
	}
	s.mu.Unlock()
	if err := writeFileAtomicFrom(filepath.Join(s.dir, "round.bin"), cp.WriteRound); err != nil {
		return err
	}
	s.mu.Lock()
	s.saved++
	s.last = cp.Round
	s.mu.Unlock()
	return nil
}

// stop writes what is pending and ends the loop.
func (s *saver) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	if s.retry != nil {
		s.retry.Stop()
	}
	s.mu.Unlock()
	close(s.quit)
	<-s.done
}

var nameWords = [2][]string{
	{"amber", "azure", "coral", "ivory", "jade", "lilac", "ochre", "olive", "pearl", "plum", "rose", "sage", "slate", "teal", "umber", "violet"},
	{"badger", "crane", "dingo", "egret", "ferret", "gecko", "heron", "ibis", "koala", "lemur", "marten", "newt", "otter", "puffin", "quail", "raven"},
}

// pseudonymFor names participant k: readable on a dashboard, saying
// nothing about who it is.
func pseudonymFor(k int, fed string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", fed, k)))
	return fmt.Sprintf("%s-%s-%d", nameWords[0][h[0]%16], nameWords[1][h[1]%16], k+1)
}
