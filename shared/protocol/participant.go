package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// Participant is one client's state machine. It holds its block, the
// federation secret and the sealing key; everything it sends that concerns a
// single sample is sealed.
type Participant struct {
	block  *partition.Block
	secret secret.Secret
	key    seal.Key
	pseud  []string

	setup   *Setup
	rule    participantRule // the algorithm's part (setup.Config.Algo)
	loss    loss.Loss
	lambdaN float64
	// groupTrain lists, for each of the participant's groups, its training
	// samples (local indexes) in slot order, so that every holder of the
	// group picks the same samples from the same seed.
	groupTrain [][]int
	train      []int // all local training samples
	// sole marks the groups the participant holds alone (every sample's
	// only holder): their Gram never leaves it (soleholder.go).
	sole []bool

	alpha []float64 // dual values of the block's samples (authoritative copy on the server)
	ip    []float64 // last opened x_n.w
	// ipErr bounds |x_n.w - ip_n|: every holder's share of a sealed sum
	// is rounded to the fixed-point grid, and ip moves by sealed sums.
	ipErr   []float64
	q       []float64 // ||x_n||^2 over all holders
	w       []float64 // w on the block's features
	pending []float64 // this round's opened direction, applied on "weights"
	trial   []float64 // x_n.u for the round's primal direction u
	u       []float64 // the round's primal direction u on the block's features
	// hw is sum_n a_n x_{k,n} over the training samples from the dual
	// values as held (nil: compute it afresh); metrics price the dual with it.
	hw    []float64
	ready bool
	// block step: this round's picks and Gram chunk per local group, and
	// the largest step the found direction allows
	picks  map[int][]int
	gramAt map[int]int
	// own: the Grams of this round's groups held alone, as the server
	// would have returned them (packed, quantized); nil: solved on rows
	own      map[int][]float64
	gammaMax float64
	// group steps: per local group, the largest step its two directions
	// allow, and the second (centered) direction (nil: none this round)
	limits   map[int][2]float64
	centered []float64
	// kept (SolveOnce): the directions this participant solved and sealed
	// this round, so that it need not open its own chunks again
	kept   *keptSolve
	hybrid *fedhybrid.Node  // fedhybrid: x_i and lambda_i (nil until the first round after a setup)
	keys   *participantKeys // threshold keys (nil: shared keys)
	stored []byte           // a threshold key state to take up again (RestoreKeyState)
	// raw is the block as read from the participant's own file (a
	// federation with a schema; nil for a block file): the preparation
	// makes block from it, with excluded marking the samples left out and
	// maps each column's scaling.
	raw      *partition.Block
	excluded []bool
	maps     []schema.Map
}

// beforeSetup reports whether a participant takes a message of kind k
// before its setup.
func (k Kind) beforeSetup() bool {
	switch k {
	case KindSetup, KindError, KindDone, KindKeySetup, KindKeySetups, KindKeyShares, KindSwitch:
		return true
	}
	return false
}

// NewParticipant prepares a participant for its block. key is the shared
// key (seal.NewKeyFor); it is nil in a federation with threshold keys, whose
// key setup gives the participant its key.
func NewParticipant(b *partition.Block, s secret.Secret, key seal.Key) (*Participant, error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("participant: %w", err)
	}
	p := &Participant{block: b, secret: s, key: key}
	if b.Raw != nil {
		p.raw = b
	}
	p.pseud = make([]string, b.N())
	for i, id := range b.IDs {
		p.pseud[i] = s.Pseudonym(id)
	}
	return p, nil
}

// Hello is the registration message: pseudonyms, held-out flags and the
// feature indexes of the block; no data, no labels.
func (p *Participant) Hello() Message {
	m := Message{Kind: KindHello, Pseudonyms: p.pseud, Heldout: p.block.Heldout,
		Features: p.block.Features, NumFeatures: p.block.NumFeatures, Fingerprint: p.secret.Fingerprint()}
	if p.raw != nil {
		m.Magnitudes, m.Labelled = rawMagnitudes(p.raw), p.raw.Raw.HasLabels
	} else {
		m.Bias = constantLast(p.block)
	}
	return m
}

// constantLast returns the one non-zero value the block holds in every row
// of the federation's last feature, or 0 (Message.Bias).
func constantLast(b *partition.Block) float64 {
	j := len(b.Features) - 1
	if j < 0 || b.Features[j] != b.NumFeatures-1 || b.N() == 0 {
		return 0
	}
	v := b.X.At(0, j)
	for i := 1; i < b.N() && v != 0; i++ {
		if b.X.At(i, j) != v {
			return 0
		}
	}
	return v
}

