package table

import (
	"fmt"
	"math"
	"strconv"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
)

// Block returns the table as the participant's block: the federation's
// column numbers, the intercept column (its values are placed by the
// federation's preparation), held-out samples chosen by a hash of the id
// (schema.Heldout, alike at every holder), values still raw. A value too
// large to square is refused, naming its line and column.
func (t *Table) Block(s *schema.Schema) (*partition.Block, error) {
	cols := s.Columns()
	ic := s.InterceptColumn()
	width := len(t.Columns)
	if ic >= 0 {
		width++
	}
	b := &partition.Block{NumFeatures: s.NumColumns(), Features: append([]int(nil), t.Columns...),
		IDs: t.IDs, Y: t.Labels, Heldout: make([]bool, len(t.IDs)), X: dataset.NewDense(len(t.IDs), width),
		Raw: &partition.Raw{HasLabels: t.HasLabels}}
	if ic >= 0 {
		b.Features = append(b.Features, ic)
	}
	limit := math.Ldexp(1, schema.MaxMagnitude)
	for i := range t.IDs {
		b.Heldout[i] = dataset.HoldoutByID(t.IDs[i], s.Heldout)
		for j := range t.Columns {
			v := t.X.Data[i*t.X.Cols+j]
			if math.Abs(v) > limit {
				return nil, fmt.Errorf("%s:%d: column %q: %s is too large (beyond 2^%d)", t.File, t.Lines[i], cols[t.Columns[j]].Name,
					strconv.FormatFloat(v, 'g', 6, 64), schema.MaxMagnitude)
			}
			b.X.Data[i*width+j] = v
		}
	}
	for _, c := range t.Missing {
		b.Raw.Missing = append(b.Raw.Missing, [2]int{c.Row, c.Col})
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", t.File, err)
	}
	return b, nil
}
