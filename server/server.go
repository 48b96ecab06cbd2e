// Package server is hyfed's coordinator service: federations created
// through a JSON API, participants on websockets, the coordinator state
// machine of shared/protocol under one lock per federation, checkpoints
// after every round, a status API and a live event stream, and the web
// pages (embedded).
package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"golang.org/x/net/netutil"
)

// Options configure a Server.
type Options struct {
	// DataDir holds one folder per federation (meta.json, checkpoints).
	DataDir string
	// AllowedOrigins are the origins the pages are served from (e.g.
	// https://hyfed.example.org; "*" for any): only pages of these
	// origins, or of this server reached on a loopback address, may open
	// participant sockets. The Host header is not trusted (DNS rebinding).
	AllowedOrigins []string
	// Limits bound every frame a participant sends.
	Limits protocol.Limits
	// MaxParticipants bounds each federation's registrations.
	MaxParticipants int
	// CreateToken is required (as a bearer token) to create federations
	// and to list them all. Without one, only OpenCreate lets anyone
	// create (hyfed serve makes a token at start unless --open-create).
	CreateToken string
	// OpenCreate lets anyone who reaches the server create federations,
	// within the quotas (per address).
	OpenCreate bool
	// MaxFederations bounds the live (not ended) federations; MaxPerCreator
	// those of one creator (a create token, or an address under
	// OpenCreate).
	MaxFederations, MaxPerCreator int
	// CreateRate is how many creations per second one address may make,
	// in bursts of CreateBurst.
	CreateRate  float64
	CreateBurst int
	// UnstartedTTL removes a federation that has not started that long
	// after its creation; Retention removes an ended one that long after
	// it ended. Their folders (checkpoints) go with them.
	UnstartedTTL, Retention time.Duration
	// HelloLimit is the read limit of a socket until it has registered:
	// the hello is the only frame before it (about 41 bytes a sample:
	// 2.9 MB for all 70,000 Fashion-MNIST images in one block).
	HelloLimit int
	// MaxPending bounds the sockets of one federation that have not
	// registered yet (so invite holders can hold at most MaxPending x
	// HelloLimit bytes of it).
	MaxPending int
	// TLS says the server is reached over HTTPS (HSTS is sent).
	TLS bool
	// MaxConns bounds the open connections (Listener); IdleTimeout closes
	// a keep-alive connection idle that long (HTTPServer).
	MaxConns    int
	IdleTimeout time.Duration
	Log         *slog.Logger
	// Received, if set, sees every frame a participant's connection
	// delivered, before the server acts on it: what the server actually
	// got (the privacy tests read it). client is -1 for the frames of a
	// connection its hello has not registered (the hello itself). It runs
	// in the connection's goroutine, so it must be quick; frame is the
	// server's: read it, copy what you keep.
	Received func(federation string, client int, frame []byte)
	// Sent, if set, sees every frame the server sends a registered
	// participant, before it is written: with Received, the server's whole
	// side of the conversation. As Received, in the connection's goroutine.
	// Received and Sent are one observer of each federation's frames, the
	// curious-server demonstration (Curious) another beside them
	// (observe.go): both see every frame.
	Sent func(federation string, client int, frame []byte)
	// Demo, if set, supplies demo federations' blocks and simulated
	// participants (the dashboard's "fill the free seats").
	Demo DemoData
	// DemoModel describes the demo federations' data for their model's
	// sidecar (data, partition, bias feature): the server never sees the
	// data, but hyfed serve --demo chose it. Only Data, Partition,
	// BiasFeature and BiasValue are read.
	DemoModel *model.Info
	// InsecureDemo admits federations that seal nothing (scheme
	// "plaintext": the server can read dual values and inner products), to
	// demonstrate what encryption prevents. Off by default: such a
	// federation is refused (hyfed serve --insecure-demo turns it on).
	InsecureDemo bool
	// Curious runs the curious-server demonstration: the server attacks
	// what it receives, to show what encryption protects. Each federation
	// gets a curious.Observer that watches every message its connections
	// read and write, as Received and Sent do, and a worker that
	// reconstructs each participant's rows from them every few seconds, off
	// the round loop (attack.go). It holds a copy of every readable
	// inner-product vector and a reconstruction of every block: memory of
	// the order of the federation's data, for demonstrations only.
	Curious bool
}

