package protocol

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/hyfed/hyfed/shared/seal"
)

// Envelope is a message addressed to one participant.
type Envelope struct {
	To  int
	Msg Message
}

// RoundMetrics is what the coordinator records after every round.
type RoundMetrics struct {
	Round    int
	Primal   float64
	Dual     float64
	Gap      float64
	TrainAcc float64
	HeldAcc  float64
	Gamma    float64 // step applied (hyfed: line search; paper: the fixed gamma)
	Active   int     // clients active this round
	Updated  int     // sample groups updated this round (hyfed)
	Partial  bool    // some clients were missing, so P is not over all samples
	// Reformed: the federation re-formed before this round, without the
	// groups a dropped participant held (coordinator_reform.go): the
	// objective changed, and the dual may fall here.
	Reformed bool
	Seconds  map[string]float64
	BytesIn  int // participant -> coordinator
	BytesOut int // coordinator -> participant
}

type clientState struct {
	hello      *Message
	connected  bool
	ready      bool // set up, norms delivered
	stale      bool // its hat_w may not match the dual values: refresh before its next step
	returned   bool // came back and holds no dual values yet: refresh before anything
	slots      []int
	chunks     map[int]bool // layout chunks holding the client's samples
	groups     []int        // global group indexes, in the order of its Setup.GroupKeys
	localGroup map[int]int
	features   []int
	hatW       []float64 // nil under SealPrimal
	// sealedW is the client's last sealed share of w, hat_w_k/(lambda N)
	// per feature (SealPrimal under the paper rule, whose refreshes
	// replace it).
	sealedW seal.Vec
	// lastDW is the last plaintext share of a direction the client sent
	// (not under SealPrimal), for the privacy view: the leak it is.
	lastDW      []float64
	lastDWRound int
	trainN      int // its training samples
	localSteps  int // averaging baselines: local steps taken so far
	activeRound bool
	// wHeld is 1 + the version of w (Coordinator.wVersion) the client
	// holds on its features, 0 when unknown: a client that holds the
	// round's w before the step and got its trial direction follows the
	// step itself, and its weights message carries no w (finishRound).
	wHeld int
	// keyRejoin: the reply a returning participant's key exchange waits
	// for (threshold keys; "" when none is under way)
	keyRejoin Kind
	// statChunks: the statistics layout's chunks holding the client's
	// columns (a federation with a schema)
	statChunks map[int]bool
	// refused says why the federation turned the participant away (its
	// registration is forgotten)
	refused string
	// strikes counts its refused and missed replies, rejected its other
	// refused messages; dropped says why it was dropped for good
	// (coordinator_strikes.go). All three outlive its connections.
	strikes, rejected int
	dropped           string
	// disagree: the holders whose prices of a shared group differed
	// from its own (coordinator_crosscheck.go).
	disagree map[int]bool
}

type group struct {
	holders []int
	key     string
	train   int
	chunks  int // in the sample layout
	start   int // its first slot (a chunk boundary)
	size    int // its samples, in slots start..start+size-1; the rest of its chunks pad
}

type phaseState struct {
	name    string
	reply   Kind
	waiting map[int]bool
	replies map[int]Message
	dropped []int
	next    func(p *phaseState)
	started time.Time
	// summed: the replies' sealed vectors are added into sum as they
	// arrive and dropped from the stored replies (awaitSum): the server
	// holds one running sum per chunk instead of every reply's chunks.
	summed bool
	sum    seal.Vec
}

