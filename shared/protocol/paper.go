// The reference rule: the HyFDCA paper's Algorithm 1 with Algorithm 5 as
// published (Config.Step "paper"), kept to compare the block step with.
// Both sides are here: it shares nothing with the block step's round.

package protocol

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/hyfed/hyfed/shared/seal"
)

// paperStep is Algorithm 1 with Algorithm 5: active clients send
// gamma*delta/|B_n|, the server adds them to the dual values and the active
// clients send fresh primal contributions; absent ones keep stale ones.
func (c *Coordinator) paperStep() {
	if c.wStale {
		c.openW(func() {
			if c.wStale {
				c.ipPhase(true, nil) // still nobody to open w: report and wait
				return
			}
			c.paperStep()
		})
		return
	}
	var targets []int
	for _, k := range c.eligible() {
		if c.clients[k].activeRound {
			targets = append(targets, k)
		}
	}
	c.cur.Active = len(targets)
	if len(targets) == 0 {
		c.ipPhase(true, nil)
		return
	}
	for _, k := range targets {
		c.send(k, Message{Kind: KindStep, Round: c.round, Active: true})
	}
	c.await(PhaseStep, targets, func(p *phaseState) {
		got := sortedKeys(p.replies)
		if err := seal.AddInto(c.scheme, c.alpha, p.sum); err != nil {
			c.fail(err)
			return
		}
		c.cur.Gamma = c.cfg.Gamma
		for _, k := range c.eligible() {
			c.clients[k].stale = true
		}
		c.refreshPhase(got, func() { c.ipPhase(true, nil) })
	})
}

// onStep is Algorithm 5 at a participant: independent picks, w fixed,
// the closed-form coordinate step, each update averaged over the sample's
// holders and scaled by gamma.
func (p *Participant) onStep(m Message) ([]Message, error) {
	p.pending = nil
	reply := Message{Kind: KindDelta, Round: m.Round, Sealed: seal.Vec{}}
	cfg := p.setup.Config
	if !m.Active {
		return []Message{reply}, nil
	}
	if cfg.Step != StepPaper {
		return nil, fmt.Errorf("participant: a local step under step %s", cfg.Step)
	}
	var slots []int
	var vals []float64
	seed := p.secret.PickSeed("client "+strconv.Itoa(p.setup.Client), m.Round)
	for _, i := range pick(p.train, cfg.Inner, seed) {
		d := p.loss.Step(p.alpha[i], p.block.Y[i], p.ip[i], p.q[i], p.lambdaN)
		if d == 0 {
			continue
		}
		slots = append(slots, p.setup.Slots[i])
		vals = append(vals, cfg.Gamma*d/float64(p.setup.Holders[i]))
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
