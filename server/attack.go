package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hyfed/hyfed/shared/curious"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/labstack/echo/v4"
)

// The curious-server demonstration (Options.Curious): the server attacks
// what it receives, live, to show what encryption protects. It is one of
// a federation's frame observers (observe.go): every message its
// connections read or write goes to a curious.Observer (a copy of its
// vectors, taken in the connection's goroutine); a worker
// per federation runs the inner-product attack (the leak the HyFDCA paper points out) on
// them off the round loop, at most every attackEvery, and keeps the
// latest reconstruction of each participant. Progress is public
// (GET .../attack); a participant's reconstructed rows go only to the
// holder of its session token (GET .../attack/rows).

const (
	// attackEvery is the least time between two reconstructions of one
	// federation. A reconstruction that took longer waits twice its own
	// time: the attack takes at most a third of a core from the rounds.
	attackEvery = 2 * time.Second
	// settleTol is how little a row's estimate may move between
	// reconstructions to count as recovered (curious.SettledRows).
	settleTol = 1e-3
	// Row requests: 64 rows unless asked, at most 256 (a tab compares a
	// few rows it holds, it does not download the block).
	defaultAttackRows = 64
	maxAttackRows     = 256
)

// attack is one federation's curious server.
type attack struct {
	log   *slog.Logger
	obs   *curious.Observer
	round atomic.Int64 // the last round the federation finished, for labels
	// failed: a pass panicked and the worker stopped.
	failed atomic.Bool
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	results map[int]*attackResult // per client: the latest reconstruction
}

// attackResult is one reconstruction of a client's block. It is never
// changed once stored, so readers use it without the lock.
type attackResult struct {
	rec      *curious.Reconstruction // nil: no equation to solve yet
	round    int                     // the federation's last finished round when it was taken
	settled  []bool                  // rows that stopped moving (curious.SettledRows)
	nSettled int
	seconds  float64
	refined  bool // settled counted against the last rise in rank (refine)
}

func newAttack(f *federation) *attack {
	a := &attack{log: f.log, obs: curious.NewObserver(f.meta.Scheme),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), results: map[int]*attackResult{}}
	go a.loop()
	return a
}

// frame records one message between the server and client k (toServer:
// the client sent it), as a frameObserver: the message the connection
// just decoded or encoded, no second decode. It copies what it keeps and
// solves nothing. Frames of unregistered connections (hellos) and frames
// that did not decode tell it nothing.
func (a *attack) frame(toServer bool, client int, _ []byte, m *protocol.Message) {
	if client < 0 || m == nil {
		return
	}
	a.obs.Observe(toServer, client, m)
}

// registered records client k's hello, before the welcome and the setup
// that answer it are queued: what the server got first.
func (a *attack) registered(client int, hello *protocol.Message) {
	a.obs.Observe(true, client, hello)
}

// roundDone tells the worker that round r finished. Called with f.mu
// held: it never blocks.
func (a *attack) roundDone(r int) {
	if a == nil {
		return
	}
	a.round.Store(int64(r))
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *attack) stop() {
	if a == nil {
		return
	}
	a.once.Do(func() { close(a.quit) })
	<-a.done
}

func (a *attack) loop() {
	defer close(a.done)
	var last time.Time
	var took time.Duration
	for {
		select {
		case <-a.quit:
			return
		case <-a.wake:
		}
		if wait := max(attackEvery, 2*took) - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-a.quit:
				t.Stop()
				return
			case <-t.C:
			}
		}
		start := time.Now()
		if !a.safeReconstruct() {
			return
		}
		last, took = time.Now(), time.Since(start)
	}
}

// safeReconstruct runs a pass; a panic (the attack runs on what
// participants sent) ends the demonstration for this federation, not the
// server, and the views say so.
func (a *attack) safeReconstruct() (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("curious server: internal error, the attack stops", "panic", r, "stack", string(debug.Stack()))
			a.failed.Store(true)
			ok = false
		}
	}()
	a.reconstruct()
	return true
}

