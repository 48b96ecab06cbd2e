package protocol

import (
	"fmt"
	"math"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/seal"
)

// averagingRule is FedAvg, HyFEM-Avg and HyFEM-Prox (package averaging):
// local SGD on each participant's block, the weights averaged per feature
// under sealing. prox adds HyFEM-Prox's penalty towards the global model.
type averagingRule struct{ prox bool }

func (averagingRule) admit(*Coordinator) error { return nil }
func (averagingRule) rejoin(*clientState)      {}
func (averagingRule) dual() bool               { return false }

func (averagingRule) checkLocal(c *Coordinator, k int, m Message) error {
	return c.checkFeatureChunks(k, m)
}

func (averagingRule) open(p *Participant, m Message) ([]Message, error) { return openFeatures(p, m) }

// round is a round of the averaging baselines: the
// active participants take local steps from w on their features and send
// their weights sealed per feature; the server adds them, a participant
// opens the sum, and w becomes, per feature, the sum over its active
// holders divided by their number (public). A feature without an active
// holder keeps its weight. Then the round's metrics, as HyFDCA's.
func (averagingRule) round(c *Coordinator) {
	c.noRefresh()
	var targets []int
	for _, k := range c.eligible() {
		cs := c.clients[k]
		if cs.activeRound && cs.trainN > 0 {
			targets = append(targets, k)
		}
	}
	c.cur.Active = len(targets)
	holders := c.featureHolders(targets)
	for _, k := range targets {
		cs := c.clients[k]
		m := Message{Kind: KindLocal, Round: c.round, W: c.onFeatures(k, c.w), Client: k, Steps: cs.localSteps}
		for _, f := range cs.features {
			m.ActiveHolders = append(m.ActiveHolders, holders[f])
		}
		c.send(k, m)
	}
	c.await(PhaseLocal, targets, func(p *phaseState) {
		got := sortedKeys(p.replies)
		if len(got) == 0 {
			c.ipPhase(true, nil)
			return
		}
		sum, ok := c.sumReplies(p, got)
		if !ok {
			return
		}
		// Holders that left took their weights with them: the averages
		// are over those that answered.
		counts := c.featureHolders(got)
		c.openPhase(sum, map[int]bool{}, func(vals []float64) {
			for f, n := range counts {
				if n > 0 {
					c.w[f] = vals[f] / float64(n)
				}
			}
			c.wVersion++
			for _, k := range got {
				c.clients[k].localSteps += c.cfg.Inner
			}
			c.ipPhase(true, nil)
		}, func() { c.ipPhase(true, nil) })
	})
}

// local is a participant's part of a round: H local SGD steps from the
// global model on the block's features, on the rows picked for this client
// and round, then the weights sealed per feature for the server's sum.
func (r averagingRule) local(p *Participant, m Message) ([]Message, error) {
	cfg := p.setup.Config
	nf := len(p.block.Features)
	if len(m.W) != nf || len(m.ActiveHolders) != nf || m.Steps < 0 || m.Client < 0 {
		return nil, fmt.Errorf("participant: local: %d weights and %d holder counts for %d features, steps %d, client %d",
			len(m.W), len(m.ActiveHolders), nf, m.Steps, m.Client)
	}
	sgd := averaging.LocalSGD{Loss: p.loss, Lambda: cfg.Lambda, A: cfg.StepA, B: cfg.StepB, Mu: cfg.Mu}
	w := append([]float64(nil), m.W...)
	var anchor []float64
	if r.prox {
		anchor = m.W // the global model on the block's features, fixed for the round
	}
	picks := averaging.RoundPicks(int64(cfg.Seed), m.Round, m.Client, p.train, cfg.Inner)
	if _, err := sgd.Run(p.block.X, p.block.Y, picks, w, anchor, m.Steps); err != nil {
		return nil, fmt.Errorf("participant: local: %w", err)
	}
	for j, v := range w {
		if lim := averaging.SealableLimit(m.ActiveHolders[j]); !(math.Abs(v) <= lim) {
			return nil, fmt.Errorf("participant: local: weight %g of feature %d is beyond the sealable range ±%g with %d holders: %w (lower the step a)",
				v, p.block.Features[j], lim, m.ActiveHolders[j], averaging.ErrDiverged)
		}
	}
	v, err := seal.SealSlots(p.key, p.block.Features, w, p.featureSpan())
	if err != nil {
		return nil, fmt.Errorf("participant: local: %w", err)
	}
	return []Message{{Kind: KindLocalPart, Round: m.Round, Sealed: v}}, nil
}
