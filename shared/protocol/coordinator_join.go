package protocol

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/seal"
)

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
	if k < len(c.clients) && c.clients[k].dropped != "" {
		return Errorf(CodeDropped, "the federation dropped this participant: %s", c.clients[k].dropped)
	}
	if c.fingerprint != "" && h.Fingerprint != c.fingerprint {
		return Errorf(CodeWrongSecret, "key fingerprint does not match the federation's: the link's secret is not this federation's")
	}
	if err := checkHello(&h, c.cfg.OPRF()); err != nil {
		return err
	}
	// The federation's feature count is its own (declared, or what most
	// participants hold at the start: align), never a first hello's.
	want := c.cfg.NumFeatures
	if c.started || c.aligned {
		want = c.numFeatures
	}
	if want != 0 && h.NumFeatures != want {
		return Errorf(CodeSchema, "the block has %d features, the federation has %d", h.NumFeatures, want)
	}
	if h.NumFeatures > MaxFeatures {
		return Errorf(CodeBadField, "hello: %d features, more than the %d a federation takes", h.NumFeatures, MaxFeatures)
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
		} else if c.resumeAt != nil {
			c.sendResumeSetup(k)
			if c.prep != nil {
				c.sendPrep(k)
			}
			c.sendNorms(k)
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
	hc := h
	cs.hello, cs.connected, cs.refused = &hc, true, ""
	if c.oprf != nil {
		c.oprf.broken = true
	}
	// While the pseudonym phase runs, its end begins again (oprfAgain).
	if !c.holdStart && c.numConnected() == c.cfg.Clients && c.oprf == nil {
		c.begin()
	}
	return nil
}

// resumeIfQuorate goes on with the rounds if the federation was held for a
// quorum (or restored from a checkpoint) and enough are back.
func (c *Coordinator) resumeIfQuorate() {
	if c.resumeAt != nil && !c.resumeAt.allAnswered(c) {
		return // a restart: everyone is asked to resume first
	}
	if c.waiting && !c.paused && c.quorate() {
		c.waiting = false
		c.nextRound()
	}
}

