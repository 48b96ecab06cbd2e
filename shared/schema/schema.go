// Package schema holds a federation's schema: the columns the organizer
// declares once (the id, the label and its values, the features, the
// intercept), from which every participant's own file is read and the
// federation's feature numbers follow. No participant's file decides a
// feature number.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Label policies: who must hold a sample's label.
const (
	// LabelsEveryHolder: every holder of a sample has its label in its own
	// file. A sample whose label is blank at one of its holders is left
	// out; no label moves between participants.
	LabelsEveryHolder = "every-holder"
	// LabelsShared: a sample needs its label at one holder at least; its
	// co-holders are sent it, sealed, and so learn it. A party whose file
	// has no label column takes part.
	LabelsShared = "shared-with-co-holders"
)

// Missing-value rules.
const (
	// MissingRefuse refuses a file with an empty cell in a feature column.
	MissingRefuse = "refuse"
	// MissingMean fills a numeric cell with the federation's mean of the
	// feature (0 once standardized) and leaves every category of a
	// categorical cell off.
	MissingMean = "mean"
)

// Limits on a schema, so that a few bytes of JSON cannot ask for a huge
// federation.
const (
	MaxColumns = 1 << 20 // features after categories are expanded
	MaxBytes   = 4 << 20 // the JSON text
	maxName    = 256
)

// InterceptName names the intercept's weight in model files.
const InterceptName = "(intercept)"

// Schema is a federation's schema, as the organizer writes it in JSON:
//
//	{"id": "patient_id",
//	 "label": {"column": "outcome", "positive": ["yes"], "negative": ["no"]},
//	 "features": [{"name": "age"}, {"name": "smoker", "categories": ["never", "current"]}],
//	 "intercept": true, "labels": "every-holder", "missing": "refuse", "heldout": 0.1}
type Schema struct {
	// ID names the column that holds each row's record id; rows of
	// different parties with the same id are the same sample.
	ID    string `json:"id"`
	Label Label  `json:"label"`
	// Features are the model's inputs in the federation's order.
	Features []Feature `json:"features"`
	// Intercept adds a constant feature (nil: true), the model's bias.
	Intercept *bool `json:"intercept,omitempty"`
	// Labels is the label policy ("": LabelsEveryHolder).
	Labels string `json:"labels,omitempty"`
	// Missing is the missing-value rule ("": MissingRefuse).
	Missing string `json:"missing,omitempty"`
	// Heldout is the share of samples held out for evaluation, chosen by
	// a hash of each sample's pseudonym so that all its holders agree.
	Heldout float64 `json:"heldout,omitempty"`
}

// Label says which column holds the label and which of its values mean
// the positive class. Values are compared trimmed and case-insensitively.
// With Negative empty, every other non-empty value is negative; with it
// set, a value in neither list is refused.
type Label struct {
	Column   string   `json:"column"`
	Positive []string `json:"positive"`
	Negative []string `json:"negative,omitempty"`
}

// Feature is one input: a numeric column, or a categorical one that
// becomes one 0/1 feature per listed category. A numeric column with a
// Scale is on a scale the organizer knows (pixels, 0 to 255): it is
// divided by it (and clipped to ±1) instead of standardized, and needs no
// statistics.
type Feature struct {
	Name       string   `json:"name"`
	Categories []string `json:"categories,omitempty"`
	Scale      float64  `json:"scale,omitempty"`
}

// Column is one of the federation's features after categories are
// expanded: its name in model files and where it comes from.
type Column struct {
	Name     string  // "age", "smoker=current", "(intercept)"
	Feature  int     // index into Schema.Features; -1 for the intercept
	Category string  // the category a categorical column stands for
	Scale    float64 // a numeric column's declared scale (Feature.Scale), 0: standardized
}

// Categorical reports whether the column is one category of a
// categorical feature (a 0/1 indicator, never rescaled).
func (c Column) Categorical() bool { return c.Category != "" }

