package protocol

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hyfed/hyfed/shared/seal"
)

// Envelope is a message addressed to one participant.
type Envelope struct {
	To  int
	Msg Message
}

// Phase names, as reported in metrics.
const (
	PhaseSetup     = "setup"
	PhaseRefresh   = "refresh"
	PhaseStep      = "step" // block: the Grams of the picks
	PhaseDirection = "direction"
	PhaseIP        = "ip"
	PhaseMetrics   = "metrics"
	PhaseApply     = "apply"
	PhaseOpen      = "open"  // SealPrimal and the baselines: a participant opens an aggregate
	PhaseLocal     = "local" // averaging baselines: local steps
)

// Phases lists the round phases in order.
var Phases = []string{PhaseRefresh, PhaseStep, PhaseLocal, PhaseDirection, PhaseOpen, PhaseIP, PhaseMetrics, PhaseApply}

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
	out     []Envelope

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
	gammaMax  float64   // the largest step the round's direction allows
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
	// A federation with a schema: the statistics layout (from the
	// alignment) and what the preparation found (prepare.go).
	stats   *statLayout
	prep    *prepState
	notices []string
	namer   func(k int) string
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

func (c *Coordinator) connect(k int, h Message) error {
	if h.Kind != KindHello {
		return Errorf(CodeOutOfPhase, "expected hello, got %q", h.Kind)
	}
	if k < 0 {
		return Errorf(CodeBadField, "client %d: bad index", k)
	}
	if c.finished {
		return Errorf(CodeFinished, "the federation has finished")
	}
	if k < len(c.clients) && c.clients[k].hello != nil && c.clients[k].connected {
		return Errorf(CodeOutOfPhase, "client %d: already connected", k)
	}
	if c.fingerprint != "" && h.Fingerprint != c.fingerprint {
		return Errorf(CodeWrongSecret, "key fingerprint does not match the federation's: the link's secret is not this federation's")
	}
	if err := checkHello(&h); err != nil {
		return err
	}
	want := c.cfg.NumFeatures
	if want == 0 {
		want = c.numFeatures
	}
	if want != 0 && h.NumFeatures != want {
		return Errorf(CodeSchema, "the block has %d features, the federation has %d", h.NumFeatures, want)
	}
	var cs *clientState
	if k < len(c.clients) {
		cs = c.clients[k]
	}
	if c.started {
		// A return: the same block as before, set up again, refreshed
		// before its next update.
		if cs == nil || cs.hello == nil {
			return Errorf(CodeStarted, "the federation has started without this participant")
		}
		if cs.connected {
			return Errorf(CodeOutOfPhase, "client %d: already connected", k)
		}
		if !sameHello(cs.hello, &h) {
			return Errorf(CodeSchema, "client %d: returned with a different block", k)
		}
		cs.connected, cs.ready, cs.stale, cs.returned = true, false, true, true
		c.rule.rejoin(cs)
		if c.cfg.Keys == KeysThreshold {
			c.keyRejoin(k) // then the setup and the norms
		} else {
			c.sendSetup(k, false)
			if c.prep != nil {
				c.sendPrep(k)
			}
			c.sendNorms(k)
		}
		c.resumeIfQuorate()
		return nil
	}
	if cs != nil && cs.hello != nil && cs.connected {
		return Errorf(CodeOutOfPhase, "client %d: already connected", k)
	}
	if c.aligned {
		// The setup was interrupted by a drop: the participants are
		// fixed; it starts again once all of them are back.
		if cs == nil || cs.hello == nil {
			return Errorf(CodeStarted, "the federation has started without this participant")
		}
		if !sameHello(cs.hello, &h) {
			return Errorf(CodeSchema, "client %d: returned with a different block", k)
		}
		cs.connected = true
		cs.wHeld = 0 // perhaps a fresh tab
		if c.numConnected() == c.numRegistered() {
			// Threshold keys: the participant that comes back lost its
			// party, so the key setup runs again for everyone.
			c.keys = nil
			c.startOrKeys()
		}
		return nil
	}
	for k >= len(c.clients) {
		c.clients = append(c.clients, &clientState{})
	}
	cs = c.clients[k]
	if c.fingerprint == "" {
		c.fingerprint = h.Fingerprint
	}
	if c.numFeatures == 0 {
		c.numFeatures = h.NumFeatures
	}
	hc := h
	cs.hello, cs.connected, cs.refused = &hc, true, ""
	if !c.holdStart && c.numConnected() == c.cfg.Clients {
		c.begin()
	}
	return nil
}