// Ready reports whether setup has finished.
func (p *Participant) Ready() bool { return p.ready }

// Alpha returns the participant's copy of its samples' dual values.
func (p *Participant) Alpha() []float64 { return p.alpha }

// Handle processes one coordinator message and returns the replies.
func (p *Participant) Handle(m Message) ([]Message, error) {
	if !m.Kind.beforeSetup() && p.setup == nil {
		return nil, fmt.Errorf("participant: %s before setup", m.Kind)
	}
	if err := finiteFields(m); err != nil {
		return nil, fmt.Errorf("participant: %w", err)
	}
	switch m.Kind {
	case KindSetup:
		return p.onSetup(m)
	case KindKeySetup:
		return p.onKeySetup(m)
	case KindKeySetups:
		return p.onKeySetups(m)
	case KindKeyShares:
		return p.onKeyShares(m)
	case KindSwitch:
		return p.onSwitch(m)
	case KindNorms:
		q, err := seal.OpenSlots(p.key, m.Sealed, p.setup.Slots)
		if err != nil {
			return nil, fmt.Errorf("participant: norms: %w", err)
		}
		if p.raw != nil {
			// the training samples with labels, known once every holder
			// has resolved its labels
			if m.TrainN < 1 {
				return nil, fmt.Errorf("participant: norms: %d training samples", m.TrainN)
			}
			p.lambdaN = p.setup.Config.Lambda * float64(m.TrainN)
		}
		p.q = q
		p.ready = true
		return nil, nil
	case KindRefresh:
		return p.onRefresh(m)
	case KindStep:
		return p.onStep(m)
	case KindDirection:
		if p.setup.Config.Step != StepBlock {
			return nil, fmt.Errorf("participant: a direction under step %s", p.setup.Config.Step)
		}
		return p.onBlockDirection(m)
	case KindPrep:
		return p.onPrep(m)
	case KindGram:
		return p.onGram(m)
	case KindGramSum:
		return p.onGramSum(m)
	case KindWeights:
		return p.onWeights(m)
	case KindIP:
		return p.onIP(m)
	case KindTrial:
		return p.onTrial(m)
	case KindApply:
		return p.onApply(m)
	case KindOpen:
		return p.rule.open(p, m)
	case KindLocal:
		return p.rule.local(p, m)
	case KindDone:
		return nil, nil
	case KindError:
		return nil, fmt.Errorf("participant: coordinator says: %s", m.Err)
	}
	return nil, fmt.Errorf("participant: unexpected message %q", m.Kind)
}

func (p *Participant) onSetup(m Message) ([]Message, error) {
	s := m.Setup
	n := p.block.N()
	if s == nil || len(s.Slots) != n || len(s.Group) != n || len(s.Holders) != n {
		return nil, fmt.Errorf("participant: setup does not match the block's %d samples", n)
	}
	cfg := s.Config
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("participant: setup: %w", err)
	}
	l, err := loss.Parse(cfg.Loss)
	if err != nil {
		return nil, err
	}
	if s.NumTrain < 1 {
		return nil, fmt.Errorf("participant: setup: %d training samples", s.NumTrain)
	}
	if cfg.Keys == KeysThreshold && p.keys == nil {
		return nil, fmt.Errorf("participant: setup: the federation uses threshold keys, and no key setup came first")
	}
	if p.key == nil {
		return nil, fmt.Errorf("participant: setup: no sealing key (keys %s)", cfg.Keys)
	}
	if err := p.checkLayout(s); err != nil {
		return nil, fmt.Errorf("participant: setup: %w", err)
	}
	for i := 0; i < n; i++ {
		if g := s.Group[i]; g < 0 || g >= len(s.GroupKeys) || s.Holders[i] < 1 {
			return nil, fmt.Errorf("participant: setup: sample %d has group %d, %d holders", i, g, s.Holders[i])
		}
	}
	p.setup, p.loss, p.rule = s, l, participantRuleFor(cfg)
	p.lambdaN = cfg.Lambda * float64(s.NumTrain)
	p.ready = false
	if cfg.Schema == nil {
		if p.raw != nil {
			return nil, fmt.Errorf("participant: setup: %w: a file read against a schema needs a federation created with that schema (hyfed create --schema)", ErrData)
		}
		return p.setupData()
	}
	if p.raw == nil {
		return nil, fmt.Errorf("participant: setup: %w: this federation reads each participant's own file against its schema: join with a CSV file, not a block file", ErrData)
	}
	if nf := len(p.raw.Features); len(s.StatSlots) != nf || len(s.Magnitudes) != nf {
		return nil, fmt.Errorf("participant: setup: %d statistics slots and %d magnitudes for %d features", len(s.StatSlots), len(s.Magnitudes), nf)
	}
	if !s.Prepare {
		return nil, nil // a return: the stored sums come next (KindPrep)
	}
	part, err := p.prepPart()
	if err != nil {
		return nil, err
	}
	return []Message{part}, nil
}

