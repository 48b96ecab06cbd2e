// Package partition splits a data set into the blocks that hybrid federated
// clients hold (some samples, some features each), checks that every
// (sample, feature) entry is held exactly once, and reads and writes block
// files that a participant loads.
package partition

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/dataset"
)

// Block is one client's data: some samples restricted to some features.
type Block struct {
	// Features are the global (0-based) feature indexes this block holds,
	// ascending; column j of X is feature Features[j].
	Features []int
	// NumFeatures is the total number of features M of the federation.
	NumFeatures int
	IDs         []string
	Y           []float64
	Heldout     []bool
	X           *dataset.Matrix // len(IDs) rows, len(Features) columns
	// Raw marks a block read from a party's own file against the
	// federation's schema: its values are unscaled and its labels may be
	// missing (0). The federation's preparation scales it and resolves
	// its labels before the first round (docs/own-data.md).
	Raw *Raw
}

// Raw is what a block read from a party's own file still needs from the
// federation.
type Raw struct {
	// HasLabels: the file has the label column (a row may still lack one).
	HasLabels bool
	// Missing lists the empty cells (row, column) the federation's mean
	// fills; X holds 0 there.
	Missing [][2]int
}

// N returns the number of samples in the block.
func (b *Block) N() int { return len(b.IDs) }

// Validate checks shapes and labels.
func (b *Block) Validate() error {
	if b.X == nil {
		return fmt.Errorf("block: no matrix")
	}
	if err := b.X.Validate(); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	if b.X.Rows != len(b.IDs) || len(b.Y) != len(b.IDs) || len(b.Heldout) != len(b.IDs) {
		return fmt.Errorf("block: %d rows, %d ids, %d labels, %d held-out flags", b.X.Rows, len(b.IDs), len(b.Y), len(b.Heldout))
	}
	if b.X.Cols != len(b.Features) {
		return fmt.Errorf("block: %d columns but %d features", b.X.Cols, len(b.Features))
	}
	for j, f := range b.Features {
		if f < 0 || f >= b.NumFeatures {
			return fmt.Errorf("block: feature %d outside 0..%d", f, b.NumFeatures-1)
		}
		if j > 0 && b.Features[j-1] >= f {
			return fmt.Errorf("block: features not ascending at %d", f)
		}
	}
	for i, y := range b.Y {
		if y != 1 && y != -1 && (b.Raw == nil || y != 0) {
			return fmt.Errorf("block: sample %q label %v is not +1 or -1", b.IDs[i], y)
		}
	}
	return nil
}