// resumeIfQuorate goes on with the rounds if the federation was held for a
// quorum (or restored from a checkpoint) and enough are back.
func (c *Coordinator) resumeIfQuorate() {
	if c.waiting && !c.paused && c.quorate() {
		c.waiting = false
		c.nextRound()
	}
}

// checkHello validates a registration on its own.
func checkHello(h *Message) error {
	if len(h.Pseudonyms) == 0 || len(h.Pseudonyms) != len(h.Heldout) {
		return Errorf(CodeBadField, "hello: %d pseudonyms, %d held-out flags", len(h.Pseudonyms), len(h.Heldout))
	}
	if h.NumFeatures < 1 || len(h.Features) == 0 {
		return Errorf(CodeBadField, "hello: no features")
	}
	for j, f := range h.Features {
		if f < 0 || f >= h.NumFeatures || (j > 0 && h.Features[j-1] >= f) {
			return Errorf(CodeBadField, "hello: feature index %d out of order or outside 0..%d", f, h.NumFeatures-1)
		}
	}
	seen := make(map[string]struct{}, len(h.Pseudonyms))
	for _, p := range h.Pseudonyms {
		if len(p) == 0 || len(p) > 64 {
			return Errorf(CodeBadField, "hello: pseudonym of %d bytes (want 1..64)", len(p))
		}
		if _, dup := seen[p]; dup {
			return Errorf(CodeBadField, "hello: sample %s listed twice", p)
		}
		seen[p] = struct{}{}
	}
	return nil
}

func (c *Coordinator) numRegistered() int {
	n := 0
	for _, x := range c.clients {
		if x.hello != nil {
			n++
		}
	}
	return n
}

func (c *Coordinator) numConnected() int {
	n := 0
	for _, x := range c.clients {
		if x.hello != nil && x.connected {
			n++
		}
	}
	return n
}

// begin aligns the registered participants and starts the federation. Those
// that registered and left before the start are not part of it.
func (c *Coordinator) begin() {
	for _, cs := range c.clients {
		if !cs.connected {
			cs.hello = nil
		}
	}
	if err := c.align(); err != nil {
		var r *refusal
		if errors.As(err, &r) {
			c.refuse(r)
			return
		}
		for _, k := range c.connected() {
			c.reject(k, Errorf(CodeStopped, "alignment failed: %v", err))
		}
		c.finished = true
		return
	}
	c.aligned = true
	c.startOrKeys()
}

// HoldStart keeps the federation from starting by itself when Clients
// participants have registered: an InputStart starts it (an organizer's start).
func (c *Coordinator) HoldStart() { c.holdStart = true }

// startNow starts the federation with the participants connected now
// (InputStart).
func (c *Coordinator) startNow() error {
	if c.started || c.finished {
		return errors.New("the federation has already started")
	}
	if c.numConnected() == 0 {
		return errors.New("no participant has registered")
	}
	c.begin()
	return nil
}

// ExpectFingerprint fixes the key fingerprint participants must present
// (the organizer's, given at creation): a first joiner with another secret
// is refused too.
func (c *Coordinator) ExpectFingerprint(fp string) { c.fingerprint = fp }

// Started reports whether alignment has happened.
func (c *Coordinator) Started() bool { return c.started }

func sameHello(a, b *Message) bool {
	if len(a.Pseudonyms) != len(b.Pseudonyms) || len(a.Features) != len(b.Features) || a.Fingerprint != b.Fingerprint ||
		a.Labelled != b.Labelled || a.Bias != b.Bias || !slices.Equal(a.Magnitudes, b.Magnitudes) {
		return false
	}
	for i := range a.Pseudonyms {
		if a.Pseudonyms[i] != b.Pseudonyms[i] || a.Heldout[i] != b.Heldout[i] {
			return false
		}
	}
	for i := range a.Features {
		if a.Features[i] != b.Features[i] {
			return false
		}
	}
	return true
}