// setupData sets up what depends on the block's values and labels: the
// groups' training samples, the dual values, the estimates and (first
// setup) the sealed squared norms.
func (p *Participant) setupData() ([]Message, error) {
	s, cfg := p.setup, p.setup.Config
	n := p.block.N()
	p.groupTrain = make([][]int, len(s.GroupKeys))
	p.train = p.train[:0]
	p.sole = make([]bool, len(s.GroupKeys))
	for g := range p.sole {
		p.sole[g] = true
	}
	for i := 0; i < n; i++ {
		g := s.Group[i]
		p.sole[g] = p.sole[g] && s.Holders[i] == 1
		if !p.block.Heldout[i] && !p.isExcluded(i) {
			p.groupTrain[g] = append(p.groupTrain[g], i)
			p.train = append(p.train, i)
		}
	}
	for _, g := range p.groupTrain {
		sort.Slice(g, func(a, b int) bool { return s.Slots[g[a]] < s.Slots[g[b]] })
	}
	p.alpha = make([]float64, n)
	p.ip = make([]float64, n)
	p.w = make([]float64, len(p.block.Features))
	p.pending, p.hybrid, p.hw = nil, nil, nil
	if cfg.BiasFeature >= p.block.NumFeatures && cfg.BiasValue != 0 {
		return nil, fmt.Errorf("participant: setup: bias feature %d beyond the block's %d features", cfg.BiasFeature, p.block.NumFeatures)
	}
	if err := p.checkBias(); err != nil {
		return nil, err
	}
	if !s.SendNorms {
		return nil, nil
	}
	norms := make([]float64, n)
	for i := range norms {
		norms[i] = p.block.X.RowNormSq(i)
	}
	v, err := seal.SealSlots(p.key, s.Slots, norms, nil)
	if err != nil {
		return nil, fmt.Errorf("participant: norms: %w", err)
	}
	return []Message{{Kind: KindNormsPart, Sealed: v}}, nil
}

// primal returns hat_w_k = sum over training samples of alpha_n x_{k,n}.
func (p *Participant) primal() []float64 {
	hw := make([]float64, len(p.block.Features))
	for _, i := range p.train {
		p.block.X.AddRowTo(i, p.alpha[i], hw)
	}
	return hw
}

func (p *Participant) onRefresh(m Message) ([]Message, error) {
	a, err := seal.OpenSlots(p.key, m.Sealed, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: refresh: %w", err)
	}
	for i := range a {
		if p.block.Heldout[i] {
			a[i] = 0
		}
	}
	p.alpha, p.pending, p.hw = a, nil, nil
	cfg := p.setup.Config
	switch {
	case !cfg.SealPrimal:
		return []Message{{Kind: KindPrimal, Round: m.Round, HatW: p.primal()}}, nil
	case cfg.synced():
		// The server's w already holds this client's share (see the
		// coordinator's refresh): acknowledge only.
		return []Message{{Kind: KindPrimal, Round: m.Round}}, nil
	}
	v, err := p.sealFeatures(p.primal())
	if err != nil {
		return nil, fmt.Errorf("participant: primal: %w", err)
	}
	return []Message{{Kind: KindPrimal, Round: m.Round, Sealed: v}}, nil
}

// featureSpan is the span of a vector in the feature layout: every feature
// (the participants' shares of a chunk are summed, and each holds others).
func (p *Participant) featureSpan() []int { return seal.Span(p.block.NumFeatures) }

// sealFeatures seals v/(lambda N), a vector on the block's features, in the
// feature layout (slot = global feature index): the client's share of w or
// of the round's direction u, for the server to add up (SealPrimal).
func (p *Participant) sealFeatures(v []float64) (seal.Vec, error) {
	s := make([]float64, len(v))
	for j, x := range v {
		s[j] = x / p.lambdaN
	}
	return seal.SealSlots(p.key, p.block.Features, s, p.featureSpan())
}

