package protocol

import (
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
// command-line flags (RegisterFlags) and the create request's JSON to the
// Setup message, the checkpoints and the status views. Defaults gives the
// defaults; Validate fills the settings that depend on others and refuses
// anything else out of range, naming the field.
type Config struct {
	Lambda float64 `json:"lambda"`
	Loss   string  `json:"loss"` // hinge or logistic
	Step   string  `json:"step"` // block (default) or paper
	// Inner is H, the number of samples each client (paper) or each sample
	// group (block, hyfed; block caps it at MaxBlockPicks) updates per round. Zero: computed from IIC when the
	// federation starts, H = ceil(IIC * N / clients).
	Inner int `json:"inner"`
	// IIC is the inner iterations constant (used when Inner is zero).
	IIC float64 `json:"iic"`
	// Gamma scales the paper rule's updates (ignored by hyfed, which finds
	// its step by line search).
	Gamma float64 `json:"gamma,omitempty"`
	// Fraction is the probability that a connected client is active in a
	// round; 1 means all.
	Fraction float64 `json:"fraction"`
	Rounds   int     `json:"rounds"`
	// Search picks the step's size along the round's direction (block):
	// "dual" (the dual's maximiser; the default) or "primal" (the smallest
	// primal among steps that gain at least half as much dual as the
	// maximiser).
	Search string `json:"search"`
	// Seed drives the server's participation draws.
	Seed uint64 `json:"seed,omitempty"`
	// Clients is the number of participants the federation waits for
	// before it starts.
	Clients int `json:"min_participants"`
	// NumFeatures, if set, is the feature count every block must declare
	// (the federation's feature schema).
	NumFeatures int `json:"num_features"`
	// BiasFeature and BiasValue name a feature every sample holds with the
	// same non-zero value (the data's bias; BiasValue 0: none). The block
	// rule leaves it out of the partial Grams and enters its part of every
	// inner product, BiasValue^2, exactly: where holders share features
	// (kappa > 1) the bound then covers only the rest.
	BiasFeature int     `json:"bias_feature,omitempty"`
	BiasValue   float64 `json:"bias_value,omitempty"`
	// FindBias (on by default) takes the bias from the participants'
	// blocks when none is declared: when every sample has exactly one
	// holder of the last feature and every such block holds one non-zero
	// value there in every row (what Dataset.ConstantFeature finds in
	// pooled data), that feature is the bias.
	FindBias bool `json:"find_bias"`
	// Quorum is the share of the federation's participants that must be
	// connected for a round to start (0 means 0.5): with fewer, the
	// federation waits at the round boundary instead of spending rounds
	// on nobody.
	Quorum float64 `json:"quorum,omitempty"`
	// SealPrimal seals the primal side too (the HyFDCA paper leaves it in
	// plaintext): participants seal their contributions to w and to the
	// round's direction per feature, the server adds the ciphertexts and
	// one participant opens only the aggregate (KindOpen). No single
	// participant's hat_w_k or its change then reaches the server.
	SealPrimal bool `json:"seal_primal,omitempty"`
	// GroupSteps (block step; on by default) lets the server weigh every
	// updating sample group's direction on its own: each group's holders
	// also solve the subproblem against the Gram of the picks less their
	// mean row (no curvature along moving all picks alike, the bias's part
	// gone), and the server maximises the dual over each group's weights on
	// its two directions, pricing what the groups share (the bias, the mean
	// rows) exactly (groupstep.go; issue 14: without them the block step
	// stalls near 1e-2 with two or more sample groups). It applies when
	// every holder of an updating group holds no other updating group and
	// the primal is not sealed; otherwise the round takes the block step's
	// one line search. Validate turns it off for other steps and for the
	// baselines. The JSON field is always written: a checkpoint made
	// before it existed has none and reads as false, so a restored
	// federation keeps the rule it ran.
	GroupSteps bool `json:"group_steps"`
	// SharedDirections (block step; gram.SharedDirections by default) is
	// the number r of each group's leading directions (its picks' Gram's
	// leading eigenvectors: the bias, the mean row, the next principal
	// directions) that the group's subproblem prices at the number of
	// updating groups, every group moving them alike, while the rest takes
	// the adaptive sigma' (package gram). 0 prices everything at sigma'.
	// Validate sets it to 0 for other steps and for the baselines. Always
	// written, like GroupSteps: a checkpoint made before it existed reads
	// as 0 and keeps the rule it ran.
	SharedDirections int `json:"shared_directions"`
	// SolveOnce (block step; on by default): only one holder of each
	// updating group, its reporter, is sent the group's summed Gram and
	// solves the group's subproblem; it seals the direction it found (and
	// the centered one) and the server hands them to every holder of the
	// group, which takes its share of dw from them. Without it every
	// holder is sent the Gram and solves the same subproblem on the same
	// numbers: no extra trip, but a holder's Gram bytes and solve time
	// (most of a participant's work at 500 and 5,000 participants) paid
	// once per holder. The directions travel sealed, so every holder
	// takes them quantized (seal.Quantize). Always written, like
	// GroupSteps: a checkpoint made before it existed reads as false.
	SolveOnce bool `json:"solve_once"`

	// Algo is the algorithm: hyfdca (the default) or one of the averaging
	// baselines (package averaging: fedavg, hyfem-avg, hyfem-prox), which
	// run through the same coordinator, participants, transport and
	// sealing: every active participant takes Inner local SGD steps from
	// the global model on its features with step StepA/(StepB+sqrt(t)),
	// seals its weights per feature, the server adds the ciphertexts, a
	// participant opens the sum, and the server divides by the public
	// number of active holders of each feature. The dual-related settings
	// (Step, Search, Gamma, SealPrimal) do not apply.
	//
	// fedhybrid (the FedHybrid paper, horizontal partitions, logistic loss) runs
	// the same way: each active participant takes a gradient- or
	// Newton-type step (Mode) on its local copy and dual from the
	// consensus w, seals mu x_i - lambda_i, and w becomes the opened sum
	// over all participants (an inactive one's last vector counts again)
	// divided by mu times their number. StepA and StepB are then its a_i
	// and b_i (0: the defaults of fedhybrid.NewNode).
	Algo  string  `json:"algo"`
	StepA float64 `json:"step_a,omitempty"`
	StepB float64 `json:"step_b,omitempty"`
	Mu    float64 `json:"mu,omitempty"`   // HyFEM-Prox's proximal weight, FedHybrid's penalty
	Mode  string  `json:"mode,omitempty"` // FedHybrid: newton (default), gradient or mixed

	// Keys says who can open a sum (docs/encryption.md): "shared" (every
	// participant derives the one BGV key from the link secret; the
	// default) or "threshold" (t-of-n threshold keys, issue 19: values are
	// sealed under a collective key, and every sum the server hands a
	// participant is first switched to that participant's own key by t
	// members of the key committee, so neither one participant nor the
	// server with fewer than t of them opens another's values).
	Keys string `json:"keys,omitempty"`
	// KeyCommittee is the most participants that hold shares of the
	// collective key (the n of t-of-n; the federation's first
	// participants by index, at most as many as take part), KeyThreshold
	// is t (at most the committee's size). Threshold keys only.
	KeyCommittee int `json:"key_committee,omitempty"`
	KeyThreshold int `json:"key_threshold,omitempty"`

	// Schema, when set, is the federation's schema: participants join
	// with their own files, read against it; the feature count and the
	// intercept (the bias) follow from it, and before the first round the
	// federation scales every column and resolves the labels
	// (docs/own-data.md).
	Schema *schema.Schema `json:"schema,omitempty"`
}

// synced reports whether the step rule picks the same samples at every
// holder of a group and moves the dual values by a server-chosen step
// (block, hyfed), rather than each client on its own (paper).
func (c *Config) synced() bool { return c.Step != StepPaper }

// The defaults a user gets for the settings that have one (Defaults).
const (
	DefaultLambda = 1e-3
	DefaultIIC    = 0.2
	DefaultRounds = 100
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
		Fraction: 1, Rounds: DefaultRounds, Gamma: 1, GroupSteps: true, SharedDirections: gram.SharedDirections, SolveOnce: true, FindBias: true,
		Keys: KeysShared, KeyCommittee: DefaultKeyCommittee, KeyThreshold: DefaultKeyThreshold}
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
		return fmt.Errorf("config: step %q was retired: the block step (%s, the default) replaced it; docs/results/step-study.md keeps its measurements", c.Step, StepBlock)
	}
	if c.Step != StepBlock && c.Step != StepPaper {
		return fmt.Errorf("config: step %q: want %s or %s", c.Step, StepBlock, StepPaper)
	}
	if c.Step != StepBlock || c.Baseline() {
		// the block step's alone (on by default)
		c.GroupSteps, c.SharedDirections, c.SolveOnce = false, 0, false
	}
	if c.SharedDirections < 0 || c.SharedDirections > MaxBlockPicks {
		return fmt.Errorf("config: shared directions %d: want 0 (none) to %d", c.SharedDirections, MaxBlockPicks)
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