// align matches samples by pseudonym, forms sample groups (samples with the
// same holders) and lays slots out group by group.
func (c *Coordinator) align() error {
	type sample struct {
		holders []int
		heldout bool
	}
	byPseud := map[string]*sample{}
	clients := 0
	for k, cs := range c.clients {
		if cs.hello == nil {
			continue // registered and left before the start
		}
		clients++
		for i, p := range cs.hello.Pseudonyms {
			s := byPseud[p]
			if s == nil {
				s = &sample{heldout: cs.hello.Heldout[i]}
				byPseud[p] = s
			} else if s.heldout != cs.hello.Heldout[i] {
				return fmt.Errorf("sample %s is held out by one client and not by another", p)
			}
			s.holders = append(s.holders, k)
		}
	}
	c.groups, c.chunkGroup, c.numTrain, c.numHeld = nil, nil, 0, 0
	groupOf := map[string]int{}
	type gs struct {
		key     string
		holders []int
		members []string
	}
	var gl []*gs
	for p, s := range byPseud {
		hk := fmt.Sprint(s.holders)
		gi, ok := groupOf[hk]
		if !ok {
			gi = len(gl)
			groupOf[hk] = gi
			gl = append(gl, &gs{holders: s.holders})
		}
		gl[gi].members = append(gl[gi].members, p)
	}
	for _, g := range gl {
		sort.Strings(g.members)
		g.key = g.members[0]
	}
	sort.Slice(gl, func(a, b int) bool { return gl[a].key < gl[b].key })
	// Each group starts on a chunk boundary: a chunk then only ever holds
	// samples of one holder set, and whoever is sent it may open all of it.
	sizes := make([]int, len(gl))
	for gi, g := range gl {
		sizes[gi] = len(g.members)
	}
	starts, total := seal.PadLayout(c.scheme.ChunkLen(), sizes)
	c.numSlots = total
	// Per chunk, not per slot: at 5,000 participants the layout has 5
	// million slots, most of them padding.
	c.chunkGroup = make([]int, total/c.scheme.ChunkLen())
	slotOf := map[string]int{}
	c.groups = make([]group, len(gl))
	groupIdx := map[string]int{}
	for gi, g := range gl {
		c.groups[gi] = group{holders: g.holders, key: g.key, chunks: (total - starts[gi]) / c.scheme.ChunkLen(),
			start: starts[gi], size: len(g.members)}
		if gi+1 < len(gl) {
			c.groups[gi].chunks = (starts[gi+1] - starts[gi]) / c.scheme.ChunkLen()
		}
		for j := range c.groups[gi].chunks {
			c.chunkGroup[starts[gi]/c.scheme.ChunkLen()+j] = gi
		}
		for j, p := range g.members {
			sl := starts[gi] + j
			slotOf[p] = sl
			groupIdx[p] = gi
			if !byPseud[p].heldout {
				c.numTrain++
				c.groups[gi].train++
			} else {
				c.numHeld++
			}
		}
	}
	if err := c.rule.admit(c); err != nil {
		return err
	}
	if c.numTrain == 0 {
		return fmt.Errorf("no training samples")
	}
	if c.cfg.Inner == 0 {
		c.cfg.Inner = InnerFor(c.cfg.IIC, c.numTrain, clients)
	}
	for _, cs := range c.clients {
		h := cs.hello
		if h == nil {
			continue
		}
		cs.slots = make([]int, len(h.Pseudonyms))
		cs.localGroup = map[int]int{}
		cs.groups = nil
		cs.chunks = map[int]bool{}
		for i, p := range h.Pseudonyms {
			cs.slots[i] = slotOf[p]
			cs.chunks[slotOf[p]/c.scheme.ChunkLen()] = true
			g := groupIdx[p]
			if _, ok := cs.localGroup[g]; !ok {
				cs.localGroup[g] = len(cs.groups)
				cs.groups = append(cs.groups, g)
			}
		}
		cs.features = h.Features
		cs.trainN = 0
		for _, held := range h.Heldout {
			if !held {
				cs.trainN++
			}
		}
		cs.hatW, cs.sealedW = nil, nil
		if !c.cfg.SealPrimal && c.rule.dual() {
			cs.hatW = make([]float64, len(h.Features))
		}
	}
	c.w = make([]float64, c.numFeatures)
	c.alpha = seal.Vec{}
	if c.cfg.Schema != nil {
		return c.alignSchema()
	}
	if c.cfg.FindBias && c.cfg.BiasValue == 0 {
		c.cfg.BiasFeature, c.cfg.BiasValue = c.findBias()
	}
	return nil
}