func (p *Participant) onStep(m Message) ([]Message, error) {
	p.pending = nil
	reply := Message{Kind: KindDelta, Round: m.Round, Sealed: seal.Vec{}}
	if !m.Active {
		return []Message{reply}, nil
	}
	var slots []int
	var vals []float64
	cfg := p.setup.Config
	switch cfg.Step {
	case StepPaper:
		// Independent picks, w fixed: Algorithm 5 as published.
		seed := p.secret.PickSeed("client "+p.pseud[0], m.Round)
		for _, i := range pick(p.train, cfg.Inner, seed) {
			d := p.loss.Step(p.alpha[i], p.block.Y[i], p.ip[i], p.q[i], p.lambdaN)
			if d == 0 {
				continue
			}
			slots = append(slots, p.setup.Slots[i])
			vals = append(vals, cfg.Gamma*d/float64(p.setup.Holders[i]))
		}
	}
	v, err := seal.SealSlots(p.key, slots, vals, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: step: %w", err)
	}
	reply.Sealed = v
	return []Message{reply}, nil
}

// pick returns k of the samples, without replacement, from a seeded shuffle.
func pick(samples []int, k int, seed uint64) []int {
	if k >= len(samples) {
		return samples
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	idx := append([]int(nil), samples...)
	for i := 0; i < k; i++ {
		j := i + rng.IntN(len(idx)-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:k]
}

// directionPart keeps the round's direction d (per local sample) and
// returns the block's share of dw = X^T d (sealed per feature under
// SealPrimal) with the conjugate change of the reported groups.
func (p *Participant) directionPart(round int, d []float64, report []bool) (Message, error) {
	dw, dconj := p.dirShare(d, nil, report)
	for i := range d {
		if p.block.Heldout[i] {
			d[i] = 0
		}
	}
	p.pending = d
	if p.setup.Config.SealPrimal {
		v, err := p.sealFeatures(dw)
		if err != nil {
			return Message{}, fmt.Errorf("participant: direction: %w", err)
		}
		return Message{Kind: KindDirPart, Round: round, Sealed: v, DConj: dconj}, nil
	}
	return Message{Kind: KindDirPart, Round: round, DW: dw, DConj: dconj}, nil
}

func (p *Participant) onWeights(m Message) ([]Message, error) {
	switch {
	case m.Follow && (len(m.W) != 0 || m.Full):
		return nil, fmt.Errorf("participant: weights: w to follow and %d values", len(m.W))
	case m.Follow && m.Applied && len(p.u) != len(p.block.Features):
		return nil, fmt.Errorf("participant: weights: a step to follow without this round's trial direction")
	case !m.Follow && len(m.W) != len(p.block.Features):
		return nil, fmt.Errorf("participant: weights: %d values for %d features", len(m.W), len(p.block.Features))
	}
	if m.Applied {
		for i := range p.pending {
			// The very numbers the group's reporter sealed for the
			// server's copy (onApply): both copies stay equal.
			q := p.increment(i, m.Gamma)
			p.alpha[i] += q
			if p.hw != nil && q != 0 {
				p.block.X.AddRowTo(i, q, p.hw)
			}
		}
		// w moved whether or not this client's samples did (a client with
		// no updating group has no direction but must still follow w).
		for i, t := range p.trial {
			p.ip[i] += m.Gamma * t
			p.ipErr[i] += m.Gamma * p.roundingBound(i)
		}
	}
	p.pending, p.trial = nil, nil
	switch {
	case !m.Follow:
		copy(p.w, m.W)
	case m.Applied:
		stepW(p.w, p.u, m.Gamma) // as the server moves its w
	}
	if !m.Full {
		return nil, nil
	}
	p.hw = nil // afresh with the inner products, against drift
	ips := make([]float64, p.block.N())
	for i := range ips {
		ips[i] = p.block.X.Dot(i, p.w)
	}
	v, err := seal.SealSlots(p.key, p.setup.Slots, ips, nil)
	if err != nil {
		return nil, fmt.Errorf("participant: inner products: %w", err)
	}
	return []Message{{Kind: KindIPPart, Round: m.Round, Sealed: v}}, nil
}

// increment returns what a step gamma adds to sample i's dual value:
// Quantize(gamma d_i), cut back where it would leave the feasible set
// (a y in [0, 1]). The direction is a sum of the holders' quantised
// shares, so it can overshoot a bound by the rounding (hinge steps clip
// to the bound: half of them ended 2^-28 beyond it); a dual value
// outside the set has no finite conjugate. 0, y and the dual values lie
// on the grid, so the cut increment does too, and every holder computes
// the same one from the same numbers.
func (p *Participant) increment(i int, gamma float64) float64 {
	q := seal.Quantize(gamma * p.pending[i])
	a, y := p.alpha[i], p.block.Y[i]
	switch b := (a + q) * y; {
	case b > 1:
		return y - a
	case b < 0:
		return -a
	}
	return q
}

// roundingBound is the most by which a sealed sum over sample i's holders
// can differ from the exact sum: each holder's share is rounded to the
// grid, by at most half a unit.
func (p *Participant) roundingBound(i int) float64 {
	return float64(p.setup.Holders[i]) * 0.5 / (1 << seal.FracBits)
}

// onApply seals the dual update increment(n, gamma) of the training samples
// of the groups this participant reports, for the server's sealed copy of
// the dual values.
func (p *Participant) onApply(m Message) ([]Message, error) {
	if p.pending == nil {
		return nil, fmt.Errorf("participant: apply for round %d without a direction", m.Round)
	}
	limit := 1.0
	if p.setup.Config.Step == StepBlock {
		// The server's step is at most the smallest of the groups'
		// limits, this client's among them (the slack: the division
		// that found it).
		limit = p.gammaMax * (1 + 1e-12)
	}
	if math.IsNaN(m.Gamma) || m.Gamma <= 0 || m.Gamma > limit {
		return nil, fmt.Errorf("participant: apply: step %v outside (0, %v]", m.Gamma, limit)
	}
	report := p.reportSet(m.Report)
	var slots []int
	var vals []float64
	for _, i := range p.train {
		if d := p.pending[i]; d != 0 && report[p.setup.Group[i]] {
			slots = append(slots, p.setup.Slots[i])
			vals = append(vals, p.increment(i, m.Gamma))
		}
	}
	v, err := seal.SealSlots(p.key, slots, vals, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: apply: %w", err)
	}
	return []Message{{Kind: KindApplied, Round: m.Round, Sealed: v}}, nil
}

// onTrial seals x_{k,n}.u_k for the round's primal direction u, so that
// the label holders can price candidate steps.
func (p *Participant) onTrial(m Message) ([]Message, error) {
	if len(m.W) != len(p.block.Features) {
		return nil, fmt.Errorf("participant: trial: %d values for %d features", len(m.W), len(p.block.Features))
	}
	if err := p.scaleGroups(m); err != nil {
		return nil, err
	}
	reply := Message{Kind: KindIPPart, Round: m.Round, Sealed: seal.Vec{}}
	p.u = append(p.u[:0], m.W...)
	zero := true
	for _, u := range m.W {
		zero = zero && u == 0
	}
	if zero {
		return []Message{reply}, nil
	}
	ts := make([]float64, p.block.N())
	for i := range ts {
		ts[i] = p.block.X.Dot(i, m.W)
	}
	v, err := seal.SealSlots(p.key, p.setup.Slots, ts, nil)
	if err != nil {
		return nil, fmt.Errorf("participant: trial: %w", err)
	}
	reply.Sealed = v
	return []Message{reply}, nil
}

// onIP opens summed inner products. Without a grid they are x_n.w; with a
// grid they are x_n.u and the reply prices every candidate step gamma:
// loss, conjugate and accuracy sums at x_n.w + gamma x_n.u and a_n + gamma d_n.
func (p *Participant) onIP(m Message) ([]Message, error) {
	vals, err := seal.OpenSlots(p.key, m.Sealed, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: inner products: %w", err)
	}
	if m.Alpha != nil {
		a, err := seal.OpenSlots(p.key, m.Alpha, p.setup.Slots)
		if err != nil {
			return nil, fmt.Errorf("participant: dual values: %w", err)
		}
		for i := range a {
			if p.block.Heldout[i] {
				a[i] = 0
			}
		}
		p.alpha, p.hw = a, nil
	}
	grid := m.Grid
	var t []float64
	if grid == nil {
		p.ip = vals
		p.ipErr = make([]float64, len(vals))
		for i := range vals {
			p.ipErr[i] = p.roundingBound(i)
		}
		grid = []float64{0}
	} else {
		t = vals
		p.trial = vals
	}
	r := Message{Kind: KindMetrics, Round: m.Round}
	r.GridLoss = make([]float64, len(grid))
	r.GridConj = make([]float64, len(grid))
	r.GridTrainOK = make([]int, len(grid))
	r.GridHeldOK = make([]int, len(grid))
	report := p.reportSet(m.Report)
	for i := range p.ip {
		if !report[p.setup.Group[i]] || p.isExcluded(i) {
			continue
		}
		y := p.block.Y[i]
		held := p.block.Heldout[i]
		if held {
			r.HeldN++
		} else {
			r.TrainN++
		}
		for gi, g := range grid {
			z := p.ip[i]
			if t != nil {
				z += g * t[i]
			}
			ok := z*y > 0
			if held {
				if ok {
					r.GridHeldOK[gi]++
				}
				continue
			}
			if ok {
				r.GridTrainOK[gi]++
			}
			// The loss at the exact margin is at most the loss at the
			// margin moved against the label by the rounding bound (both
			// losses fall as y z grows): a primal that is never below
			// P(w), so never below P*. (Accuracy keeps the margin as
			// opened: the bound has no sign to give.)
			e := p.ipErr[i]
			if t != nil {
				e += g * p.roundingBound(i)
			}
			r.GridLoss[gi] += p.loss.Value(z-y*e, y)
			a := p.alpha[i]
			if p.pending != nil && p.pending[i] != 0 {
				a += p.increment(i, g) // what the step would add
			}
			r.GridConj[gi] += p.loss.Conj(a, y)
		}
	}
	r.GridWDot = p.wDots(grid, t != nil)
	for gi := range grid {
		if math.IsNaN(r.GridLoss[gi]) || math.IsNaN(r.GridConj[gi]) || math.IsNaN(r.GridWDot[gi]) {
			return nil, fmt.Errorf("participant: metrics are not finite")
		}
	}
	return []Message{r}, nil
}

// wDots returns, per candidate step g, this block's part of w_g . w(a_g)
// (Message.GridWDot): with hw the block's sum_n a_n x_{k,n} and the
// candidate adding q_n = increment(n, g) to a_n, it is
// (w + g u).hw + sum_n q_n x_{k,n}.(w + g u), over lambda N.
// Every client sends it, so the coordinator's dual is that of the dual
// values every party will hold, not of its own w: w moves by g u, the dual
// values by their quantised steps, and the two part by the rounding.
func (p *Participant) wDots(grid []float64, trial bool) []float64 {
	if p.hw == nil {
		p.hw = p.primal()
	}
	var u []float64
	if trial && len(p.u) == len(p.w) {
		u = p.u
	}
	wh, uh := 0.0, 0.0
	for j, h := range p.hw {
		wh += p.w[j] * h
		if u != nil {
			uh += u[j] * h
		}
	}
	type moved struct {
		i      int
		xw, xu float64
	}
	var ms []moved
	if p.pending != nil {
		for _, i := range p.train {
			if p.pending[i] != 0 {
				m := moved{i: i, xw: p.block.X.Dot(i, p.w)}
				if u != nil {
					m.xu = p.block.X.Dot(i, u)
				}
				ms = append(ms, m)
			}
		}
	}
	out := make([]float64, len(grid))
	for gi, g := range grid {
		if u == nil {
			g = 0 // no direction: the metrics of w itself
		}
		s := wh + g*uh
		for _, m := range ms {
			if q := p.increment(m.i, g); q != 0 {
				s += q * (m.xw + g*m.xu)
			}
		}
		out[gi] = s / p.lambdaN
	}
	return out
}

func (p *Participant) reportSet(groups []int) []bool {
	out := make([]bool, len(p.setup.GroupKeys))
	for _, g := range groups {
		if g >= 0 && g < len(out) {
			out[g] = true
		}
	}
	return out
}

// finiteFields refuses a coordinator message whose plaintext numbers are
// not all finite: nothing downstream could make sense of them.
func finiteFields(m Message) error {
	for _, f := range [...]struct {
		name string
		vs   []float64
	}{{"W", m.W}, {"Grid", m.Grid}, {"Gamma", []float64{m.Gamma}},
		{"Sigma", []float64{m.Sigma}}, {"SigmaShared", []float64{m.SigmaShared}}, {"Kappa", m.Kappa}, {"GroupScale", m.GroupScale}, {"GroupCentered", m.GroupCentered}} {
		for i, v := range f.vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s message: field %s[%d] is %v, not a finite number", m.Kind, f.name, i, v)
			}
		}
	}
	return nil
}