// Server holds the federations.
type Server struct {
	opt  Options
	log  *slog.Logger
	mu   sync.Mutex
	feds map[string]*federation
	// taken marks the demo blocks handed out, per federation.
	taken map[string]map[int]bool

	quit, janitorDone chan struct{}
	closeOnce         sync.Once
}

// Defaults are the limits a zero Options field gets: what one 2-core box
// with 24 GiB serves (docs/security.md says how they were measured).
var Defaults = Options{
	Limits:          protocol.Limits{MaxBytes: 64 << 20, MaxChunks: protocol.DefaultLimits.MaxChunks},
	MaxParticipants: 5000,
	MaxFederations:  1000,
	MaxPerCreator:   100,
	CreateRate:      1,
	CreateBurst:     20,
	UnstartedTTL:    24 * time.Hour,
	Retention:       7 * 24 * time.Hour,
	HelloLimit:      4 << 20,
	MaxPending:      32,
	MaxConns:        20000,
	IdleTimeout:     2 * time.Minute,
}

func (o *Options) setDefaults() {
	d := Defaults
	if o.Limits.MaxBytes == 0 {
		o.Limits = d.Limits
	}
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&o.MaxParticipants, d.MaxParticipants)
	set(&o.MaxFederations, d.MaxFederations)
	set(&o.MaxPerCreator, d.MaxPerCreator)
	set(&o.CreateBurst, d.CreateBurst)
	set(&o.HelloLimit, d.HelloLimit)
	set(&o.MaxPending, d.MaxPending)
	set(&o.MaxConns, d.MaxConns)
	if o.IdleTimeout == 0 {
		o.IdleTimeout = d.IdleTimeout
	}
	if o.CreateRate == 0 {
		o.CreateRate = d.CreateRate
	}
	if o.UnstartedTTL == 0 {
		o.UnstartedTTL = d.UnstartedTTL
	}
	if o.Retention == 0 {
		o.Retention = d.Retention
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// New opens the data directory and restores every federation in it.
func New(opt Options) (*Server, error) {
	if opt.DataDir == "" {
		return nil, errors.New("server: no data directory")
	}
	opt.setDefaults()
	s := &Server{opt: opt, log: opt.Log, feds: map[string]*federation{}, taken: map[string]map[int]bool{},
		quit: make(chan struct{}), janitorDone: make(chan struct{})}
	root := filepath.Join(opt.DataDir, "federations")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("server: data directory: %w", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("server: data directory: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name(), "meta.json")
		b, err := os.ReadFile(path)
		if err != nil {
			s.log.Error("skipping federation folder", "path", path, "error", err)
			continue
		}
		var m meta
		if err := json.Unmarshal(b, &m); err != nil {
			s.log.Error("skipping federation folder", "path", path, "error", err)
			continue
		}
		scheme, err := seal.ByName(m.Scheme)
		if err != nil {
			s.log.Error("skipping federation folder", "path", path, "error", err)
			continue
		}
		// Loaded when first used (federation.ensure).
		s.feds[m.ID] = newFederation(s, m, scheme)
	}
	go s.janitor()
	return s, nil
}

// Close ends every connection and writes the last checkpoints.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.quit)
		<-s.janitorDone
	})
	for _, f := range s.snapshot() {
		f.close()
	}
}

// snapshot lists the federations, loaded or not.
func (s *Server) snapshot() []*federation {
	s.mu.Lock()
	defer s.mu.Unlock()
	feds := make([]*federation, 0, len(s.feds))
	for _, f := range s.feds {
		feds = append(feds, f)
	}
	return feds
}

// all returns the loaded federations.
func (s *Server) all() []*federation {
	feds := s.snapshot()
	out := feds[:0]
	for _, f := range feds {
		if f.ensure() {
			out = append(out, f)
		}
	}
	return out
}