// checkHello validates a registration on its own. With OPRF pseudonyms
// it carries none (the pseudonym phase makes them) but a digest of its ids.
func checkHello(h *Message, byOPRF bool) error {
	switch {
	case byOPRF && len(h.Pseudonyms) > 0:
		return Errorf(CodeSchema, "hello: keyed pseudonyms, but this federation aligns samples by OPRF pseudonyms: join with the link the organizer was given, which says so (pseudonyms=oprf)")
	case byOPRF && (len(h.Heldout) == 0 || len(h.Digest) != pseudonymHex*2):
		return Errorf(CodeBadField, "hello: %d held-out flags and a digest of %d characters (want rows and %d)", len(h.Heldout), len(h.Digest), pseudonymHex*2)
	case !byOPRF && len(h.Pseudonyms) == 0 && len(h.Digest) > 0:
		return Errorf(CodeSchema, "hello: no pseudonyms: this participant's link says OPRF pseudonyms, but the federation aligns by keyed ones")
	case !byOPRF && (len(h.Pseudonyms) == 0 || len(h.Pseudonyms) != len(h.Heldout)):
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
		if x.hello != nil && x.dropped == "" {
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
	if c.needPseudonyms() {
		c.pseudonymSetup() // then begin again
		return
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

// sameHello reports whether a returning participant brings the block it
// registered: the same pseudonyms or, with OPRF pseudonyms (which the
// hello does not carry), the same digest of its ids.
func sameHello(a, b *Message) bool {
	if len(a.Heldout) != len(b.Heldout) || len(a.Features) != len(b.Features) || a.Fingerprint != b.Fingerprint ||
		a.Labelled != b.Labelled || a.Bias != b.Bias || a.Digest != b.Digest || !slices.Equal(a.Magnitudes, b.Magnitudes) {
		return false
	}
	if a.Digest == "" && !slices.Equal(a.Pseudonyms, b.Pseudonyms) {
		return false
	}
	for i := range a.Heldout {
		if a.Heldout[i] != b.Heldout[i] {
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
// same holders) and lays slots out group by group. Nothing but equality of
// pseudonyms counts: groups follow in the order of their holder sets, a
// group's samples in its first holder's order, and its key names the
// holders, so any pseudonyms that match the same samples (a keyed hash, an
// OPRF's outputs) give the same layout, picks and model.
func (c *Coordinator) align() error {
	if err := c.fixFeatureCount(); err != nil {
		return err
	}
	type sample struct {
		holders []int
		flags   []bool // each holder's held-out flag
		heldout bool
		seq     int // first seen: the lowest holder's row, in hello order
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
				s = &sample{seq: len(byPseud)}
				byPseud[p] = s
			}
			s.holders = append(s.holders, k)
			s.flags = append(s.flags, cs.hello.Heldout[i])
		}
	}
	// A sample's holders must agree on whether it is held out: the flag
	// most of them give stands (a tie: the first registration's), and a
	// holder that gives the other is refused, told how many it flips.
	disagree := map[int]int{}
	for _, s := range byPseud {
		yes := 0
		for _, f := range s.flags {
			if f {
				yes++
			}
		}
		s.heldout = 2*yes > len(s.flags) || 2*yes == len(s.flags) && s.flags[0]
		for j, f := range s.flags {
			if f != s.heldout {
				disagree[s.holders[j]]++
			}
		}
	}
	if len(disagree) > 0 {
		who := slices.Sorted(maps.Keys(disagree))
		n := 0
		for _, k := range who {
			n += disagree[k]
		}
		return &refusal{who, Errorf(CodeSchema, "%s marked %d shared sample(s) held out where their other holders did not, or the reverse", c.names(who), n)}
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
		slices.SortFunc(g.members, func(a, b string) int { return cmp.Compare(byPseud[a].seq, byPseud[b].seq) })
		g.key = groupKey(g.holders)
	}
	slices.SortFunc(gl, func(a, b *gs) int { return slices.Compare(a.holders, b.holders) })
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
	if c.cfg.FindBias() && c.cfg.BiasValue == 0 {
		c.cfg.BiasFeature, c.cfg.BiasValue = c.findBias()
	}
	bias := -1
	if c.cfg.BiasValue != 0 {
		bias = c.cfg.BiasFeature
	}
	if r := c.heldTwice(bias, func(f int) string { return fmt.Sprintf("feature %d", f) }); r != nil {
		return r
	}
	return nil
}

// groupKey names a sample group by its holders: the holders seed their
// picks with it (under the federation secret, so the server cannot).
func groupKey(holders []int) string {
	var b strings.Builder
	b.WriteString("holders")
	for _, k := range holders {
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(k))
	}
	return b.String()
}

// heldTwice refuses, naming both, two holders of a sample group that hold
// the same feature (but except, the intercept or bias every holder may
// carry): a value counted twice, or samples claimed that another holds.
// Federations of dealt entries (Config.DealtEntries) share features.
func (c *Coordinator) heldTwice(except int, feature func(f int) string) *refusal {
	if c.cfg.DealtEntries {
		return nil
	}
	type pair struct{ a, b int }
	seen := map[pair]bool{}
	for _, g := range c.groups {
		for i, a := range g.holders {
			for _, b := range g.holders[i+1:] {
				if seen[pair{a, b}] {
					continue
				}
				seen[pair{a, b}] = true
				if f, ok := commonFeature(c.clients[a].features, c.clients[b].features, except); ok {
					return &refusal{[]int{a, b}, Errorf(CodeSchema, "%s and %s both hold %s of %d shared samples: each value must come from one participant",
						c.name(a), c.name(b), feature(f), g.size)}
				}
			}
		}
	}
	return nil
}

// commonFeature returns a feature in both sorted lists other than except.
func commonFeature(x, y []int, except int) (int, bool) {
	for i, j := 0, 0; i < len(x) && j < len(y); {
		switch {
		case x[i] < y[j]:
			i++
		case x[i] > y[j]:
			j++
		case x[i] == except:
			i, j = i+1, j+1
		default:
			return x[i], true
		}
	}
	return 0, false
}

// MaxFeatures bounds a federation's feature count: a hello cannot make
// the coordinator allocate more (w, the primal contributions).
const MaxFeatures = 1 << 22

// fixFeatureCount sets the federation's feature count at the start: the
// declared one, else the count most registered participants hold (ties:
// the smaller). A participant holding another is refused, named.
func (c *Coordinator) fixFeatureCount() error {
	if c.numFeatures != 0 { // restored
		return nil
	}
	if c.cfg.NumFeatures != 0 {
		c.numFeatures = c.cfg.NumFeatures
		return nil
	}
	votes := map[int]int{}
	for _, cs := range c.clients {
		if cs.hello != nil {
			votes[cs.hello.NumFeatures]++
		}
	}
	best := 0
	for n, v := range votes {
		if best == 0 || v > votes[best] || v == votes[best] && n < best {
			best = n
		}
	}
	var who []int
	for k, cs := range c.clients {
		if cs.hello != nil && cs.hello.NumFeatures != best {
			who = append(who, k)
		}
	}
	if len(who) > 0 {
		return &refusal{who, Errorf(CodeSchema, "%s declared another feature count than the %d most participants hold", c.names(who), best)}
	}
	c.numFeatures = best
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
	s := &Setup{Client: k, Slots: cs.slots, NumTrain: c.numTrain, Config: c.cfg,
		Group: make([]int, n), Holders: make([]int, n), Lost: c.localLost(k)}
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
		c.await(PhasePrepare, all, c.prepIn)
		return
	}
	c.awaitNorms(all)
}

// awaitNorms collects the sealed squared norms and starts round 0.
func (c *Coordinator) awaitNorms(all []int) {
	c.await(PhaseSetup, all, func(p *phaseState) {
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

func (c *Coordinator) connected() []int {
	var out []int
	for k, cs := range c.clients {
		if cs.connected && cs.hello != nil {
			out = append(out, k)
		}
	}
	return out
}