// Coordinator is the server's state machine: it aligns samples, runs rounds
// and aggregates sealed values it cannot open. It does no I/O: methods take
// what arrived and return what to send.
type Coordinator struct {
	cfg    Config
	scheme seal.Scheme
	now    func() time.Time
	rule   rule // the algorithm's part (Config.Algo)
	rng    *rand.Rand
	pcg    *rand.PCG // rng's source, saved in checkpoints

	clients     []*clientState
	fingerprint string
	started     bool
	finished    bool

	numFeatures int
	numTrain    int
	numHeld     int
	numSlots    int
	groups      []group
	chunkGroup  []int // per chunk of the sample layout: its sample group

	alpha seal.Vec // enc(a)
	norms seal.Vec // enc(q)
	w     []float64

	round   int
	phase   *phaseState
	cur     RoundMetrics
	history []RoundMetrics
	best    *Iterate // the certified iterate with the lowest primal so far
	// dualMax is the largest dual of the complete rounds since the
	// objective last changed, if dualSeen (coordinator_stop.go).
	dualMax  float64
	dualSeen bool
	out      []Envelope

	// round scratch
	updating   []int // groups updated this round
	direction  seal.Vec
	dirDW      map[int][]float64 // each holder's share of dw
	flow       roundFlow         // what the round's phases hand on
	ip         ipFlow            // what ipPhase's phases hand on
	needFullIP bool
	// wVersion counts the changes of w (stepW's, and every setting of it):
	// weights messages carry w only to clients that cannot follow the
	// last change.
	wVersion int
	// wStale: under SealPrimal an opening of w failed (no opener was
	// left); w is opened again before the next step.
	wStale    bool
	phaseGrid []float64 // the candidate steps being priced (nil: just metrics)
	// phaseReport: the local groups each participant reports in the
	// metrics being priced.
	phaseReport map[int][]int
	// phaseCheck: the local groups each prices as a second holder, and
	// phasePairs the groups' reporters and checkers to compare;
	// disputed: the groups of two holders that disagreed, taken out.
	phaseCheck map[int][]int
	phasePairs []crossPair
	disputed   map[int]bool
	gammaMax   float64 // the largest step the round's direction allows
	// block step: the measured CoCoA+ scale for the next round (0: none
	// yet) and, per group, the factor on its summed partial Grams
	// (checkpointed); dealt marks the groups whose holders share features.
	sigma      float64
	roundSigma float64 // the scale this round's subproblems used
	kappa      []float64
	dealt      []bool
	aborted    bool
	missing    bool
	ipSum      seal.Vec

	holdStart bool // an InputStart starts it, not the Clients-th registration
	aligned   bool // the participants are fixed
	paused    bool // hold the next round at the boundary
	waiting   bool // held at a round boundary (paused, or restored)
	phaseSeq  int  // counts phases, for deadlines
	stopped   bool
	// checkpoints: the state at the last round boundary, once taken
	checkpoints bool
	snap        *Checkpoint // the last round boundary's state, until a Ready carries it
	reported    int         // rounds of history a Ready has carried
	setupBlob   []byte      // the restored setup part, until a checkpoint hands it on
	setupDigest [32]byte
	setupHanded bool // a checkpoint carried the setup part
	// keys is the threshold key's public side (nil: shared keys, or
	// before the key setup).
	keys *keyState
	oprf *oprfState // the pseudonym phase, while it runs
	// A federation with a schema: the statistics layout (from the
	// alignment) and what the preparation found (prepare.go).
	stats   *statLayout
	prep    *prepState
	notices []string
	namer   func(k int) string
	// saved is the latest round boundary whose checkpoint the server wrote
	// (InputSaved; 0: none known), told to the participants.
	saved int
	// lost marks the sample groups taken out after a drop
	// (coordinator_reform.go).
	lost []bool
	// resume is a restored federation's boundary that returning
	// participants may resume (nil: none, or a round has run since).
	resumeAt *resumeState
	// tracePhase, if set, sees every phase as it starts (tests).
	tracePhase func(name string)
}

// ErrFinished is returned by Receive after the last round.
var ErrFinished = errors.New("federation finished")

// NewCoordinator starts a federation that waits for cfg.Clients participants.
func NewCoordinator(cfg Config, scheme seal.Scheme) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkKeyScheme(cfg, scheme); err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(cfg.Seed, 0xc0)
	return &Coordinator{cfg: cfg, rule: ruleFor(cfg), scheme: scheme, now: time.Now, pcg: pcg, rng: rand.New(pcg)}, nil
}

// SetClock replaces the clock used for phase timings (tests).
func (c *Coordinator) SetClock(now func() time.Time) { c.now = now }

// Config returns the federation's configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// Round returns the current round (0 during setup).
func (c *Coordinator) Round() int { return c.round }

// Finished reports whether the last round has completed.
func (c *Coordinator) Finished() bool { return c.finished }

// History returns the metrics of every completed round (round 0 is the
// starting point).
func (c *Coordinator) History() []RoundMetrics { return c.history }

// W returns the current global model.
func (c *Coordinator) W() []float64 { return c.w }

