package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/gram"

	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal/threshold"
)

// Step rules.
const (
	// StepBlock is the default: every updating sample group picks H of
	// its samples among those that violate optimality, its holders add
	// their partial Grams of the picks under sealing, and each holder
	// solves the group's H-dimensional dual subproblem exactly (CoCoA+
	// scaling measured from the round before); the server takes the exact
	// dual line search along the combined direction, beyond 1 up to the
	// feasibility limit (docs/design.md, "The step rules").
	StepBlock = "block"
	// StepPaper is Algorithm 5 of the HyFDCA paper as published: w fixed in the
	// local loop, independent picks, a fixed gamma, updates averaged over
	// |B_n| (with the correct closed-form hinge step of docs/design.md section 1).
	StepPaper = "paper"
)

// retiredStep is the step rule the block step replaced: refused by name.
const retiredStep = "hyfed"

// Step size searches of the default step rule.
const (
	SearchDual   = "dual"
	SearchPrimal = "primal"
)

// Config is the federation's public configuration: one type from the
// command-line flags and the create request's JSON to the Setup message,
// the checkpoints and the status views. Its zero value is the default
// federation: Validate fills every default (Defaults spells them out) and
// refuses anything out of range, naming the field.
type Config struct {
	Lambda float64 `json:"lambda"` // L2 regularization (0: DefaultLambda)
	Loss   string  `json:"loss"`   // hinge (default) or logistic
	Step   string  `json:"step"`   // block (default) or paper (docs/design.md, "The step rules")
	// Inner is H, the samples each sample group (block; at most
	// MaxBlockPicks) or client (paper) updates a round; 0: InnerFor(IIC).
	Inner int     `json:"inner"`
	IIC   float64 `json:"iic"` // the inner iterations constant (0: DefaultIIC)
	// Gamma scales the paper rule's updates (0: 1).
	Gamma    float64 `json:"gamma,omitempty"`
	Fraction float64 `json:"fraction"` // chance a connected client is active in a round (0: 1, all)
	Rounds   int     `json:"rounds"`   // the most rounds; 0: DefaultRounds
	// Tol stops training early, once the duality gap certifies the model
	// handed out within Tol of the optimum (relative): 0 DefaultTol,
	// NoTol never (the baselines have no dual and run every round).
	Tol Tolerance `json:"tol"`
	// Search picks the step along the round's direction: "dual" (the
	// dual's maximiser, the default) or "primal" (the smallest primal
	// keeping half the best dual gain).
	Search  string `json:"search"`
	Seed    uint64 `json:"seed,omitempty"`   // the server's participation draws
	Clients int    `json:"min_participants"` // registrations that start the federation
	// NumFeatures, if set, is the feature count every block must declare.
	NumFeatures int `json:"num_features"`
	// BiasFeature and BiasValue name a feature every sample holds with one
	// non-zero value (the data's bias; BiasValue 0: none): the block step
	// enters its part of every Gram exactly.
	BiasFeature int     `json:"bias_feature,omitempty"`
	BiasValue   float64 `json:"bias_value,omitempty"`
	// NoFindBias stops the coordinator taking the bias from the blocks
	// when none is declared (docs/design.md, "The step rules").
	NoFindBias Off `json:"find_bias"`
	// DealtEntries lets a sample's holders hold the same feature, each
	// some of its non-zero entries (sparse data dealt among them, as
	// partition grid:K,Q deals it): their parts add up. Without it a
	// feature of a sample held twice refuses both holders.
	DealtEntries bool `json:"dealt_entries,omitempty"`
	// Quorum is the share of participants that must be connected for a
	// round to start (0: 0.5); with fewer the federation waits.
	Quorum float64 `json:"quorum,omitempty"`
	// SealPrimal seals the primal contributions too: the server adds them
	// per feature and one participant opens only the sum (docs/privacy.md).
	SealPrimal bool `json:"seal_primal,omitempty"`
	// NoGroupSteps (block step) turns off the server's step across sample
	// groups, which moves dual mass between them (docs/design.md).
	NoGroupSteps Off `json:"group_steps"`
	// SharedDirections (block step) is how many of each group's leading
	// directions are priced at the number of updating groups, the rest at
	// sigma' (package gram): 0 the default, NoDirections none.
	SharedDirections Directions `json:"shared_directions"`
	// EveryHolderSolves (block step) sends every holder of a group its
	// Gram to solve, instead of one solver a group that seals the
	// direction for the others (docs/design.md, section 2).
	EveryHolderSolves Off `json:"solve_once"`

	// Algo is the algorithm: hyfdca (the default), an averaging baseline
	// (fedavg, hyfem-avg, hyfem-prox: package averaging) or fedhybrid
	// (horizontal data, logistic loss), all through the same coordinator,
	// participants and sealing (docs/design.md, "The baselines").
	Algo  string  `json:"algo"`
	StepA float64 `json:"step_a,omitempty"` // the baselines' step a (fedhybrid: a_i)
	StepB float64 `json:"step_b,omitempty"` // and b (fedhybrid: b_i)
	Mu    float64 `json:"mu,omitempty"`     // HyFEM-Prox's proximal weight, FedHybrid's penalty
	Mode  string  `json:"mode,omitempty"`   // FedHybrid: newton (default), gradient or mixed

	// Keys says who can open a sum: "shared" (every participant derives
	// the one key from the link secret; the default) or "threshold" (t of
	// a key committee switch every sum to its receiver: docs/encryption.md).
	Keys string `json:"keys,omitempty"`
	// KeyCommittee is n of t-of-n (the first participants by index) and
	// KeyThreshold t; threshold keys only (0: the defaults).
	KeyCommittee int `json:"key_committee,omitempty"`
	KeyThreshold int `json:"key_threshold,omitempty"`

	// Pseudonyms says how record ids become the pseudonyms samples are
	// aligned by: "keyed" (a keyed hash under the link secret, which every
	// participant can compute; the default) or "oprf" (a threshold OPRF
	// the key committee evaluates: no party computes one alone).
	Pseudonyms string `json:"pseudonyms,omitempty"`

	// Schema, when set, is the federation's schema: participants join with
	// their own files; the feature count and the intercept follow from it
	// (docs/own-data.md).
	Schema *schema.Schema `json:"schema,omitempty"`
}

