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

// ParsePositive reads a comma list such as "0,1,2,3,4".
func ParsePositive(text string) (*LabelRule, error) {
	r := &LabelRule{positive: map[float64]bool{}}
	for _, f := range strings.Split(text, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("label %q in %q is not a number", f, text)
		}
		r.positive[v] = true
	}
	if len(r.positive) == 0 {
		return nil, fmt.Errorf("no labels in %q", text)
	}
	return r, nil
}

// Options control how a data set is loaded.
type Options struct {
	// Positive maps raw labels to +1/-1; nil uses the data set's own rule.
	Positive *LabelRule
	// Holdout is the fraction of samples held out for evaluation when the
	// source has no split of its own, chosen by a hash of the record id.
	Holdout float64
	// Dense forces dense storage of sparse text data.
	Dense bool
}

// MapLabels turns raw labels into +1/-1. Without a rule, two-class labels
// map as {-1,+1} as is, {0,1} with 1 positive, {1,2} with 1 positive (a
// LIBSVM convention); anything else needs a rule.
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
	var pos float64
	switch {
	case subset(classes, -1, 1):
		pos = 1
	case subset(classes, 0, 1):
		pos = 1
	case subset(classes, 1, 2):
		pos = 1
	default:
		ks := make([]float64, 0, len(classes))
		for k := range classes {
			ks = append(ks, k)
		}
		sort.Float64s(ks)
		if len(ks) > 6 {
			ks = ks[:6]
		}
		return nil, fmt.Errorf("labels have %d classes (%v...): give --positive with the labels that map to +1", len(classes), ks)
	}
	for i, v := range raw {
		y[i] = -1
		if v == pos {
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
