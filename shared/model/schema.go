package model

import (
	"fmt"
	"math"

	"github.com/hyfed/hyfed/shared/schema"
)

// Weight is one weight of a model trained on a schema's columns, as the
// sidecar lists it: the column's name, the map from its raw value to the
// value the federation trained on, and the weight in trained units.
type Weight struct {
	Name string `json:"name"`
	schema.Map
	Weight float64 `json:"weight"`
}

// FromSchema returns the model of a federation with a schema as a
// LIBLINEAR model that scores raw values (each weight divided by its
// column's scale, the offsets and the intercept folded into LIBLINEAR's
// bias term, -B 1), and the sidecar's weights in trained units. Clipping
// is the one thing the LIBLINEAR file cannot say: it scores a raw value
// beyond a column's clip as if unclipped (ScoreRaw clips).
func FromSchema(loss string, w []float64, s *schema.Schema, maps []schema.Map) (*Model, []Weight, error) {
	cols := s.Columns()
	if len(w) != len(cols) || len(maps) != len(cols) {
		return nil, nil, fmt.Errorf("model: %d weights and %d maps for the schema's %d columns", len(w), len(maps), len(cols))
	}
	ws := make([]Weight, len(cols))
	raw := make([]float64, 0, len(cols))
	bias := 0.0
	for j, c := range cols {
		mp := maps[j]
		if !(mp.Scale > 0) || math.IsInf(mp.Scale, 0) || math.IsNaN(mp.Offset) || math.IsInf(mp.Offset, 0) {
			return nil, nil, fmt.Errorf("model: column %q: scaling map %+v", c.Name, mp)
		}
		ws[j] = Weight{Name: c.Name, Map: mp, Weight: w[j]}
		if c.Feature < 0 { // the intercept: a raw 1
			bias += w[j] * mp.Apply(1)
			continue
		}
		raw = append(raw, w[j]/mp.Scale)
		bias -= w[j] * mp.Offset / mp.Scale
	}
	m, err := New(loss, append(raw, bias))
	if err != nil {
		return nil, nil, err
	}
	m.NumFeatures, m.Bias = len(raw), 1
	if !s.HasIntercept() && bias == 0 {
		m.W, m.NumFeatures, m.Bias = m.W[:len(raw)], len(raw), -1
	}
	return m, ws, nil
}

// ScoreRaw scores one row of raw column values (the schema's columns
// without the intercept, in order; a missing value as NaN, which the
// federation's mean stands in for) exactly as the federation's model does:
// each value mapped and clipped as in training.
func ScoreRaw(ws []Weight, raw []float64) float64 {
	z, j := 0.0, 0
	for _, w := range ws {
		if w.Name == schema.InterceptName {
			z += w.Weight * w.Apply(1)
			continue
		}
		if v := raw[j]; !math.IsNaN(v) {
			z += w.Weight * w.Apply(v)
		}
		j++
	}
	return z
}
