package protocol

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/seal"
)

// A rule is one algorithm's part of a federation, on both sides. The
// coordinator keeps membership, phases, deadlines, quorum, checkpoints and
// sealing, and asks its rule what a round does; a participant asks its rule
// how to answer the requests only that algorithm sends. Adding an algorithm
// is a rule, a line in ruleFor and in participantRuleFor and its name in
// Algorithms: no switch in the coordinator or the participant changes.
//
// What the four algorithms need decided the methods: HyFDCA keeps dual
// values (sealed at the server, primal contributions, a dual in the
// metrics, the Gram layout of the block step) and runs its step rules;
// FedAvg/HyFEM and FedHybrid keep none, run one local phase and an
// opening, and differ in what a participant computes and seals.
type rule interface {
	// round runs a round once the participation draws are made: its
	// phases end in the metrics (ipPhase), which go on to the next round.
	round(c *Coordinator)
	// admit checks the federation's blocks once they are aligned.
	admit(c *Coordinator) error
	// rejoin forgets what the coordinator kept for a participant that
	// returns and is set up again.
	rejoin(cs *clientState)
	// checkLocal checks the sealed chunks of a local-part reply.
	checkLocal(c *Coordinator, k int, m Message) error
	// dual reports whether the algorithm keeps dual values.
	dual() bool
	participantRule
}

// participantRule is a rule's participant side. The participant holds
// only this interface, so that the browser's WebAssembly build links
// none of the coordinator (an interface value's method table holds every
// method of its interface).
type participantRule interface {
	// local is a participant's answer to a local request.
	local(p *Participant, m Message) ([]Message, error)
	// open is a participant's answer to an open request: the aggregate
	// opened on every feature.
	open(p *Participant, m Message) ([]Message, error)
}

// ruleFor returns the rule of cfg.Algo (validated: one of Algorithms).
func ruleFor(cfg Config) rule {
	switch cfg.Algo {
	case averaging.FedAvg, averaging.HyFEMAvg:
		return averagingRule{}
	case averaging.HyFEMProx:
		return averagingRule{prox: true}
	case fedhybrid.Name:
		return fedHybridRule{}
	}
	return hyfdcaRule{}
}

// participantRuleFor is ruleFor's participant side (see participantRule).
func participantRuleFor(cfg Config) participantRule {
	switch cfg.Algo {
	case averaging.FedAvg, averaging.HyFEMAvg:
		return averagingRule{}
	case averaging.HyFEMProx:
		return averagingRule{prox: true}
	case fedhybrid.Name:
		return fedHybridRule{}
	}
	return hyfdcaRule{}
}

// openFeatures opens an aggregate sealed per feature (slot j = feature j):
// w or the round's direction under SealPrimal, the averaging baselines'
// sum of weights. The server asks for sums only.
func openFeatures(p *Participant, m Message) ([]Message, error) {
	slots := make([]int, p.block.NumFeatures)
	for i := range slots {
		slots[i] = i
	}
	vals, err := seal.OpenSlots(p.key, m.Sealed, slots)
	if err != nil {
		return nil, fmt.Errorf("participant: open: %w", err)
	}
	return []Message{{Kind: KindOpened, Round: m.Round, W: vals}}, nil
}
