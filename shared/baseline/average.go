package baseline

import (
	"fmt"
	"math"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/seal"
)

// Share is one active participant's part in a round's server step.
type Share struct {
	// Key is the participant's own key object (keys are not safe for
	// concurrent use, so participants never share one).
	Key seal.Key
	// Features are the global feature indexes the participant holds.
	Features []int
	// Weights are its local weights on Features.
	Weights []float64
}

// Traffic counts the sealed bytes of one server step.
type Traffic struct {
	ToServer   int // sealed local weights, all participants
	FromServer int // the sealed sums each participant gets back
}

// Average is the server step of FedAvg and HyFEM: each weight of global
// (one per feature of the federation) becomes the average, over the shares
// that hold its feature, of their weights; a feature no share holds keeps
// its value (so with partial participation a feature whose holders are all
// inactive keeps the last average).
//
// It runs the step as the protocol would: each participant seals its
// weights into the slots of its features (slot = global feature index),
// the server adds the sealed vectors and nothing else, and each participant
// opens the sum on its features and divides by the number of shares holding
// each (public: who is active and which features each holds is known to
// the server anyway). Sealed values are quantized to 2^-seal.FracBits, so
// the result is that of the quantized weights, the same under every scheme.
//
// What the server cannot hide: a feature with a single active holder
// averages to that holder's weight. And a participant opening a chunk could
// read every slot of it, the averages of features it does not hold (they are
// the global model, which FedAvg hands to everyone).
func Average(s seal.Scheme, shares []Share, global []float64) (Traffic, error) {
	var tr Traffic
	counts := make([]int, len(global))
	for i, sh := range shares {
		if len(sh.Features) != len(sh.Weights) {
			return tr, fmt.Errorf("average: share %d: %d features but %d weights", i, len(sh.Features), len(sh.Weights))
		}
		for _, f := range sh.Features {
			if f < 0 || f >= len(global) {
				return tr, fmt.Errorf("average: share %d: feature %d outside 0..%d", i, f, len(global)-1)
			}
			counts[f]++
		}
	}
	sealed := make([]seal.Vec, len(shares))
	for i, sh := range shares {
		// The sum of a feature's holders must stay in the exact range;
		// the participant knows the public count, so it checks its own
		// share against it before anything leaves.
		for j, v := range sh.Weights {
			f := sh.Features[j]
			if limit := averaging.SealableLimit(counts[f]); !(math.Abs(v) <= limit) {
				return tr, fmt.Errorf("average: share %d: weight %g of feature %d is beyond the sealable range ±%g (%d holders): %w",
					i, v, f, limit, counts[f], ErrDiverged)
			}
		}
		v, err := seal.SealSlots(sh.Key, sh.Features, sh.Weights)
		if err != nil {
			return tr, fmt.Errorf("average: share %d: %w", i, err)
		}
		sealed[i] = v
		tr.ToServer += v.WireSize(s)
	}
	// The server's whole part: additions of sealed vectors.
	sum, err := seal.Sum(s, sealed...)
	if err != nil {
		return tr, fmt.Errorf("average: server sum: %w", err)
	}
	for i, sh := range shares {
		part := seal.Restrict(s, sum, sh.Features)
		tr.FromServer += part.WireSize(s)
		vals, err := seal.OpenSlots(sh.Key, part, sh.Features)
		if err != nil {
			return tr, fmt.Errorf("average: share %d opens the sum: %w", i, err)
		}
		// Every holder of a feature computes the same average.
		for j, f := range sh.Features {
			global[f] = vals[j] / float64(counts[f])
		}
	}
	return tr, nil
}
