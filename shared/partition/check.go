package partition

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/dataset"
)

// Check proves that the blocks hold every (sample, feature) entry of d
// exactly once, with the data set's values, labels and held-out flags. For
// dense data every pair counts (zeros too); for sparse data every non-zero
// entry. Messages use 1-based feature numbers.
func Check(d *dataset.Dataset, blocks []Block) error {
	row := make(map[string]int, d.N())
	for i, id := range d.IDs {
		row[id] = i
	}
	m := d.M()
	// owner[i*m+j] = client+1 holding entry (i, j); 0 = nobody yet.
	owner := make([]int32, d.N()*m)
	listed := make([]bool, d.N())
	for k := range blocks {
		b := &blocks[k]
		if err := b.Validate(); err != nil {
			return fmt.Errorf("client %d: %w", k, err)
		}
		if b.NumFeatures != m {
			return fmt.Errorf("client %d: %d features in all, the data set has %d", k, b.NumFeatures, m)
		}
		for r, id := range b.IDs {
			i, ok := row[id]
			if !ok {
				return fmt.Errorf("client %d: sample %q is not in %s", k, id, d.Name)
			}
			if b.Y[r] != d.Y[i] || b.Heldout[r] != d.Heldout[i] {
				return fmt.Errorf("client %d: sample %q has another label or held-out flag than in %s", k, id, d.Name)
			}
			listed[i] = true
			idx, val := b.X.Row(r)
			claim := func(c int, v float64) error {
				j := b.Features[c]
				if d.X.At(i, j) != v {
					return fmt.Errorf("client %d: sample %q feature %d is %v, the data set has %v", k, id, j+1, v, d.X.At(i, j))
				}
				if o := owner[i*m+j]; o != 0 {
					return fmt.Errorf("sample %q feature %d held by clients %d and %d", id, j+1, o-1, k)
				}
				owner[i*m+j] = int32(k + 1)
				return nil
			}
			if idx == nil {
				for c, v := range val {
					if err := claim(c, v); err != nil {
						return err
					}
				}
				continue
			}
			for t, c := range idx {
				if err := claim(int(c), val[t]); err != nil {
					return err
				}
			}
		}
	}
	for i := 0; i < d.N(); i++ {
		if !listed[i] {
			return fmt.Errorf("sample %q held by no client", d.IDs[i])
		}
		idx, val := d.X.Row(i)
		if idx == nil {
			for j := range val {
				if owner[i*m+j] == 0 {
					return fmt.Errorf("sample %q feature %d held by no client", d.IDs[i], j+1)
				}
			}
			continue
		}
		for _, j := range idx {
			if owner[i*m+int(j)] == 0 {
				return fmt.Errorf("sample %q feature %d held by no client", d.IDs[i], j+1)
			}
		}
	}
	return nil
}