// GroupSteps, SolveOnce and FindBias say whether those settings, on by
// default, are on.
func (c Config) GroupSteps() bool { return !bool(c.NoGroupSteps) }

// SolveOnce: one solver a group (see EveryHolderSolves).
func (c Config) SolveOnce() bool { return !bool(c.EveryHolderSolves) }

// FindBias: the bias taken from the blocks (see NoFindBias).
func (c Config) FindBias() bool { return !bool(c.NoFindBias) }

// Off is a setting that is on unless set: its zero value keeps the
// default, so that Config{} is the default federation. In JSON it is the
// setting itself, as it always was: "group_steps": true means on.
type Off bool

// MarshalJSON writes the setting's own sense.
func (o Off) MarshalJSON() ([]byte, error) { return json.Marshal(!bool(o)) }

// UnmarshalJSON reads the setting's own sense.
func (o *Off) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err != nil {
		return err
	}
	*o = Off(!on)
	return nil
}

// Directions is Config.SharedDirections: 0 the default, NoDirections
// none, else the count. In JSON it is the count in effect, 0 for none, as
// it always was.
type Directions int

// NoDirections prices every direction at sigma'.
const NoDirections Directions = -1

// Count is the number of shared directions in effect.
func (d Directions) Count() int {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return gram.SharedDirections
	}
	return int(d)
}

// MarshalJSON writes the count in effect.
func (d Directions) MarshalJSON() ([]byte, error) { return json.Marshal(d.Count()) }

// UnmarshalJSON reads a count, 0 for none.
func (d *Directions) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*d = Directions(n)
	if n == 0 {
		*d = NoDirections
	}
	return nil
}

// Tolerance is Config.Tol: 0 the default, NoTol none, else the bound. In
// JSON it is the bound in effect, 0 for none, as Directions' count is.
type Tolerance float64

// NoTol runs every round.
const NoTol Tolerance = -1

// Bound is the relative bound in effect, 0 for none.
func (t Tolerance) Bound() float64 {
	switch {
	case t < 0:
		return 0
	case t == 0:
		return DefaultTol
	}
	return float64(t)
}

