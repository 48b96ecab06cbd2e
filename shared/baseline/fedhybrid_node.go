package baseline

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// FedHybrid is the name of FedHybrid among the algorithms of a federation
// (protocol.Config.Algo).
const FedHybrid = "fedhybrid"

// FedHybridNode is one participant of FedHybrid when a federation runs it
// (shared/protocol): the same state and updates as RunFedHybrid's
// participants, so a federation computes RunFedHybrid's models.
type FedHybridNode struct {
	p *fedHybridParticipant
}

// FedHybridNewton reports whether participant index is Newton-type under
// mode (newton, gradient or mixed, as FedHybridOptions.Mode).
func FedHybridNewton(mode string, index int) (bool, error) {
	t, err := fedHybridTypes(FedHybridOptions{Mode: mode}, index+1)
	if err != nil {
		return false, err
	}
	return t[index], nil
}

// NewFedHybridNode starts participant index at x_i = lambda_i = 0 on its
// block, which must hold every feature (a horizontal partition). numTrain
// is the federation's training count N, mu the penalty (> 0), a and b the
// step sizes (0: FedHybridOptions' defaults).
func NewFedHybridNode(b *partition.Block, index, numTrain int, lossName string, lambda, mu float64, mode string, a, bStep float64) (*FedHybridNode, error) {
	l, err := fedHybridParseLoss(lossName)
	if err != nil {
		return nil, fmt.Errorf("fedhybrid: %w", err)
	}
	if len(b.Features) != b.NumFeatures {
		return nil, fmt.Errorf("fedhybrid: the block holds %d of %d features: FedHybrid needs a horizontal partition (every participant holds all features of its samples)", len(b.Features), b.NumFeatures)
	}
	if !(mu > 0) || numTrain < 1 {
		return nil, fmt.Errorf("fedhybrid: mu %v (want > 0), %d training samples", mu, numTrain)
	}
	newton, err := FedHybridNewton(mode, index)
	if err != nil {
		return nil, fmt.Errorf("fedhybrid: %w", err)
	}
	p := newFedHybridParticipant(b, index, newton, l, lambda, float64(numTrain))
	p.setSteps(mu, a, bStep)
	return &FedHybridNode{p: p}, nil
}

// Step runs the participant's part of a round from the consensus x0 (lines
// 4-11 of Algorithm 1).
func (n *FedHybridNode) Step(x0 []float64) error {
	if len(x0) != len(n.p.x) {
		return fmt.Errorf("fedhybrid: consensus of %d values for %d features", len(x0), len(n.p.x))
	}
	return n.p.step(x0)
}

// Seal seals the participant's summand mu x_i - lambda_i of the consensus
// (two limbs a feature), within the range that the sum over participants
// participants carries exactly.
func (n *FedHybridNode) Seal(k seal.Key, participants int) (seal.Vec, error) {
	v, err := fedHybridSeal(k, n.p.contribution(), fedHybridBound(participants))
	if err != nil {
		return nil, fmt.Errorf("fedhybrid: participant %d: %w", n.p.index, err)
	}
	return v, nil
}

// FedHybridOpen opens a sum of sealed summands over m features (limbs
// joined); the consensus is it divided by mu times the number of
// participants.
func FedHybridOpen(k seal.Key, sum seal.Vec, m int) ([]float64, error) {
	return fedHybridOpen(k, sum, m)
}