// CreateRequest is the body of POST /api/federations: the federation's
// protocol.Config (its JSON fields inline: algo, loss, lambda, rounds,
// fraction, inner, iic, min_participants, ...) and what only the server
// keeps. The API starts a request from NewCreateRequest, so a field left
// out of the JSON keeps its default, while a value given is used as
// given (lambda 0 is refused, not replaced).
type CreateRequest struct {
	Name   string `json:"name"`
	Scheme string `json:"scheme"` // bgv (default) or plaintext
	protocol.Config
	ManualStart  bool     `json:"manual_start"` // the organizer starts it, not the last registration
	RoundTimeout Duration `json:"round_timeout"`
	// MaxParticipants, if set, is the most participants the invite may
	// register (at least min_participants): past it a registration is
	// refused, "the federation is full". 0: min_participants under an
	// automatic start (which those start), the server's limit under a
	// manual one.
	MaxParticipants int `json:"max_participants,omitempty"`
	// Fingerprint is the key fingerprint of the organizer's secret: only
	// participants holding that secret are admitted.
	Fingerprint string `json:"fingerprint"`
	Demo        bool   `json:"demo,omitempty"`
	// PStar, if known (from hyfed central on the pooled data, say), is the
	// optimum the pages measure the relative loss (P-P*)/P* by; without
	// it they show the relative duality gap, an upper bound of it.
	PStar float64 `json:"pstar,omitempty"`
}

// NewCreateRequest returns a request with protocol.Defaults.
func NewCreateRequest() CreateRequest { return CreateRequest{Config: protocol.Defaults()} }

// CreateResponse is what creating a federation returns. The tokens are
// shown once; the server keeps only their hashes.
type CreateResponse struct {
	ID          string `json:"id"`
	AdminToken  string `json:"admin_token"`
	ViewerToken string `json:"viewer_token"`
	InviteToken string `json:"invite_token"`
	// JoinPath is the join link without its secret: append
	// "&secret=<secret>" (only the organizer has it).
	JoinPath string `json:"join_path"`
	// DashboardPath is the dashboard with the viewer token (to share);
	// AdminPath with the admin token (the organizer's own).
	DashboardPath string `json:"dashboard_path"`
	AdminPath     string `json:"admin_path"`
}

// Create sets up a federation for the server's own operator (hyfed serve
// --demo, tests): the quotas count it as the operator's.
func (s *Server) Create(req CreateRequest) (*CreateResponse, error) {
	return s.create(req, "operator")
}

// errQuota is a creation refused by a quota.
type errQuota struct{ msg string }

func (e errQuota) Error() string { return e.msg }