// MarshalJSON writes the bound in effect.
func (t Tolerance) MarshalJSON() ([]byte, error) { return json.Marshal(t.Bound()) }

// UnmarshalJSON reads a bound, 0 for none.
func (t *Tolerance) UnmarshalJSON(b []byte) error {
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = Tolerance(v)
	if v == 0 {
		*t = NoTol
	}
	return nil
}

// synced reports whether the step rule picks the same samples at every
// holder of a group and moves the dual values by a server-chosen step
// (block), rather than each client on its own (paper).
func (c *Config) synced() bool { return c.Step != StepPaper }

// The defaults a user gets for the settings that have one (Defaults).
const (
	DefaultLambda = 1e-3
	DefaultIIC    = 0.2
	// DefaultRounds is a cap: DefaultTol ends most federations earlier
	// (docs/design.md, "When training stops").
	DefaultRounds = 300
	// DefaultTol: a model certified within 1 % of the optimal objective,
	// the accuracy the convergence targets ask for.
	DefaultTol = 1e-2
	// DefaultKeyCommittee and DefaultKeyThreshold: 2-of-3 threshold keys.
	// t = 2 is the smallest t under which the server together with one
	// participant (one leaked key, one stolen laptop) opens nothing; each
	// further unit costs every opened chunk one more switching share (131
	// kB up and down, about 1 ms of a member) and one more member that must
	// be live. A committee of 3 lets one member drop for good; setup grows
	// with n*t, not with the federation (docs/encryption.md, "Default t").
	DefaultKeyCommittee = 3
	DefaultKeyThreshold = 2
)

// Pseudonym modes (Config.Pseudonyms).
const (
	PseudonymsKeyed = "keyed"
	PseudonymsOPRF  = "oprf"
)

// OPRF reports whether samples are aligned by OPRF pseudonyms.
func (c *Config) OPRF() bool { return c.Pseudonyms == PseudonymsOPRF }

// Key modes (Config.Keys).
const (
	KeysShared    = "shared"
	KeysThreshold = "threshold"
)

// Defaults returns the configuration a user gets without choosing: what
// the flags of hyfed experiment and hyfed create and an API create request
// that leaves a field out start from. Settings that depend on others (the
// step's search, the quorum) are filled by Validate.
func Defaults() Config {
	return Config{Algo: AlgoHyFDCA, Loss: "hinge", Lambda: DefaultLambda, Step: StepBlock, IIC: DefaultIIC,
		Fraction: 1, Rounds: DefaultRounds, Tol: DefaultTol, Gamma: 1, SharedDirections: gram.SharedDirections, Search: SearchDual,
		Quorum: 0.5, Pseudonyms: PseudonymsKeyed, Keys: KeysShared, KeyCommittee: DefaultKeyCommittee, KeyThreshold: DefaultKeyThreshold}
}

// InnerFor is H from IIC, the one formula: ceil(iic * N / clients), at
// least 1 (N the federation's training samples). The coordinator sets it
// when Config.Inner is 0; runs that hold all the data (hyfed experiment,
// compare) may compute it first.
func InnerFor(iic float64, numTrain, clients int) int {
	return max(1, int(math.Ceil(iic*float64(numTrain)/float64(clients))))
}

// AlgoHyFDCA is the default algorithm.
const AlgoHyFDCA = "hyfdca"

// Algorithms lists the values of Config.Algo.
var Algorithms = append(append([]string{AlgoHyFDCA}, averaging.Algorithms...), fedhybrid.Name)

// Baseline reports whether the configuration runs a baseline (no dual
// values: only P and the accuracies are measured).
func (c *Config) Baseline() bool { return c.Algo != "" && c.Algo != AlgoHyFDCA }