// Iterate is one round's model with its metrics.
type Iterate struct {
	Round    int
	Primal   float64 // certified: never below P(W) (RoundMetrics.Primal)
	TrainAcc float64
	HeldAcc  float64 // held-out accuracy of W itself
	W        []float64
	// Best: the iterate with the lowest primal of the rounds so far;
	// otherwise the current one (no round was complete yet).
	Best bool
}

// Model returns the model the federation hands out: the iterate of the
// round with the lowest primal so far, not the last one, which can be far
// worse when the step overshoots (the primal swings while the dual
// climbs). Before any round with a primal (all participants answering) it
// is the current iterate, with Best false and a NaN primal. W is a copy.
func (c *Coordinator) Model() Iterate {
	if b := c.best; b != nil {
		out := *b
		out.W = append([]float64(nil), b.W...)
		return out
	}
	nan := math.NaN()
	return Iterate{Round: c.round, Primal: nan, TrainAcc: nan, HeldAcc: nan, W: append([]float64(nil), c.w...)}
}

// keepIfBest makes the round just recorded the federation's model if its
// primal is the lowest so far (first one wins ties). Rounds without a
// primal (partial) do not count.
func (c *Coordinator) keepIfBest(r RoundMetrics) {
	if r.Partial || math.IsNaN(r.Primal) || (c.best != nil && !(r.Primal < c.best.Primal)) {
		return
	}
	c.best = &Iterate{Round: r.Round, Primal: r.Primal, TrainAcc: r.TrainAcc, HeldAcc: r.HeldAcc,
		W: append([]float64(nil), c.w...), Best: true}
}

// HatW returns client k's last primal contribution (on its features).
func (c *Coordinator) HatW(k int) []float64 { return c.clients[k].hatW }

// LastChange returns the last plaintext change of client k's primal
// contribution the coordinator received, dw_k = X_k^T d on its features,
// and its round; nil under SealPrimal (and before any). The coordinator's
// own slice: read it under the lock that guards the coordinator.
func (c *Coordinator) LastChange(k int) ([]float64, int) {
	if k < 0 || k >= len(c.clients) {
		return nil, 0
	}
	return c.clients[k].lastDW, c.clients[k].lastDWRound
}

// Scheme returns the sealing scheme.
func (c *Coordinator) Scheme() seal.Scheme { return c.scheme }

func (c *Coordinator) flush() []Envelope {
	out := c.out
	c.out = nil
	for _, e := range out {
		c.cur.BytesOut += e.Msg.WireSize(c.scheme)
	}
	return out
}

func (c *Coordinator) send(to int, m Message) {
	m.Saved = c.saved
	if c.holds(to, m) { // threshold keys: its chunks are switched first
		c.hold(to, m)
		return
	}
	c.out = append(c.out, Envelope{To: to, Msg: m})
}

func (c *Coordinator) reject(to int, err error) {
	code := CodeBadField
	var ce *CodedError
	if errors.As(err, &ce) {
		code = ce.Code
	}
	c.send(to, Message{Kind: KindError, Round: c.round, Code: code, Err: err.Error()})
}

// CodedError is an error with one of the Code constants: the coordinator
// sends it back as a typed error message.
type CodedError struct {
	Code string
	Msg  string
}

func (e *CodedError) Error() string { return e.Msg }