// findBias returns the last feature and its value when the blocks say it
// is the data's bias (Config.FindBias): one holder of it in every sample
// group, each holding the same non-zero value in every row. Else 0, 0.
func (c *Coordinator) findBias() (int, float64) {
	last := c.numFeatures - 1
	value := 0.0
	for _, g := range c.groups {
		n := 0
		for _, k := range g.holders {
			h := c.clients[k].hello
			if len(h.Features) == 0 || h.Features[len(h.Features)-1] != last {
				continue
			}
			n++
			if h.Bias == 0 || (value != 0 && h.Bias != value) {
				return 0, 0
			}
			value = h.Bias
		}
		if n != 1 {
			return 0, 0
		}
	}
	if math.IsNaN(value) || math.Abs(value) > 100 {
		return 0, 0 // what Config.Validate admits
	}
	return last, value
}

// slotGroup returns the sample group of a slot of the sample layout, -1
// for a padding slot.
func (c *Coordinator) slotGroup(sl int) int {
	if sl < 0 || sl >= c.numSlots {
		return -1
	}
	gi := c.chunkGroup[sl/c.scheme.ChunkLen()]
	if g := c.groups[gi]; sl-g.start >= g.size {
		return -1
	}
	return gi
}

func (c *Coordinator) setupFor(k int) *Setup {
	cs := c.clients[k]
	n := len(cs.slots)
	s := &Setup{Slots: cs.slots, NumTrain: c.numTrain, Config: c.cfg,
		Group: make([]int, n), Holders: make([]int, n)}
	for i, sl := range cs.slots {
		g := c.slotGroup(sl)
		s.Group[i] = cs.localGroup[g]
		s.Holders[i] = len(c.groups[g].holders)
	}
	for _, g := range cs.groups {
		s.GroupKeys = append(s.GroupKeys, c.groups[g].key)
	}
	if c.keys != nil && slices.Contains(c.keys.members, k) {
		s.Layout = c.keyLayout()
	}
	if c.cfg.Schema != nil {
		c.prepareFor(k, s)
	}
	return s
}

func (c *Coordinator) sendSetup(k int, norms bool) {
	s := c.setupFor(k)
	s.SendNorms = norms
	s.Prepare = norms && c.cfg.Schema != nil
	c.send(k, Message{Kind: KindSetup, Setup: s})
}

func (c *Coordinator) sendNorms(k int) {
	v := seal.Restrict(c.scheme, c.norms, c.clients[k].slots)
	m := Message{Kind: KindNorms, Sealed: v}
	if c.prep != nil {
		m.TrainN = c.numTrain // with labels, once the preparation resolved them
	}
	c.send(k, m)
	c.clients[k].ready = true
}

// start sends the setup and collects the sealed squared norms, after the
// preparation in a federation with a schema.
func (c *Coordinator) start() {
	c.started = true
	all := c.connected()
	for _, k := range all {
		c.sendSetup(k, true)
	}
	if c.cfg.Schema != nil {
		c.await(PhasePrepare, KindPrepPart, all, c.prepIn)
		return
	}
	c.awaitNorms(all)
}

// awaitNorms collects the sealed squared norms and starts round 0.
func (c *Coordinator) awaitNorms(all []int) {
	c.awaitSum(PhaseSetup, KindNormsPart, all, func(p *phaseState) {
		c.norms = p.sum
		if len(p.dropped) > 0 {
			// A norm sum without every holder is wrong for good: wait for
			// them to return and sum again.
			c.started = false
			c.norms = nil
			return
		}
		if c.prep != nil && !c.prepResolve(p.replies) {
			return
		}
		for _, k := range c.connected() {
			c.sendNorms(k)
		}
		// Round 0: inner products and metrics of the starting point.
		c.ipPhase(true, nil)
	})
}

