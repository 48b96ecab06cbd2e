package schema

import (
	"math"
)

// The federation's scaling rule (docs/own-data.md, "Scaling"): every
// numeric column is standardized with the federation's mean and standard
// deviation, which its holders open from sealed sums, and clipped at
// ClipSD standard deviations; categories stay 0/1; the intercept is
// InterceptValue. Every column but the intercept is then divided by the
// schema's Divisor, so that no row's squared norm can pass what sealing
// carries, whatever the data.
const (
	ClipSD         = 5
	InterceptValue = 1
)

// Map is one column's affine map from the raw value to the value the
// federation trains on: trained = clamp((raw - Offset) / Scale, Lo, Hi),
// no clamp when Lo == Hi == 0.
type Map struct {
	Offset float64 `json:"offset"`
	Scale  float64 `json:"scale"`
	Lo     float64 `json:"clip_lo,omitempty"`
	Hi     float64 `json:"clip_hi,omitempty"`
}

// Apply maps a raw value.
func (m Map) Apply(raw float64) float64 {
	v := (raw - m.Offset) / m.Scale
	if m.Lo != 0 || m.Hi != 0 {
		v = min(max(v, m.Lo), m.Hi)
	}
	return v
}

// Clipped reports whether the map clamps.
func (m Map) Clipped() bool { return m.Lo != 0 || m.Hi != 0 }

// Divisor is the factor every column but the intercept is divided by, so
// that a row's squared norm, at most ClipSD^2 a standardized feature, 1 a
// categorical one or one with a declared scale, and InterceptValue^2,
// stays within half of limit. 1 for any schema of up to about
// limit/(2 ClipSD^2) standardized features.
func (s *Schema) Divisor(limit float64) float64 {
	worst := 0.0
	for _, f := range s.Features {
		if f.Categories == nil && f.Scale == 0 {
			worst += ClipSD * ClipSD
		} else {
			worst++
		}
	}
	room := limit/2 - InterceptValue*InterceptValue
	if worst <= room {
		return 1
	}
	return math.Sqrt(worst / room)
}

// Standardize returns a numeric column's map from the federation's count,
// mean and standard deviation of its raw values (over the training
// samples that hold it), divided by g. A column with no value or no spread
// is only centered.
func Standardize(count, mean, sd, g float64) Map {
	if !(count > 0) || math.IsNaN(mean) || math.IsInf(mean, 0) {
		mean = 0
	}
	if !(sd > 0) || math.IsInf(sd, 0) {
		sd = 1
	}
	return Map{Offset: mean, Scale: sd * g, Lo: -ClipSD / g, Hi: ClipSD / g}
}

// Clip gives column col's map the federation's clip bounds for divisor g
// (the holders report offset and scale; the bounds follow from the
// schema): numeric columns only.
func (s *Schema) Clip(col int, m Map, g float64) Map {
	c := s.Columns()[col]
	switch {
	case c.Feature < 0 || c.Categorical():
	case c.Scale > 0:
		m.Lo, m.Hi = -1/g, 1/g
	default:
		m.Lo, m.Hi = -ClipSD/g, ClipSD/g
	}
	return m
}

// Declared is a column's map from its declared scale: divided by it,
// clipped to ±1, divided by g.
func Declared(scale, g float64) Map { return Map{Scale: scale * g, Lo: -1 / g, Hi: 1 / g} }

// CategoryMap is a category indicator's map: 0/1, divided by g.
func CategoryMap(g float64) Map { return Map{Scale: g} }

// InterceptMap is the intercept's map: a raw 1 trains as InterceptValue.
func InterceptMap() Map { return Map{Scale: 1.0 / InterceptValue} }

// Magnitude is the power-of-two bound a holder declares for a column's
// raw values: the smallest e with every |v| <= 2^e (MinMagnitude for a
// column of zeros). It says less than a minimum or maximum would: only the
// order of magnitude.
func Magnitude(maxAbs float64) int {
	if !(maxAbs > 0) {
		return MinMagnitude
	}
	_, e := math.Frexp(maxAbs) // maxAbs = f 2^e, f in [0.5, 1)
	if math.Ldexp(1, e-1) >= maxAbs {
		e--
	}
	return min(max(e, MinMagnitude), MaxMagnitude)
}

// Magnitude bounds: raw values beyond 2^MaxMagnitude are refused when
// read (they would not survive squaring).
const (
	MinMagnitude = -64
	MaxMagnitude = 500
)