// create sets up a federation made by creator (a hash).
func (s *Server) create(req CreateRequest, creator string) (*CreateResponse, error) {
	if req.Scheme == "" {
		req.Scheme = "bgv"
	}
	scheme, err := seal.ByName(req.Scheme)
	if err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if req.Keys == protocol.KeysThreshold {
		// Sealed under the collective key of the participants' threshold
		// key; the coordinator switches every sum to its receiver's own.
		switch scheme.Name() {
		case "plaintext":
			return nil, errors.New("keys threshold: scheme plaintext seals nothing, so there is no key to split: use one or the other")
		case "bgv", "bgv-threshold":
			if scheme, err = seal.ThresholdScheme(); err != nil {
				return nil, fmt.Errorf("keys threshold: %w", err)
			}
		default:
			return nil, fmt.Errorf("keys threshold: scheme %s: want bgv", scheme.Name())
		}
	} else if scheme.Name() == "bgv-threshold" {
		return nil, fmt.Errorf("scheme bgv-threshold: the scheme of keys threshold, but keys %q", req.Keys)
	}
	if scheme.Name() == "plaintext" && !s.opt.InsecureDemo {
		return nil, errors.New("scheme plaintext: this server refuses federations without encryption (the server could read every dual value and inner product); start it with --insecure-demo to demonstrate that, with demo data only")
	}
	if req.Clients < 1 {
		return nil, fmt.Errorf("min_participants %d: at least 1", req.Clients)
	}
	if req.Clients > s.opt.MaxParticipants {
		return nil, fmt.Errorf("min_participants %d: this server admits at most %d per federation", req.Clients, s.opt.MaxParticipants)
	}
	if req.MaxParticipants != 0 && (req.MaxParticipants < req.Clients || req.MaxParticipants > s.opt.MaxParticipants) {
		return nil, fmt.Errorf("max_participants %d: between min_participants (%d) and this server's limit (%d), or 0", req.MaxParticipants, req.Clients, s.opt.MaxParticipants)
	}
	if req.RoundTimeout == 0 {
		req.RoundTimeout = Duration(time.Minute)
	}
	if req.RoundTimeout < Duration(time.Second) || req.RoundTimeout > Duration(24*time.Hour) {
		return nil, fmt.Errorf("round_timeout %v: between 1s and 24h", time.Duration(req.RoundTimeout))
	}
	if len(req.Name) > 200 {
		return nil, errors.New("name: at most 200 bytes")
	}
	if req.Fingerprint != "" && len(req.Fingerprint) != 32 {
		return nil, fmt.Errorf("fingerprint: %d characters, want 32 hex digits", len(req.Fingerprint))
	}
	if req.PStar < 0 || math.IsNaN(req.PStar) || math.IsInf(req.PStar, 0) {
		return nil, fmt.Errorf("pstar %v: the optimum is a finite number >= 0", req.PStar)
	}
	if req.Seed != 0 && !s.opt.InsecureDemo {
		return nil, errors.New("seed: a seeded federation's secret can be derived from its seed (hyfed create --seed); this server refuses them (start it with --insecure-demo to run reproducible demonstrations)")
	}
	cfg := req.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Rounds < 1 {
		return nil, fmt.Errorf("rounds %d: at least 1", cfg.Rounds)
	}
	admin, viewer, invite := newToken(24), newToken(18), newToken(18)
	m := meta{ID: strings.ToLower(newToken(9)), Name: req.Name, Created: time.Now().UTC(), Algo: cfg.Algo,
		Scheme: scheme.Name(), Config: cfg, Fingerprint: req.Fingerprint, RoundTimeout: req.RoundTimeout,
		AutoStart: !req.ManualStart, MaxParticipants: req.MaxParticipants, AdminHash: hashToken(admin), ViewerHash: hashToken(viewer),
		InviteHash: hashToken(invite), Demo: req.Demo, PStar: req.PStar, Creator: creator}
	m.ID = strings.NewReplacer("-", "x", "_", "y").Replace(m.ID)
	f := newFederation(s, m, scheme)
	// The quotas and the insertion under one lock: concurrent creations
	// cannot both take the last place.
	s.mu.Lock()
	live, mine := 0, 0
	for _, g := range s.feds {
		if !g.ended.Load() {
			live++
			if g.meta.Creator == creator {
				mine++
			}
		}
	}
	switch {
	case live >= s.opt.MaxFederations:
		s.mu.Unlock()
		return nil, errQuota{fmt.Sprintf("this server holds %d live federations, its limit: try again when some have ended", live)}
	case mine >= s.opt.MaxPerCreator:
		s.mu.Unlock()
		return nil, errQuota{fmt.Sprintf("you have %d live federations, the limit per creator: delete one (DELETE /api/federations/<id> with its admin token) or wait until one ends", mine)}
	}
	s.feds[m.ID] = f
	s.mu.Unlock()
	f.mu.Lock()
	err = f.saveMeta()
	f.mu.Unlock()
	if err == nil && (!f.ensure() || f.broken != "") {
		err = fmt.Errorf("federation %s: cannot be set up: %s", m.ID, f.broken)
	}
	if err != nil {
		s.remove(f)
		return nil, err
	}
	s.log.Info("federation created", "id", m.ID, "name", m.Name, "min_participants", cfg.Clients, "rounds", cfg.Rounds, "scheme", m.Scheme)
	return &CreateResponse{ID: m.ID, AdminToken: admin, ViewerToken: viewer, InviteToken: invite,
		JoinPath: "/join/" + m.ID + "#invite=" + invite, DashboardPath: "/federations/" + m.ID + "#viewer=" + viewer,
		AdminPath: "/federations/" + m.ID + "#admin=" + admin}, nil
}

// ParticipantView is a participant as the status shows it.
type ParticipantView struct {
	Name     string `json:"name"`
	State    string `json:"state"` // connected, ready, away, finished, left-before-start, refused
	Samples  int    `json:"samples"`
	Features int    `json:"features"`
	Active   bool   `json:"active"`
	// Reason says why the federation refused the participant.
	Reason string `json:"reason,omitempty"`
}