func (c *Coordinator) fail(err error) {
	for _, k := range c.connected() {
		c.reject(k, Errorf(CodeStopped, "federation stopped: %v", err))
	}
	c.finished = true
	c.phase = nil
}

func (c *Coordinator) connected() []int {
	var out []int
	for k, cs := range c.clients {
		if cs.connected && cs.hello != nil {
			out = append(out, k)
		}
	}
	return out
}

func sortedKeys(m map[int]Message) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// await starts a phase: it waits for one reply of the given kind from every
// target (or its disconnect), then calls next.
func (c *Coordinator) await(name string, reply Kind, targets []int, next func(p *phaseState)) {
	c.awaitPhase(&phaseState{name: name, reply: reply, next: next}, targets)
}

// awaitSum is await for a phase whose handler needs the replies' sealed
// vectors only as their sum (sumReplies, sumUpdating): it adds each into
// p.sum as it arrives and keeps the reply without them.
func (c *Coordinator) awaitSum(name string, reply Kind, targets []int, next func(p *phaseState)) {
	c.awaitPhase(&phaseState{name: name, reply: reply, next: next, summed: true, sum: seal.Vec{}}, targets)
}

func (c *Coordinator) awaitPhase(p *phaseState, targets []int) {
	p.waiting, p.replies, p.started = map[int]bool{}, map[int]Message{}, c.now()
	c.phaseSeq++
	for _, k := range targets {
		p.waiting[k] = true
	}
	c.phase = p
	c.maybeFinishPhase()
}

func (c *Coordinator) maybeFinishPhase() {
	p := c.phase
	if p == nil || len(p.waiting) > 0 {
		return
	}
	if c.cur.Seconds == nil {
		c.cur.Seconds = map[string]float64{}
	}
	c.cur.Seconds[p.name] += c.now().Sub(p.started).Seconds()
	c.phase = nil
	p.next(p)
}

func (c *Coordinator) receive(k int, m Message) error {
	if m.Kind == KindHello {
		return c.connect(k, m)
	}
	if k < 0 || k >= len(c.clients) || !c.clients[k].connected {
		return Errorf(CodeOutOfPhase, "client %d is not connected", k)
	}
	if c.finished {
		return &CodedError{Code: CodeFinished, Msg: ErrFinished.Error()}
	}
	if m.Kind == KindError {
		return c.quit(k, m.Err)
	}
	if m.Kind == KindSwitchShares {
		return c.switchIn(k, m)
	}
	if c.clients[k].keyRejoin != "" {
		return c.keyRejoinIn(k, m)
	}
	p := c.phase
	if p == nil || m.Kind != p.reply || !p.waiting[k] || (m.Round != c.round && p.name != PhaseSetup && p.name != PhasePrepare) {
		want := "nothing"
		if p != nil {
			want = string(p.reply)
		}
		return Errorf(CodeOutOfPhase, "unexpected %q for round %d: the federation is in round %d and waits for %s", m.Kind, m.Round, c.round, want)
	}
	if err := c.check(k, m); err != nil {
		return err
	}
	if p.summed && len(m.Sealed) > 0 {
		// check has taken the chunks apart already: an error here is the
		// server's own, and the federation fails as for a sum at the end.
		if err := seal.Accumulate(c.scheme, p.sum, m.Sealed); err != nil {
			c.fail(fmt.Errorf("phase %s: %w", p.name, err))
			return nil
		}
		m.Sealed = nil
	}
	delete(p.waiting, k)
	p.replies[k] = m
	c.maybeFinishPhase()
	return nil
}

