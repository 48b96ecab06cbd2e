package dataset

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// LabelRule maps raw labels to +1 (those in the set) or -1.
type LabelRule struct{ positive map[float64]bool }

// ParsePositive reads a comma list of the raw labels that map to +1, such
// as "0,1,2,3,4".
func ParsePositive(text string) (*LabelRule, error) {
	r := &LabelRule{positive: map[float64]bool{}}
	for _, f := range strings.Split(text, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("positive labels %q: %q is not a number", text, f)
		}
		r.positive[v] = true
	}
	if len(r.positive) == 0 {
		return nil, fmt.Errorf("positive labels %q: no labels given", text)
	}
	return r, nil
}

// String lists the positive labels in ascending order, as ParsePositive
// reads them.
func (r *LabelRule) String() string {
	ks := make([]float64, 0, len(r.positive))
	for k := range r.positive {
		ks = append(ks, k)
	}
	sort.Float64s(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = strconv.FormatFloat(k, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Positive reports whether the rule maps raw label v to +1.
func (r *LabelRule) Positive(v float64) bool { return r.positive[v] }

// Options control how a data set is loaded.
type Options struct {
	// Positive maps raw labels to +1/-1; nil uses the data set's own rule
	// (see MapLabels and Load).
	Positive *LabelRule
	// Holdout is the fraction of samples held out for evaluation when the
	// source has no split of its own, chosen by HoldoutByID; 0 = none. For
	// the built-in "mnist", "breast-cancer", "digits", "diabetes" and
	// synthetic data, 0 means their default 0.1 and a negative value none.
	Holdout float64
	// Sparse and Dense force the storage of X. By default ReadLIBSVM
	// stores sparse, everything else dense, and Load stores a file dense
	// when at least half of its entries are non-zero.
	Sparse, Dense bool
	// Raw loads a built-in set as its source holds it, for files that look
	// like a party's own: no standardizing, no /255 or /16, no appended
	// bias (synthetic data loses its constant last feature). Files are
	// always read as they are.
	Raw bool
}

func (o Options) check() error {
	if o.Sparse && o.Dense {
		return fmt.Errorf("options: both sparse and dense storage asked for")
	}
	if math.IsNaN(o.Holdout) || o.Holdout >= 1 {
		return fmt.Errorf("options: held-out fraction %v must be below 1", o.Holdout)
	}
	return nil
}

// MapLabels turns raw labels into +1/-1. With a rule, labels in its set are
// +1 and all others -1. Without one, two-class labels map as {-1,+1} kept,
// {0,1} with 1 positive, {1,2} with 1 positive (a LIBSVM convention);
// anything else needs a rule.
func MapLabels(raw []float64, rule *LabelRule) ([]float64, error) {
	y := make([]float64, len(raw))
	if rule != nil {
		for i, v := range raw {
			y[i] = -1
			if rule.positive[v] {
				y[i] = 1
			}
		}
		return y, nil
	}
	classes := map[float64]bool{}
	for _, v := range raw {
		classes[v] = true
	}
	// In every known convention the positive class is 1.
	if !subset(classes, -1, 1) && !subset(classes, 0, 1) && !subset(classes, 1, 2) {
		ks := make([]float64, 0, len(classes))
		for k := range classes {
			ks = append(ks, k)
		}
		sort.Float64s(ks)
		list := fmt.Sprint(ks)
		if len(ks) > 6 {
			list = fmt.Sprint(ks[:6])
			list = list[:len(list)-1] + " ...]"
		}
		return nil, fmt.Errorf("labels have %d classes %s, not two: give --positive with the labels that map to +1", len(classes), list)
	}
	for i, v := range raw {
		y[i] = -1
		if v == 1 {
			y[i] = 1
		}
	}
	return y, nil
}

func subset(set map[float64]bool, a, b float64) bool {
	for k := range set {
		if k != a && k != b {
			return false
		}
	}
	return true
}