// ConfigView is a federation's configuration as its status shows it: the
// protocol.Config without the seed (a seeded federation's secret derives
// from it) and the server's own settings.
type ConfigView struct {
	protocol.Config
	Scheme       string  `json:"scheme"`
	ManualStart  bool    `json:"manual_start"`
	RoundTimeout string  `json:"round_timeout"`
	PStar        float64 `json:"pstar,omitempty"` // the organizer's known optimum, if given
}

// Status is GET /api/federations/{id}.
type Status struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	State   string    `json:"state"`
	Error   string    `json:"error,omitempty"`
	Demo    bool      `json:"demo,omitempty"`
	// Insecure marks a federation without encryption (--insecure-demo):
	// every page shows it in red.
	Insecure     bool              `json:"insecure,omitempty"`
	Config       ConfigView        `json:"config"`
	Round        int               `json:"round"`
	Phase        string            `json:"phase"`
	Samples      int               `json:"training_samples"`
	Participants []ParticipantView `json:"participants"`
	History      []*MetricsView    `json:"history"`
	WireIn       int64             `json:"wire_bytes_to_server"`
	WireOut      int64             `json:"wire_bytes_from_server"`
	// Curious says the server runs the curious-server demonstration on
	// this federation (Options.Curious; GET .../attack).
	Curious bool `json:"curious,omitempty"`
	// Model is the model the federation hands out (GET .../model without
	// w): the best iterate so far, or the current one before any round
	// had a primal.
	Model *ModelSummary `json:"model,omitempty"`
	// Heldout is the held-out samples the accuracy is measured on (none:
	// the pages show no held-out accuracy); LeftOut the samples left out
	// for want of a label (a federation with a schema).
	Heldout int `json:"heldout_samples"`
	LeftOut int `json:"left_out,omitempty"`
	// Notices are what the federation told its organizer (participants it
	// refused, and why); Warnings what went wrong in training that a
	// "finished" alone would hide (warnings).
	Notices  []string `json:"notices,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Converged: training ended before its last round because the model
	// was certified within the configuration's tol.
	Converged bool `json:"converged,omitempty"`
}

// ModelSummary says which iterate the federation hands out.
type ModelSummary struct {
	Round           int   `json:"round"`
	Best            bool  `json:"best"`
	Primal          Float `json:"primal"`
	HeldoutAccuracy Float `json:"heldout_accuracy"`
	// Bound: the model's objective is at most this far above the optimum,
	// relative, as the duality gap certifies (null: not yet; baselines).
	Bound Float `json:"bound"`
}

// participantState names a registered participant's state for people:
// once the federation has ended, everyone who took part is "finished",
// not "away".
func participantState(ci protocol.ClientInfo, ended bool) string {
	switch {
	case ended:
		return "finished"
	case ci.Connected && ci.Ready:
		return "ready"
	case ci.Connected:
		return "connected"
	default:
		return "away"
	}
}

func (f *federation) status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := Status{ID: f.meta.ID, Name: f.meta.Name, Created: f.meta.Created, State: f.stateLocked(), Error: cmp.Or(f.broken, f.degraded), Demo: f.meta.Demo,
		Insecure: f.meta.Scheme == "plaintext",
		Config:   configView(f.coord.Config(), f.meta),
		Round:    f.coord.Round(), Phase: f.coord.Phase(), Samples: f.coord.NumTrain(),
		Participants: []ParticipantView{}, History: []*MetricsView{},
		WireIn: f.wireIn.Load(), WireOut: f.wireOut.Load(), Curious: f.attack != nil}
	infos := f.coord.Clients()
	for k, name := range f.names {
		pv := ParticipantView{Name: name, State: "left-before-start"}
		if k < len(infos) && infos[k].Registered {
			ci := infos[k]
			pv.Samples, pv.Features, pv.Active, pv.State = ci.Samples, ci.Features, ci.Active, participantState(ci, f.finished)
			if ci.Dropped != "" {
				pv.State, pv.Reason = "dropped", ci.Dropped
			}
		} else if k < len(infos) && infos[k].Refused != "" {
			pv.State, pv.Reason = "refused", infos[k].Refused
		}
		st.Participants = append(st.Participants, pv)
	}
	hist := f.coord.History()
	for _, r := range hist {
		st.History = append(st.History, metricsView(r))
	}
	var best *protocol.Iterate
	if f.coord.Started() {
		m := f.coord.Model()
		best = &m
		st.Model = &ModelSummary{Round: m.Round, Best: m.Best, Primal: Float(m.Primal), HeldoutAccuracy: Float(m.HeldAcc), Bound: Float(f.coord.Bound())}
		st.Converged = f.coord.Converged() && f.coord.Finished()
	}
	st.Heldout, st.LeftOut, st.Notices = f.coord.NumHeldout(), f.coord.LeftOut(), f.coord.Notices()
	st.Warnings = warnings(hist, best, f.coord.Finished())
	return st
}

// stallRounds is how many rounds in a row may apply no step, with the
// gap still open, before the status warns that training stopped moving.
const stallRounds = 10

// warnings says what went wrong in training that the state alone would
// hide: rounds that ran without every participant, a run that stopped
// moving, a last iterate above the first round's primal, a model that is
// the starting point.
func warnings(hist []protocol.RoundMetrics, best *protocol.Iterate, finished bool) []string {
	var out []string
	if len(hist) < 2 {
		if finished && best != nil {
			out = append(out, "the federation ended before its first round: it has learned nothing")
		}
		return out
	}
	partial := 0
	for _, r := range hist[1:] {
		if r.Partial {
			partial++
		}
	}
	if partial > 0 {
		out = append(out, fmt.Sprintf("%d of %d rounds ran without every participant: the samples of the missing ones did not move in them", partial, len(hist)-1))
	}
	stalled := 0
	for i := len(hist) - 1; i > 0 && hist[i].Gamma == 0; i-- {
		stalled++
	}
	last := hist[len(hist)-1]
	if gap := (last.Primal - last.Dual) / math.Abs(last.Primal); stalled >= stallRounds && gap > 1e-3 {
		out = append(out, fmt.Sprintf("the last %d rounds applied no step while the relative duality gap is still %.2g: training stopped moving", stalled, gap))
	}
	first := hist[0] // of the objective: a re-forming after a drop starts another
	for _, r := range hist {
		if r.Reformed {
			first = r
		}
	}
	if last.Primal > first.Primal {
		out = append(out, fmt.Sprintf("the last round's primal %.4g is above round %d's %.4g", last.Primal, first.Round, first.Primal))
	}
	if finished && best != nil && best.Round == 0 {
		out = append(out, "the model the federation hands out is its starting point (round 0, all weights 0): it has learned nothing")
	}
	return out
}

// Summary is one line of GET /api/federations.
type Summary struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	State        string    `json:"state"`
	Created      time.Time `json:"created"`
	Round        int       `json:"round"`
	Rounds       int       `json:"rounds"`
	Participants int       `json:"participants"`
	Demo         bool      `json:"demo,omitempty"`
	Insecure     bool      `json:"insecure,omitempty"`
}

func (s *Server) list() []Summary {
	out := []Summary{}
	for _, f := range s.all() {
		f.mu.Lock()
		out = append(out, Summary{ID: f.meta.ID, Name: f.meta.Name, State: f.stateLocked(), Created: f.meta.Created,
			Round: f.coord.Round(), Rounds: f.coord.Config().Rounds, Participants: len(f.names), Demo: f.meta.Demo,
			Insecure: f.meta.Scheme == "plaintext"})
		f.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}

// HTTPServer is the http.Server for Handler, with the timeouts that keep
// idle and slow connections from holding the server: a request's headers
// within 10 s, the whole request within 30 s, a keep-alive connection
// closed after Options.IdleTimeout idle. Websockets and the event stream
// set their own deadlines once they run.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: s.opt.IdleTimeout, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
}

// Listener bounds ln to Options.MaxConns open connections: past it,
// new ones wait in the kernel's queue.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, s.opt.MaxConns)
}

// configView is what the status shows of a federation's configuration.
func configView(cfg protocol.Config, m meta) ConfigView {
	cfg.Seed = 0
	return ConfigView{Config: cfg, Scheme: m.Scheme, ManualStart: !m.AutoStart,
		RoundTimeout: time.Duration(m.RoundTimeout).String(), PStar: m.PStar}
}