// check validates the plaintext fields of a reply before it is accepted.
func (c *Coordinator) check(k int, m Message) error {
	cs := c.clients[k]
	finite := func(name string, v ...float64) error {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s: field %s holds a non-finite number", m.Kind, name)
			}
		}
		return nil
	}
	switch m.Kind {
	case KindPrimal, KindDirPart:
		if c.cfg.SealPrimal {
			if len(m.HatW) != 0 || len(m.DW) != 0 {
				return fmt.Errorf("%s: plaintext primal values under sealed primal", m.Kind)
			}
			if err := finite("DConj", m.DConj); err != nil {
				return err
			}
			return c.checkFeatureChunks(k, m)
		}
	}
	if m.Kind == KindDirPart {
		if !(m.GammaMax >= 0) || math.IsInf(m.GammaMax, 0) {
			return fmt.Errorf("dir-part: step limit %v is not a finite non-negative number", m.GammaMax)
		}
	}
	switch m.Kind {
	case KindKeyShare, KindKeyDealt, KindKeyReady:
		return c.checkKeys(k, m)
	case KindGramPart:
		// Only the chunks of the client's updating groups' Grams.
		per := gramChunks(blockPicks(c.cfg), c.scheme.ChunkLen())
		for ci := range m.Sealed {
			gi := ci / per
			if _, ok := cs.localGroup[gi]; !ok || !slices.Contains(c.updating, gi) {
				return fmt.Errorf("gram-part: sealed chunk %d lies outside the Grams of the client's updating groups", ci)
			}
		}
		return c.checkLens(m.Kind, m.Sealed, c.gramExtent)
	case KindSolved:
		if len(m.Alpha) > 0 && !c.flow.groupSteps {
			return fmt.Errorf("solved: a centered direction in a round without group steps")
		}
		for _, v := range []seal.Vec{m.Sealed, m.Alpha} {
			for ci := range v {
				if ci < 0 || ci >= len(c.chunkGroup) || !c.flow.solves[k][c.chunkGroup[ci]] {
					return fmt.Errorf("solved: sealed chunk %d lies outside the groups the client solves", ci)
				}
			}
			if err := c.checkLens(m.Kind, v, c.sampleExtent); err != nil {
				return err
			}
		}
		return nil
	case KindLocalPart:
		if len(m.W) != 0 || len(m.HatW) != 0 || len(m.DW) != 0 {
			return fmt.Errorf("local-part: plaintext weights: they travel sealed only")
		}
		return c.rule.checkLocal(c, k, m)
	case KindOpened:
		if len(m.W) != c.numFeatures {
			return fmt.Errorf("opened: %d values for %d features", len(m.W), c.numFeatures)
		}
		return finite("W", m.W...)
	case KindPrimal:
		if len(m.HatW) != len(cs.features) {
			return fmt.Errorf("primal: %d values for %d features", len(m.HatW), len(cs.features))
		}
		return finite("HatW", m.HatW...)
	case KindDirPart:
		if len(m.DW) != len(cs.features) {
			return fmt.Errorf("dir-part: %d values for %d features", len(m.DW), len(cs.features))
		}
		if err := finite("DW", m.DW...); err != nil {
			return err
		}
		return finite("DConj", m.DConj)
	case KindPrepPart:
		if err := c.checkPrepPart(k, m); err != nil {
			return err
		}
	case KindNormsPart:
		if c.prep != nil {
			if err := c.checkPrepCounts(k, m); err != nil {
				return err
			}
		}

	case KindMetrics:
		n := 1
		if len(c.phaseGrid) > 0 {
			n = len(c.phaseGrid)
		}
		if len(m.GridLoss) != n || len(m.GridConj) != n || len(m.GridWDot) != n || len(m.GridTrainOK) != n || len(m.GridHeldOK) != n {
			return fmt.Errorf("metrics: want %d priced steps", n)
		}
		if m.TrainN < 0 || m.HeldN < 0 {
			return fmt.Errorf("metrics: counts out of range")
		}
		for i := 0; i < n; i++ {
			if m.GridTrainOK[i] < 0 || m.GridHeldOK[i] < 0 || m.GridTrainOK[i] > m.TrainN || m.GridHeldOK[i] > m.HeldN {
				return fmt.Errorf("metrics: counts out of range")
			}
		}
		if err := finite("GridLoss", m.GridLoss...); err != nil {
			return err
		}
		if err := finite("GridWDot", m.GridWDot...); err != nil {
			return err
		}
		return finite("GridConj", m.GridConj...)
	}
	for ci := range m.Sealed {
		if !cs.chunks[ci] {
			return fmt.Errorf("%s: sealed chunk %d holds none of the client's samples", m.Kind, ci)
		}
	}
	return c.checkLens(m.Kind, m.Sealed, c.sampleExtent)
}