// Averaging reports whether the configuration runs an averaging baseline.
func (c *Config) Averaging() bool { return c.Baseline() && c.Algo != fedhybrid.Name }

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Algo == "" {
		c.Algo = AlgoHyFDCA
	}
	if !slices.Contains(Algorithms, c.Algo) {
		return fmt.Errorf("config: algo %q: want one of %s", c.Algo, strings.Join(Algorithms, ", "))
	}
	if c.Algo == fedhybrid.Name {
		if c.Loss != "logistic" {
			return fmt.Errorf("config: fedhybrid needs a smooth loss: logistic, not %q", c.Loss)
		}
		if !(c.Mu > 0) || math.IsInf(c.Mu, 0) {
			return fmt.Errorf("config: fedhybrid: mu %v must be a finite number > 0", c.Mu)
		}
		if !(c.StepA >= 0 && c.StepB >= 0) || math.IsInf(c.StepA, 0) || math.IsInf(c.StepB, 0) {
			return fmt.Errorf("config: fedhybrid: step sizes a %v, b %v must be finite and >= 0 (0: the defaults)", c.StepA, c.StepB)
		}
		if c.Mode == "" {
			c.Mode = "newton"
		}
		if _, err := fedhybrid.Newton(c.Mode, 0); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	} else if c.Mode != "" {
		return fmt.Errorf("config: mode %q applies to fedhybrid only", c.Mode)
	} else if c.Averaging() {
		if !(c.StepA > 0) || math.IsInf(c.StepA, 0) {
			return fmt.Errorf("config: %s: step a %v must be a finite number > 0", c.Algo, c.StepA)
		}
		if !(c.StepB >= 0) || math.IsInf(c.StepB, 0) {
			return fmt.Errorf("config: %s: step b %v must be a finite number >= 0", c.Algo, c.StepB)
		}
		if prox := c.Algo == averaging.HyFEMProx; prox != (c.Mu > 0) || math.IsInf(c.Mu, 0) || c.Mu < 0 {
			return fmt.Errorf("config: mu %v: %s needs a finite mu > 0, the other algorithms none", c.Mu, averaging.HyFEMProx)
		}
	} else if c.StepA != 0 || c.StepB != 0 || c.Mu != 0 {
		return fmt.Errorf("config: step a, step b and mu apply to the averaging baselines, not %s", c.Algo)
	}
	if c.Loss == "" {
		c.Loss = "hinge"
	}
	if _, err := loss.Parse(c.Loss); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.Step == "" {
		c.Step = StepBlock
	}
	if c.Step == retiredStep {
		return fmt.Errorf("config: step %q was retired: the block step (%s, the default) replaced it; docs/results/2026-11-24-step-study.md keeps its measurements", c.Step, StepBlock)
	}
	if c.Step != StepBlock && c.Step != StepPaper {
		return fmt.Errorf("config: step %q: want %s or %s", c.Step, StepBlock, StepPaper)
	}
	if c.SharedDirections < NoDirections || c.SharedDirections > MaxBlockPicks {
		return fmt.Errorf("config: shared directions %d: want 0 (none) to %d", c.SharedDirections, MaxBlockPicks)
	}
	if c.SharedDirections == 0 {
		c.SharedDirections = gram.SharedDirections
	}
	if c.Step != StepBlock || c.Baseline() {
		// the block step's alone
		c.NoGroupSteps, c.SharedDirections, c.EveryHolderSolves = true, NoDirections, true
	}
	if c.Lambda == 0 {
		c.Lambda = DefaultLambda
	}
	if c.IIC == 0 {
		c.IIC = DefaultIIC
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if !(c.Lambda > 0) || math.IsInf(c.Lambda, 0) {
		return fmt.Errorf("config: lambda %v must be positive and finite", c.Lambda)
	}
	if c.Inner < 0 || (c.Inner == 0 && !(c.IIC > 0 && c.IIC <= 1e6)) {
		return fmt.Errorf("config: inner iterations %d must be at least 1, or IIC %v positive", c.Inner, c.IIC)
	}
	if c.Quorum == 0 {
		c.Quorum = 0.5
	}
	if !(c.Quorum > 0 && c.Quorum <= 1) {
		return fmt.Errorf("config: quorum %v must be in (0, 1]", c.Quorum)
	}
	if c.NumFeatures < 0 {
		return fmt.Errorf("config: feature count %d must not be negative", c.NumFeatures)
	}
	if err := c.validateSchema(); err != nil {
		return err
	}
	if math.IsNaN(c.BiasValue) || math.IsInf(c.BiasValue, 0) || math.Abs(c.BiasValue) > 100 || c.BiasFeature < 0 ||
		(c.NumFeatures > 0 && c.BiasFeature >= c.NumFeatures) || (c.BiasValue == 0 && c.BiasFeature != 0) {
		return fmt.Errorf("config: bias feature %d with value %v: want a feature index below the feature count and a finite value of at most 100 in magnitude (0: no bias)", c.BiasFeature, c.BiasValue)
	}
	if c.Search == "" {
		c.Search = SearchDual
	}
	if c.Search != SearchDual && c.Search != SearchPrimal {
		return fmt.Errorf("config: search %q: want %s or %s", c.Search, SearchDual, SearchPrimal)
	}
	if c.Gamma == 0 {
		c.Gamma = 1
	}
	if !(c.Gamma > 0 && c.Gamma <= 1) {
		return fmt.Errorf("config: gamma %v must be in (0, 1]", c.Gamma)
	}
	if c.Fraction == 0 {
		c.Fraction = 1
	}
	if !(c.Fraction > 0 && c.Fraction <= 1) {
		return fmt.Errorf("config: fraction %v must be in (0, 1]", c.Fraction)
	}
	if c.Rounds < 0 {
		return fmt.Errorf("config: rounds %d must not be negative", c.Rounds)
	}
	if c.Tol == 0 {
		c.Tol = DefaultTol
	}
	if c.Tol != NoTol && !(c.Tol > 0 && c.Tol < 1) {
		return fmt.Errorf("config: tol %v must be in (0, 1) (0: run every round)", float64(c.Tol))
	}
	if c.Clients < 1 {
		return fmt.Errorf("config: clients %d must be at least 1", c.Clients)
	}
	return c.validateKeys()
}