// reconstructIP is the attack's solver (a variable so that a test can
// make it panic).
var reconstructIP = (*curious.Observer).ReconstructIP

// reconstruct runs the attack on every client with new equations. A pass
// that found some wakes the worker once more: the quiet pass after the
// last round settles the final count of rows (refine).
func (a *attack) reconstruct() {
	round := int(a.round.Load())
	changed := false
	for _, k := range a.obs.Clients() {
		select {
		case <-a.quit:
			return // the server closes: do not make it wait for every client
		default:
		}
		p := a.obs.Progress(k)
		prev := a.result(k)
		if !p.SetUp {
			continue
		}
		var res *attackResult
		if prev != nil && (prev.rec == nil && p.Equations == 0 || prev.rec != nil && prev.rec.Equations == p.Equations) {
			// Nothing new to solve: the same result holds at this round.
			same := *prev
			same.round = round
			if same.rec != nil && !same.refined {
				a.refine(k, p, &same)
			}
			res = &same
		} else {
			changed = true
			res = &attackResult{round: round}
			if p.Equations > 0 {
				start := time.Now()
				rec, err := reconstructIP(a.obs, k, 0)
				if err != nil {
					a.log.Warn("curious server: reconstruction failed", "client", k, "error", err)
					continue
				}
				res.rec, res.seconds = rec, time.Since(start).Seconds()
				var before *curious.Reconstruction
				if prev != nil {
					before = prev.rec
				}
				switch {
				case before != nil && before.Rank == rec.Rank:
					// No new direction, no new information on which rows
					// are pinned down: rows stand where they stood.
					res.settled, res.nSettled = prev.settled, prev.nSettled
				default:
					res.setSettled(before, a.log, k)
				}
			}
		}
		a.mu.Lock()
		a.results[k] = res
		a.mu.Unlock()
	}
	if changed {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// refine recounts the settled rows of a reconstruction no new equation has
// followed (the federation finished, or the client sits out). During
// training a pass compares with the pass before, which may be many rounds
// and ranks behind when rounds are fast, and counts too few rows; here the
// comparison is with the reconstruction just before the last rise in rank
// (found by bisection on the rank alone, which is cheap): the rows that
// did not move when the last new direction came in. Once per result.
func (a *attack) refine(k int, p curious.Progress, res *attackResult) {
	res.refined = true
	rec := res.rec
	if rec.Rank == rec.Unknowns {
		return // every row is determined: SettledRows said so already
	}
	rank := func(upTo int) int {
		r, err := a.obs.RankIP(k, upTo)
		if err != nil {
			a.log.Warn("curious server: rank", "client", k, "error", err)
			return rec.Rank // stop the search
		}
		return r
	}
	// The last round lo after which the rank still rose: rank(lo) <
	// rec.Rank = rank(hi).
	lo, hi := 1, p.LastRound
	if lo >= hi || rank(lo) >= rec.Rank {
		return
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; rank(mid) < rec.Rank {
			lo = mid
		} else {
			hi = mid
		}
	}
	ref, err := a.obs.ReconstructIP(k, lo)
	if err != nil {
		a.log.Warn("curious server: reconstruction failed", "client", k, "error", err)
		return
	}
	res.setSettled(ref, a.log, k)
}

// setSettled marks the rows of r.rec that did not move since before.
func (r *attackResult) setSettled(before *curious.Reconstruction, log *slog.Logger, k int) {
	s, err := curious.SettledRows(before, r.rec, settleTol)
	if err != nil {
		log.Warn("curious server: settled rows", "client", k, "error", err)
		s = make([]bool, len(r.rec.Slots))
	}
	r.settled, r.nSettled = s, 0
	for _, ok := range s {
		if ok {
			r.nSettled++
		}
	}
}

func (a *attack) result(k int) *attackResult {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.results[k]
}

// attackStatus says in words where the attack on one client stands: rows
// are being recovered from 1% of them settled on, recovered from 99%.
// Shares, because blank rows (a quadrant without ink) never move and
// settle from the first equations on (0.55% of MNIST's top-left quadrant).
func attackStatus(p curious.Progress, r *attackResult) string {
	switch {
	case !p.SetUp:
		return "waiting for the participant's setup"
	case p.Equations == 0 && p.Unreadable > 0:
		return fmt.Sprintf("nothing readable: %d sealed vectors", p.Unreadable)
	case p.Equations == 0:
		return "waiting for inner products"
	case r == nil || r.rec == nil || 100*r.nSettled < len(r.settled):
		return "collecting equations"
	case 100*r.nSettled < 99*len(r.settled):
		return "recovering rows"
	}
	return "rows recovered"
}

// AttackView is GET /api/federations/{id}/attack: how far the curious
// server's attack on each participant has come. No data values.
type AttackView struct {
	ID     string `json:"id"`
	Scheme string `json:"scheme"`
	Round  int    `json:"round"` // the federation's last finished round
	Attack string `json:"attack"`
	Note   string `json:"note"`
	// EverySeconds is the least time between two reconstructions.
	EverySeconds float64          `json:"every_seconds"`
	Participants []AttackProgress `json:"participants"`
}

// AttackProgress is the attack on one participant.
type AttackProgress struct {
	Client   int    `json:"client"`
	Name     string `json:"name"`
	Samples  int    `json:"samples"`
	Training int    `json:"training_samples"`
	Features int    `json:"features"`
	// Equations are the readable inner-product vectors observed so far
	// (one equation per sample each), from Rounds rounds.
	Equations int `json:"equations"`
	Rounds    int `json:"rounds"`
	// Unreadable counts the sealed vectors from or to the participant the
	// attack could not open (all of them under BGV).
	Unreadable int `json:"unreadable"`
	// Rank is how many directions of the participant's feature space the
	// equations of the last reconstruction determine (at most Features).
	Rank int `json:"rank"`
	// RowsDetermined are the rows whose estimate did not move when new
	// directions came in (curious.SettledRows): against the reconstruction
	// before while training runs, against the last rise in rank once the
	// equations stop (refine). The server's own judgement of what it has,
	// without the data.
	RowsDetermined int    `json:"rows_determined"`
	Status         string `json:"status"`
	// ReconstructedRound is the round of the last reconstruction (null:
	// none yet), ReconstructSeconds what it took.
	ReconstructedRound *int    `json:"reconstructed_round"`
	ReconstructSeconds float64 `json:"reconstruct_seconds"`
}

// AttackRows is GET /api/federations/{id}/attack/rows: the server's
// reconstruction of the rows of the participant whose session token came
// with the request, and of nobody else.
type AttackRows struct {
	Client int    `json:"client"`
	Name   string `json:"name"`
	Scheme string `json:"scheme"`
	Status string `json:"status"`
	// Round is the round of the reconstruction (null: none yet).
	Round      *int `json:"round"`
	Equations  int  `json:"equations"`
	Rank       int  `json:"rank"`
	Unreadable int  `json:"unreadable"`
	TotalRows  int  `json:"total_rows"`
	From       int  `json:"from"`
	// Features are the global feature indexes of each row's values.
	Features []int       `json:"features"`
	Rows     []AttackRow `json:"rows"`
}

// AttackRow is one reconstructed row.
type AttackRow struct {
	// Index is the row's place in the participant's block (the order of
	// its hello, which is the order of its file).
	Index    int  `json:"index"`
	Training bool `json:"training"`
	// Values are the estimate on Features; null: the attack recovered
	// nothing (its best guess is zeros).
	Values []Float `json:"values"`
}

const attackName = "the server keeps the vectors it sent each participant (the model and each round's search direction) and the inner product each of the participant's samples returned with them, and solves these equations for the sample's values by least squares, one sample at a time (the leak the HyFDCA paper names among its open problems)"

func (s *Server) attackOf(c echo.Context) (*federation, access, error) {
	f, a, err := s.member(c, "the curious server's progress")
	if err != nil {
		return nil, a, err
	}
	if f.attack == nil {
		return nil, a, httpError(http.StatusNotFound, "no-attack", "this server does not run the curious-server demonstration (hyfed serve --curious)")
	}
	return f, a, nil
}

func (s *Server) handleAttack(c echo.Context) error {
	f, _, err := s.attackOf(c)
	if err != nil {
		return err
	}
	f.mu.Lock()
	names := append([]string(nil), f.names...)
	f.mu.Unlock()
	a := f.attack
	v := AttackView{ID: f.meta.ID, Scheme: f.meta.Scheme, Round: int(a.round.Load()), Attack: attackName,
		EverySeconds: attackEvery.Seconds(), Participants: make([]AttackProgress, 0, len(names))}
	if f.meta.Scheme == "plaintext" {
		v.Note = "This federation does not encrypt: the server reads every inner product and solves for the participants' rows."
	} else {
		v.Note = "The inner products reach the server only as BGV ciphertexts: the attack runs on what it receives and reads nothing."
	}
	if a.failed.Load() {
		v.Note += " The attack stopped on an internal error (the server's log has it); the numbers below are from before."
	}
	for k, name := range names {
		p := a.obs.Progress(k)
		r := a.result(k)
		ap := AttackProgress{Client: k, Name: name, Samples: p.Samples, Training: p.Training, Features: p.Features,
			Equations: p.Equations, Rounds: p.Rounds, Unreadable: p.Unreadable, Status: attackStatus(p, r)}
		if r != nil {
			round := r.round
			ap.ReconstructedRound, ap.ReconstructSeconds, ap.RowsDetermined = &round, r.seconds, r.nSettled
			if r.rec != nil {
				ap.Rank = r.rec.Rank
			}
		}
		v.Participants = append(v.Participants, ap)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, v)
}

func (s *Server) handleAttackRows(c echo.Context) error {
	f, a, err := s.attackOf(c)
	if err != nil {
		return err
	}
	k := a.client
	if a.role == roleAdmin {
		if k, err = strconv.Atoi(c.QueryParam("participant")); err != nil || k < 0 {
			return httpError(http.StatusBadRequest, "bad-field", "participant %q: the organizer names the participant (&participant=k, from 0)", c.QueryParam("participant"))
		}
	}
	if !a.mayReadClient(k) {
		return httpError(http.StatusForbidden, "bad-session", "the reconstruction of a participant's rows goes only to that participant (its session token) or the organizer")
	}
	f.mu.Lock()
	name := f.name(k)
	f.mu.Unlock()
	from, count := 0, defaultAttackRows
	for _, q := range []struct {
		name string
		dst  *int
		max  int
	}{{"from", &from, 1 << 30}, {"count", &count, maxAttackRows}} {
		if s := c.QueryParam(q.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > q.max {
				return httpError(http.StatusBadRequest, "bad-field", "%s %q: a whole number from 0 to %d", q.name, s, q.max)
			}
			*q.dst = n
		}
	}
	at := f.attack
	p := at.obs.Progress(k)
	r := at.result(k)
	out := AttackRows{Client: k, Name: name, Scheme: f.meta.Scheme, Status: attackStatus(p, r), Equations: p.Equations,
		Unreadable: p.Unreadable, TotalRows: p.Samples, From: from, Features: at.obs.Features(k), Rows: []AttackRow{}}
	training := at.obs.Training(k)
	var rec *curious.Reconstruction
	if r != nil {
		round := r.round
		out.Round, rec = &round, r.rec
	}
	if rec != nil {
		out.Rank, out.TotalRows = rec.Rank, len(rec.Slots)
	}
	for i := from; i < min(from+count, out.TotalRows); i++ {
		row := AttackRow{Index: i, Training: i >= len(training) || training[i]}
		if rec != nil && rec.X != nil {
			row.Values = floats(rec.X.RawRowView(i))
		}
		out.Rows = append(out.Rows, row)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}