// Errorf returns a CodedError.
func Errorf(code, format string, args ...any) error {
	return &CodedError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ErrorCode returns err's code, or "" for an error without one.
func ErrorCode(err error) string {
	var ce *CodedError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

func (c *Coordinator) fail(err error) {
	for _, k := range c.connected() {
		c.reject(k, Errorf(CodeStopped, "federation stopped: %v", err))
	}
	c.finished = true
	c.phase = nil
}

// Phase returns the name of the phase in progress ("" between phases).
func (c *Coordinator) Phase() string {
	if c.phase == nil {
		return ""
	}
	return c.phase.name
}

// Paused reports whether a pause was asked for.
func (c *Coordinator) Paused() bool { return c.paused }

// Waiting reports whether the federation is held at a round boundary
// (paused, or restored from a checkpoint and not resumed yet).
func (c *Coordinator) Waiting() bool { return c.waiting }

// resume lifts a pause and starts the next round if the federation was
// held at a boundary.
func (c *Coordinator) resume() {
	c.paused = false
	if c.waiting && !c.finished && c.numConnected() > 0 {
		c.waiting = false
		c.nextRound()
	}
}

// stop ends the federation now: every connected participant is told so.
// Rounds already completed stay recorded.
func (c *Coordinator) stop(reason string) {
	if !c.finished {
		for _, k := range c.connected() {
			c.send(k, Message{Kind: KindError, Round: c.round, Code: CodeStopped, Close: true, Err: "the federation was stopped: " + reason})
		}
		c.finished, c.stopped, c.phase, c.waiting = true, true, nil, false
	}
}

// Stopped reports whether an InputStop ended the federation.
func (c *Coordinator) Stopped() bool { return c.stopped }

// ClientInfo is what the server may show about one participant.
type ClientInfo struct {
	Registered bool // sent a valid hello (and, once started, is part of the federation)
	Connected  bool
	Ready      bool // set up and holding current dual values
	Samples    int
	Features   int
	Active     bool // drawn active in the current round
	// Refused says why the federation turned the participant away before
	// its first round ("" if it did not); Dropped why it dropped it for
	// good after.
	Refused, Dropped string
}

// Clients describes every participant index handed out so far.
func (c *Coordinator) Clients() []ClientInfo {
	out := make([]ClientInfo, len(c.clients))
	for k, cs := range c.clients {
		out[k].Refused, out[k].Dropped = cs.refused, cs.dropped
		if cs.hello == nil {
			continue
		}
		out[k] = ClientInfo{Registered: true, Connected: cs.connected, Ready: cs.ready && !cs.returned,
			Samples: len(cs.hello.Pseudonyms), Features: len(cs.hello.Features), Active: cs.activeRound,
			Refused: cs.refused, Dropped: cs.dropped}
	}
	return out
}

// NumSlots returns the layout's slot count (0 before the start).
func (c *Coordinator) NumSlots() int { return c.numSlots }

// MaxChunks bounds the chunk indexes of any sealed vector of the
// federation (0 before the start): the sample layout's, the feature
// layout's (sealed primal; FedHybrid's two limbs a feature) and the block
// rule's Gram layout.
func (c *Coordinator) MaxChunks() int {
	if c.numSlots == 0 {
		return 0
	}
	cl := c.scheme.ChunkLen()
	n := max(c.numSlots, 2*c.numFeatures)/cl + 1
	if c.stats != nil {
		n = max(n, len(c.stats.chunkGroup)+1)
	}
	if c.cfg.Step == StepBlock && c.rule.dual() {
		n = max(n, len(c.groups)*gramChunks(blockPicks(c.cfg), cl))
	}
	return n
}

// NumTrain returns the number of training samples (0 before the start).
func (c *Coordinator) NumTrain() int { return c.numTrain }

// NumHeldout returns the number of held-out samples the metrics score (0
// before the start, and when nothing is held out).
func (c *Coordinator) NumHeldout() int { return c.numHeld }

// Held is what the coordinator keeps between rounds besides w and the
// primal contributions: the sealed dual values and squared norms over the
// whole layout, and where each client's samples sit in it. The privacy
// view reports it. The vectors are the coordinator's own: use them under
// the lock that guards the coordinator, and do not change them.
type Held struct {
	Alpha, Norms seal.Vec
	Samples      int          // slots holding a sample
	Clients      []HeldClient // per client (empty before the layout is fixed)
}

// HeldClient is one client's part of the layout.
type HeldClient struct {
	Slots    []int // layout slots of its samples
	Chunks   []int // layout chunks holding them, ascending
	Features []int // its features (global indexes)
}

// Held returns what the coordinator holds.
func (c *Coordinator) Held() Held {
	h := Held{Alpha: c.alpha, Norms: c.norms, Clients: make([]HeldClient, len(c.clients))}
	for k, cl := range c.clients {
		if cl == nil {
			continue
		}
		h.Clients[k].Slots, h.Clients[k].Features = cl.slots, cl.features
		for ch := range cl.chunks {
			h.Clients[k].Chunks = append(h.Clients[k].Chunks, ch)
		}
		sort.Ints(h.Clients[k].Chunks)
	}
	for _, g := range c.groups {
		h.Samples += g.size // padding slots have no group
	}
	return h
}
