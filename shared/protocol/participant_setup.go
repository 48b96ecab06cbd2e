package protocol

import (
	"fmt"
	"sort"

	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/seal"
)

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
	if cfg.OPRF() != p.byOPRF {
		return nil, fmt.Errorf("participant: setup: the federation's pseudonyms are %s, but this participant's link says %s", cfg.Pseudonyms, map[bool]string{true: PseudonymsOPRF, false: PseudonymsKeyed}[p.byOPRF])
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
	p.resumeAt = -1
	if s.Resume {
		p.keepBoundary() // the state as it stands may be the boundary asked for
		p.resumeAt = s.Round
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
	p.lost = nil
	for _, g := range s.Lost {
		if g < 0 || g >= len(s.GroupKeys) {
			return nil, fmt.Errorf("participant: setup: lost group %d of %d", g, len(s.GroupKeys))
		}
		if p.lost == nil {
			p.lost = make([]bool, len(s.GroupKeys))
		}
		p.lost[g] = true
	}
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
	if p.resumeAt >= 0 {
		// A restarted server asks for the boundary it was restored at.
		ok := p.resumeBoundary(p.resumeAt)
		r := p.resumeAt
		p.resumeAt = -1
		return []Message{{Kind: KindResumed, Round: r, Applied: ok}}, nil
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
