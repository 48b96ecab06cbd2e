package protocol

import (
	"fmt"
	"math"

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
	// byOPRF: the samples are aligned by OPRF pseudonyms (AlignByOPRF),
	// which the pseudonym phase makes (oprf); the hello carries none.
	byOPRF  bool
	oprf    *participantOPRF
	browser bool // InBrowser

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
	// lost marks the local groups the federation re-formed without
	// (Setup.Lost): their samples are left out like unlabelled ones.
	lost []bool
	// lastRound is the last round a message came from; boundaries the
	// state kept at the last few round boundaries (participant_resume.go).
	lastRound  int
	boundaries []boundary
	saved      int // the latest boundary on the server's disk (Message.Saved)
	resumeAt   int // a setup's boundary to resume, -1: none
}

// beforeSetup reports whether a participant takes a message of kind k
// before its setup.
func (k Kind) beforeSetup() bool {
	switch k {
	case KindSetup, KindError, KindDone, KindKeySetup, KindKeySetups, KindKeyShares, KindSwitch,
		KindOPRFSetup, KindOPRFKeys, KindOPRFShares, KindOPRFEval, KindOPRFEvals:
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
	p := &Participant{block: b, secret: s, key: key, resumeAt: -1}
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
	if p.byOPRF {
		m.Pseudonyms, m.Digest = nil, blockDigest(p.secret, p.block.IDs)
	}
	m.Browser = p.browser
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
	p.markRound(m)
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
	case KindOPRFSetup, KindOPRFKeys, KindOPRFShares, KindOPRFEval, KindOPRFEvals:
		return p.onPseudonyms(m)
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