// checkLens checks that every chunk of v, sealed in a message of kind,
// seals as many values as its layout gives it (extent: seal.SealSlots's
// span): a chunk of another length would not add to the other holders' and
// fail the sum.
func (c *Coordinator) checkLens(kind Kind, v seal.Vec, extent func(ci int) int) error {
	spans := seal.Spans(c.scheme)
	for ci, ch := range v {
		want := c.scheme.ChunkLen()
		if spans {
			want = extent(ci)
		}
		if n := seal.Len(c.scheme, ch); n != want {
			return fmt.Errorf("%s: sealed chunk %d holds %d values, its layout %d", kind, ci, n, want)
		}
	}
	return nil
}

// sampleExtent is the span of chunk ci of the sample layout: its group's
// slots in it (the group's holders seal them all).
func (c *Coordinator) sampleExtent(ci int) int {
	cl := c.scheme.ChunkLen()
	g := c.groups[c.chunkGroup[ci]]
	return min(cl, g.start+g.size-ci*cl)
}

// featureExtent is the span of chunk ci of the feature layout: every
// feature in it.
func (c *Coordinator) featureExtent(ci int) int {
	cl := c.scheme.ChunkLen()
	return min(cl, c.numFeatures-ci*cl)
}

// gramExtent is the span of chunk ci of the Gram layout: its part of the
// packed triangle of gramPicks picks of the group (at most 0: a chunk the
// triangle does not reach).
func (c *Coordinator) gramExtent(ci int) int {
	cl := c.scheme.ChunkLen()
	per := gramChunks(blockPicks(c.cfg), cl)
	h := gramPicks(c.cfg, c.groups[ci/per].train)
	return min(cl, h*(h+1)/2-ci%per*cl)
}

// checkFeatureChunks checks that a sealed primal vector (feature layout)
// has chunks only where the client has features.
func (c *Coordinator) checkFeatureChunks(k int, m Message) error {
	cl := c.scheme.ChunkLen()
	has := map[int]bool{}
	for _, f := range c.clients[k].features {
		has[f/cl] = true
	}
	for ci := range m.Sealed {
		if !has[ci] {
			return fmt.Errorf("%s: sealed chunk %d holds none of the client's features", m.Kind, ci)
		}
	}
	return c.checkLens(m.Kind, m.Sealed, c.featureExtent)
}

// disconnect records that client k went away; a phase waiting for it
// carries on without it.
func (c *Coordinator) disconnect(k int) {
	if k >= 0 && k < len(c.clients) && c.clients[k].connected {
		cs := c.clients[k]
		cs.connected, cs.ready = false, false
		c.keysGone(k)
		if p := c.phase; p != nil && p.waiting[k] {
			delete(p.waiting, k)
			p.dropped = append(p.dropped, k)
			c.maybeFinishPhase()
		}
	}
}

// expire ends the current phase at its deadline. Clients that did not
// answer are disconnected (told so with a closing error): what they missed
// would leave their state behind the federation's, so they come back
// through a rejoin and a refresh. With threshold keys the committee members
// that owe switching shares are the late ones instead of the receivers
// whose messages wait for those shares (expireSwitches).
func (c *Coordinator) expire() {
	p := c.phase
	if p == nil || c.expireSwitches(p) {
		return
	}
	late := sortedSet(p.waiting)
	for _, k := range late {
		c.deadlineDrop(p, k, fmt.Sprintf("no %s reply before the deadline of round %d", p.reply, c.round))
	}
	for _, k := range late {
		if c.finished {
			return // keysGone failed the federation: too few members hold their shares
		}
		c.keysGone(k)
	}
	c.maybeFinishPhase()
}

