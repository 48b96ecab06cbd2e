package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/hyfed/hyfed/shared/schema"
)

// Format names the sidecar's layout.
const Format = "hyfed-model v1"

// Info is the JSON sidecar FILE.json of a model file: how the model was
// trained and how good it is. Settings a source does not have are left
// out (a server does not know the participants' data).
type Info struct {
	Format string `json:"format"`
	// Source: "experiment" (hyfed experiment), "central" (hyfed central),
	// "federation" (a server's federation, fetched by hyfed sim/join or a
	// page).
	Source    string `json:"source"`
	Algorithm string `json:"algorithm"` // hyfdca, fedavg, ..., or sdca (central)
	Data      string `json:"data,omitempty"`
	Positive  string `json:"positive,omitempty"` // label rule, when given
	Partition string `json:"partition,omitempty"`
	Clients   int    `json:"clients,omitempty"`
	Scheme    string `json:"scheme,omitempty"`
	Step      string `json:"step,omitempty"`

	Loss     string  `json:"loss"`
	Lambda   float64 `json:"lambda"`
	Fraction float64 `json:"fraction,omitempty"`
	Inner    int     `json:"inner,omitempty"`
	Seed     int64   `json:"seed,omitempty"`
	// Rounds is what the federation ran (central: epochs); ModelRound the
	// round w is from; Best says it is the iterate with the lowest primal
	// (the one a federation hands out), not simply the last.
	Rounds     int  `json:"rounds"`
	ModelRound int  `json:"model_round"`
	Best       bool `json:"best"`

	NumFeatures int `json:"num_features"`
	// BiasFeature is the 1-based feature that holds hyfed's constant bias
	// (785 for the built-in images) and BiasValue its value (10); 0 when
	// the data has none. It is an ordinary feature: LIBLINEAR's own bias
	// is off (-1), and data for liblinear-predict must carry it.
	BiasFeature int     `json:"bias_feature,omitempty"`
	BiasValue   float64 `json:"bias_value,omitempty"`
	// Bias says the above in words for whoever opens the file (Marshal
	// writes it).
	Bias string `json:"bias"`

	Metrics Metrics `json:"metrics"`

	// A federation with a schema: the schema its participants' files were
	// read against, and every weight with its column's name and scaling
	// map (the LIBLINEAR file scores raw values; see FromSchema).
	Schema  *schema.Schema `json:"schema,omitempty"`
	Weights []Weight       `json:"weights,omitempty"`
}

// Metrics are the model's: the primal P(w) as the federation certified it
// (never below the exact one), the dual where the method has one,
// accuracies of w, and the known optimum P*. Absent ones are null.
type Metrics struct {
	Primal          *float64 `json:"primal"`
	Dual            *float64 `json:"dual,omitempty"`
	HeldoutAccuracy *float64 `json:"heldout_accuracy"`
	TrainAccuracy   *float64 `json:"train_accuracy"`
	PStar           *float64 `json:"pstar,omitempty"`
	RelativeLoss    *float64 `json:"relative_loss,omitempty"`
	// Bound is what the federation certified of the model: its objective
	// is at most this far above the optimum, relative (the duality gap).
	Bound *float64 `json:"bound,omitempty"`
}

// Num returns &v, or nil for NaN and infinities (JSON has no NaN).
func Num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// ParseInfo reads a sidecar.
func ParseInfo(b []byte) (*Info, error) {
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, err
	}
	if info.Format != Format {
		return nil, fmt.Errorf("format %q, want %q", info.Format, Format)
	}
	return &info, nil
}

// Marshal returns the sidecar's JSON, indented for people, with Format
// filled in.
func (i *Info) Marshal() ([]byte, error) {
	c := *i
	c.Format = Format
	c.Bias = "hyfed has no separate bias term: the model file says bias -1 (LIBLINEAR's -B off)"
	if c.Schema != nil {
		c.Bias = "the model file scores raw values of the schema's columns (features 1.. in the schema's order, a category's column 1 or 0) with LIBLINEAR's bias term (-B 1): the offsets and the intercept folded in; unlike hyfed predict, it does not clip values beyond a column's clip_lo/clip_hi"
	} else if c.BiasFeature > 0 {
		c.Bias += fmt.Sprintf("; the bias is feature %d of the data, a constant %v in every sample, and w's weight %d is its weight: data for liblinear-predict must carry %d:%v", c.BiasFeature, c.BiasValue, c.BiasFeature, c.BiasFeature, c.BiasValue)
	} else {
		c.Bias += "; a bias, if the data has one, is an ordinary constant feature"
	}
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
