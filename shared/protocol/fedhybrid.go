package protocol

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/fedhybrid"
)

// fedHybridRule is FedHybrid (package fedhybrid) on horizontal partitions:
// each active participant steps from the consensus w and seals its summand
// mu x_i - lambda_i in two limbs a feature; the server keeps every
// participant's last summand and adds them.
type fedHybridRule struct{}

func (fedHybridRule) dual() bool { return false }

// admit refuses anything but a horizontal partition.
func (fedHybridRule) admit(c *Coordinator) error {
	for k, cs := range c.clients {
		if cs.hello != nil && len(cs.hello.Features) != cs.hello.NumFeatures {
			return fmt.Errorf("client %d holds %d of %d features: fedhybrid needs a horizontal partition (every participant holds all features of its samples)",
				k, len(cs.hello.Features), cs.hello.NumFeatures)
		}
	}
	return nil
}

// rejoin forgets the participant's summand: its setup starts it again from
// x_i = lambda_i = 0.
func (fedHybridRule) rejoin(cs *clientState) { cs.sealedW = nil }

// checkLocal: two limbs a feature, slots 0..2M-1.
func (fedHybridRule) checkLocal(c *Coordinator, k int, m Message) error {
	for ci := range m.Sealed {
		if ci < 0 || ci*c.scheme.ChunkLen() >= 2*c.numFeatures {
			return fmt.Errorf("local-part: sealed chunk %d is outside the consensus's %d slots", ci, 2*c.numFeatures)
		}
	}
	return c.checkLens(m.Kind, m.Sealed, func(ci int) int { return min(c.scheme.ChunkLen(), 2*c.numFeatures-ci*c.scheme.ChunkLen()) })
}

// open opens the sum of the summands (limbs joined).
func (fedHybridRule) open(p *Participant, m Message) ([]Message, error) {
	vals, err := fedhybrid.Open(p.key, m.Sealed, p.block.NumFeatures)
	if err != nil {
		return nil, fmt.Errorf("participant: open: %w", err)
	}
	return []Message{{Kind: KindOpened, Round: m.Round, W: vals}}, nil
}

// round is a round of FedHybrid (the FedHybrid paper, Algorithm 1): the
// active participants step from the consensus w and seal their summand
// mu x_i - lambda_i; the server keeps each participant's last sealed
// summand, adds all of them, a participant opens the sum, and w becomes it
// divided by mu times the number of participants (line 12). An inactive
// participant's last summand counts again; one that never sealed counts 0
// (its initial x_i = lambda_i = 0).
func (fedHybridRule) round(c *Coordinator) {
	c.noRefresh()
	var targets []int
	for _, k := range c.eligible() {
		cs := c.clients[k]
		if cs.activeRound {
			targets = append(targets, k)
		}
	}
	c.cur.Active = len(targets)
	n := c.numRegistered()
	for _, k := range targets {
		c.send(k, Message{Kind: KindLocal, Round: c.round, W: c.onFeatures(k, c.w), Client: k, Participants: n})
	}
	c.awaitEach(PhaseLocal, targets, func(p *phaseState) {
		if len(p.replies) == 0 {
			c.ipPhase(true, nil)
			return
		}
		for k, m := range p.replies {
			c.clients[k].sealedW = m.Sealed
		}
		sum, ok := c.sumStored()
		if !ok {
			return
		}
		c.openPhase(sum, map[int]bool{}, func(vals []float64) {
			scale := c.cfg.Mu * float64(n)
			for j := range c.w {
				c.w[j] = vals[j] / scale
			}
			c.wVersion++
			c.ipPhase(true, nil)
		}, func() { c.ipPhase(true, nil) })
	})
}

// local is a participant's part of a round: its step from
// the consensus m.W, then its summand mu x_i - lambda_i sealed. The state
// (x_i, lambda_i) starts at 0 with the first round after a setup: the
// coordinator forgets its summand when it sets the participant up again.
func (fedHybridRule) local(p *Participant, m Message) ([]Message, error) {
	cfg := p.setup.Config
	if m.Participants < 1 || m.Client < 0 {
		return nil, fmt.Errorf("participant: fedhybrid: %d participants, client %d", m.Participants, m.Client)
	}
	if p.hybrid == nil {
		n, err := fedhybrid.NewNode(p.block, m.Client, p.setup.NumTrain, cfg.Lambda, cfg.Mu, cfg.Mode, cfg.StepA, cfg.StepB)
		if err != nil {
			return nil, fmt.Errorf("participant: %w", err)
		}
		p.hybrid = n
	}
	if err := p.hybrid.Step(m.W); err != nil {
		return nil, fmt.Errorf("participant: %w", err)
	}
	v, err := p.hybrid.Seal(p.key, m.Participants)
	if err != nil {
		return nil, fmt.Errorf("participant: %w", err)
	}
	return []Message{{Kind: KindLocalPart, Round: m.Round, Sealed: v}}, nil
}