// deadlineDrop tells participant k that it missed the deadline (why) with a
// closing error and counts it gone, from the phase too. The caller runs
// keysGone once every late participant is marked, so that a switch request
// is never asked again of one about to go.
func (c *Coordinator) deadlineDrop(p *phaseState, k int, why string) {
	c.send(k, Message{Kind: KindError, Round: c.round, Close: true, Code: CodeDeadline,
		Err: why + "; reconnect to take part again"})
	c.clients[k].connected, c.clients[k].ready = false, false
	if p.waiting[k] {
		delete(p.waiting, k)
		p.dropped = append(p.dropped, k)
	}
}

// expireSwitches handles a deadline while switch requests are open: a
// committee member that stays connected but never answers would otherwise
// have the receivers its request holds up dropped, and stay. The members
// that owe shares are dropped instead and their requests asked again of
// other live members (keysGone); the participants the phase waits for whose
// messages those requests hold stay, under a fresh deadline, and the others
// are dropped as before. A receiver whose request cannot be asked again
// (fewer than t live members: parked) is dropped as before. It reports
// whether it handled the deadline (false: no request is owed).
func (c *Coordinator) expireSwitches(p *phaseState) bool {
	ks := c.keys
	if ks == nil || !ks.ready || len(ks.batches) == 0 {
		return false
	}
	owed := map[int][]int{} // member -> the requests it owes, ascending
	open := map[*heldEnvelope]bool{}
	for _, id := range slices.Sorted(maps.Keys(ks.batches)) {
		b := ks.batches[id]
		for _, k := range b.active {
			if _, done := b.shares[k]; !done {
				owed[k] = append(owed[k], id)
			}
		}
		for _, j := range b.jobs {
			open[j.env] = true
		}
	}
	if len(owed) == 0 {
		return false
	}
	// heldUp: k's messages wait for an open request only (not a parked one).
	heldUp := func(k int) bool {
		waits := false
		for _, h := range ks.held[k] {
			if h.pending == 0 {
				continue
			}
			if !open[h] {
				return false
			}
			waits = true
		}
		return waits
	}
	gone := slices.Sorted(maps.Keys(owed))
	for _, k := range gone {
		what := fmt.Sprintf("switch request %d", owed[k][0])
		if len(owed[k]) > 1 {
			what = "switch requests " + strings.Trim(fmt.Sprint(owed[k]), "[]")
		}
		c.deadlineDrop(p, k, fmt.Sprintf("no %s reply to %s before the deadline of round %d", KindSwitchShares, what, c.round))
	}
	for _, k := range sortedSet(p.waiting) {
		if !heldUp(k) {
			c.deadlineDrop(p, k, fmt.Sprintf("no %s reply before the deadline of round %d", p.reply, c.round))
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		if c.finished {
			return true // keysGone failed the federation: too few members hold their shares
		}
		c.keysGone(k) // asks the owed requests again of the members left
	}
	if c.finished {
		return true
	}
	// A request that found fewer than t live members is parked: the
	// receivers it holds are dropped after all, as without owed requests.
	parked := map[*heldEnvelope]bool{}
	for _, b := range ks.parked {
		for _, j := range b.jobs {
			parked[j.env] = true
		}
	}
	var stuck []int
	for _, k := range sortedSet(p.waiting) {
		if slices.ContainsFunc(ks.held[k], func(h *heldEnvelope) bool { return parked[h] }) {
			c.deadlineDrop(p, k, fmt.Sprintf("no %s reply before the deadline of round %d", p.reply, c.round))
			stuck = append(stuck, k)
		}
	}
	for _, k := range stuck {
		c.keysGone(k)
	}
	if len(p.waiting) > 0 {
		c.phaseSeq++ // the receivers kept get a new deadline for the requests asked again
	}
	c.maybeFinishPhase()
	return true
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
	// its first round ("" if it did not).
	Refused string
}

// Clients describes every participant index handed out so far.
func (c *Coordinator) Clients() []ClientInfo {
	out := make([]ClientInfo, len(c.clients))
	for k, cs := range c.clients {
		out[k].Refused = cs.refused
		if cs.hello == nil {
			continue
		}
		out[k] = ClientInfo{Registered: true, Connected: cs.connected, Ready: cs.ready && !cs.returned,
			Samples: len(cs.hello.Pseudonyms), Features: len(cs.hello.Features), Active: cs.activeRound}
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