// Parse reads a schema from JSON, refusing unknown fields, and checks it.
func Parse(r io.Reader) (*Schema, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("schema: more than %d bytes", MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Schema
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("schema: %w", jsonError(data, err))
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return nil, errors.New("schema: text after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// jsonError adds the line of a syntax or type error.
func jsonError(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	return fmt.Errorf("line %d: %w", 1+bytes.Count(data[:off], []byte("\n")), err)
}

// HasIntercept reports whether the model has an intercept (the default).
func (s *Schema) HasIntercept() bool { return s.Intercept == nil || *s.Intercept }

// LabelPolicy returns Labels with its default.
func (s *Schema) LabelPolicy() string {
	if s.Labels == "" {
		return LabelsEveryHolder
	}
	return s.Labels
}

// MissingRule returns Missing with its default.
func (s *Schema) MissingRule() string {
	if s.Missing == "" {
		return MissingRefuse
	}
	return s.Missing
}

// Key is how column names and values are compared: trimmed, case folded.
func Key(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Validate checks the schema and names what is wrong.
func (s *Schema) Validate() error {
	seen := map[string]string{}
	name := func(what, n string) error {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("schema: %s: empty name", what)
		}
		if len(n) > maxName {
			return fmt.Errorf("schema: %s: a name of %d bytes (at most %d)", what, len(n), maxName)
		}
		if prev, dup := seen[Key(n)]; dup {
			return fmt.Errorf("schema: %s %q: the name is already the %s", what, n, prev)
		}
		seen[Key(n)] = what
		return nil
	}
	if err := name("id column", s.ID); err != nil {
		return err
	}
	if err := name("label column", s.Label.Column); err != nil {
		return err
	}
	if len(s.Label.Positive) == 0 {
		return errors.New(`schema: label: "positive" lists no value`)
	}
	values := map[string]string{}
	for _, list := range []struct {
		what string
		vals []string
	}{{"positive", s.Label.Positive}, {"negative", s.Label.Negative}} {
		for _, v := range list.vals {
			k := Key(v)
			if k == "" {
				return fmt.Errorf("schema: label: an empty %s value", list.what)
			}
			if prev, dup := values[k]; dup {
				return fmt.Errorf("schema: label: value %q is listed twice (%s and %s)", v, prev, list.what)
			}
			values[k] = list.what
		}
	}
	if len(s.Features) == 0 {
		return errors.New("schema: no features")
	}
	cols := 0
	for i, f := range s.Features {
		if err := name(fmt.Sprintf("feature %d", i+1), f.Name); err != nil {
			return err
		}
		if f.Scale != 0 && (!(f.Scale > 0) || math.IsInf(f.Scale, 0) || f.Categories != nil) {
			return fmt.Errorf("schema: feature %q: scale %v: want a finite number > 0, for a numeric column", f.Name, f.Scale)
		}
		if f.Categories == nil {
			cols++
			continue
		}
		if len(f.Categories) == 0 {
			return fmt.Errorf("schema: feature %q: an empty category list (leave \"categories\" out for a numeric column)", f.Name)
		}
		cat := map[string]bool{}
		for _, c := range f.Categories {
			k := Key(c)
			if k == "" {
				return fmt.Errorf("schema: feature %q: an empty category", f.Name)
			}
			if cat[k] {
				return fmt.Errorf("schema: feature %q: category %q listed twice", f.Name, c)
			}
			cat[k] = true
		}
		cols += len(f.Categories)
		if cols > MaxColumns {
			break
		}
	}
	if cols > MaxColumns {
		return fmt.Errorf("schema: more than %d feature columns", MaxColumns)
	}
	// Model files name weights by column: two may not read alike.
	names := map[string]bool{}
	for _, c := range s.Columns() {
		if names[Key(c.Name)] {
			return fmt.Errorf("schema: two columns are both named %q (a category's column is named feature=category)", c.Name)
		}
		names[Key(c.Name)] = true
	}
	switch s.LabelPolicy() {
	case LabelsEveryHolder, LabelsShared:
	default:
		return fmt.Errorf("schema: labels %q: want %q or %q", s.Labels, LabelsEveryHolder, LabelsShared)
	}
	switch s.MissingRule() {
	case MissingRefuse, MissingMean:
	default:
		return fmt.Errorf("schema: missing %q: want %q or %q", s.Missing, MissingRefuse, MissingMean)
	}
	if math.IsNaN(s.Heldout) || s.Heldout < 0 || s.Heldout > 0.9 {
		return fmt.Errorf("schema: heldout %v: want a share in [0, 0.9]", s.Heldout)
	}
	return nil
}

// Columns lists the federation's feature columns in their order: each
// numeric feature, each category of a categorical one, the intercept last.
func (s *Schema) Columns() []Column {
	var out []Column
	for i, f := range s.Features {
		if f.Categories == nil {
			out = append(out, Column{Name: f.Name, Feature: i, Scale: f.Scale})
			continue
		}
		for _, c := range f.Categories {
			out = append(out, Column{Name: f.Name + "=" + c, Feature: i, Category: c})
		}
	}
	if s.HasIntercept() {
		out = append(out, Column{Name: InterceptName, Feature: -1})
	}
	return out
}

// NumColumns is len(Columns()).
func (s *Schema) NumColumns() int {
	n := 0
	for _, f := range s.Features {
		n += max(1, len(f.Categories))
	}
	if s.HasIntercept() {
		n++
	}
	return n
}

// InterceptColumn returns the intercept's column (the last), or -1.
func (s *Schema) InterceptColumn() int {
	if !s.HasIntercept() {
		return -1
	}
	return s.NumColumns() - 1
}

// LabelOf maps a label cell to +1 or -1; ok is false for a value the
// schema does not list (only when Negative is set) and for an empty cell.
func (s *Schema) LabelOf(v string) (y float64, ok bool) {
	k := Key(v)
	if k == "" {
		return 0, false
	}
	for _, p := range s.Label.Positive {
		if Key(p) == k {
			return 1, true
		}
	}
	if len(s.Label.Negative) == 0 {
		return -1, true
	}
	for _, n := range s.Label.Negative {
		if Key(n) == k {
			return -1, true
		}
	}
	return 0, false
}