// validateSchema checks the schema and sets what follows from it: the
// feature count and the intercept as the bias feature.
func (c *Config) validateSchema() error {
	s := c.Schema
	if s == nil {
		return nil
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	n := s.NumColumns()
	if c.NumFeatures != 0 && c.NumFeatures != n {
		return fmt.Errorf("config: %d features, but the schema makes %d columns (leave the feature count out)", c.NumFeatures, n)
	}
	c.NumFeatures = n
	bias, value := 0, 0.0
	if s.HasIntercept() {
		bias, value = s.InterceptColumn(), schema.InterceptValue
	}
	if c.BiasValue != 0 && (c.BiasFeature != bias || c.BiasValue != value) {
		return fmt.Errorf("config: bias feature %d (value %v) with a schema: the schema's intercept is the bias (\"intercept\": true)", c.BiasFeature, c.BiasValue)
	}
	c.BiasFeature, c.BiasValue = bias, value
	if c.Keys == KeysThreshold {
		return errors.New("config: threshold keys with a schema: the column statistics have no key-switching layout yet; use the shared key")
	}
	return nil
}

// validateKeys checks the key mode and, for threshold keys, the committee
// and t (0: the defaults).
func (c *Config) validateKeys() error {
	if c.Pseudonyms == "" {
		c.Pseudonyms = PseudonymsKeyed
	}
	if c.Pseudonyms != PseudonymsKeyed && c.Pseudonyms != PseudonymsOPRF {
		return fmt.Errorf("config: pseudonyms %q: want %s or %s", c.Pseudonyms, PseudonymsKeyed, PseudonymsOPRF)
	}
	if c.Keys == "" {
		c.Keys = KeysShared
	}
	if c.Keys != KeysShared && c.Keys != KeysThreshold {
		return fmt.Errorf("config: keys %q: want %s or %s", c.Keys, KeysShared, KeysThreshold)
	}
	if c.KeyCommittee == 0 {
		c.KeyCommittee = DefaultKeyCommittee
	}
	if c.KeyThreshold == 0 {
		c.KeyThreshold = DefaultKeyThreshold
	}
	if c.KeyCommittee < 1 || c.KeyCommittee > threshold.MaxParties {
		return fmt.Errorf("config: key committee %d: want 1 to %d members", c.KeyCommittee, threshold.MaxParties)
	}
	if c.KeyThreshold < minThreshold(c.KeyCommittee) || c.KeyThreshold > c.KeyCommittee {
		return fmt.Errorf("config: key threshold %d: want %d <= t <= the key committee's %d (t = 1 lets one member open every sum)",
			c.KeyThreshold, minThreshold(c.KeyCommittee), c.KeyCommittee)
	}
	return nil
}
