package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/hyfed/hyfed/shared/protocol"
)

// configFlags registers the settings every command that configures a
// federation shares (experiment, create, bench) on fs, writing into cfg,
// with protocol.Defaults as their defaults: one name, one default and one
// help text each. The algorithm's own settings (--algo, --step-a, ...) are
// the commands' own.
func configFlags(fs *flag.FlagSet, cfg *protocol.Config) {
	d := protocol.Defaults()
	fs.StringVar(&cfg.Loss, "loss", d.Loss, "loss: hinge or logistic")
	cfg.Lambda = d.Lambda
	fs.Var(positive{&cfg.Lambda}, "lambda", "L2 regularization lambda (> 0)")
	fs.IntVar(&cfg.Rounds, "rounds", d.Rounds, "the most rounds to run")
	cfg.Tol = d.Tol
	fs.Var(tolFlag{&cfg.Tol}, "tol", "stop once the duality gap certifies the model within this relative distance of the optimal objective (0: run every round; the baselines have no dual and always do)")
	fs.Float64Var(&cfg.Fraction, "fraction", d.Fraction, "probability that a participant is active in a round (1: all that are connected)")
	fs.IntVar(&cfg.Inner, "inner", d.Inner, "H, the samples each sample group (block) or client (paper, baselines) updates a round; overrides --iic")
	fs.Float64Var(&cfg.IIC, "iic", d.IIC, "inner iterations constant: H = ceil(IIC * N / participants)")
	cfg.Step = d.Step
	fs.Var(stepFlag{&cfg.Step}, "step", "step rule: block (exact group solves from sealed Grams) or paper (the HyFDCA paper's Algorithm 5 as published, for comparison)")
	fs.StringVar(&cfg.Search, "search", d.Search, "step size along the round's direction: dual (the dual's maximiser) or primal (the smallest primal keeping half the dual gain)")
	fs.Func("estimate", "retired with the hyfed step rule (refused)", func(string) error {
		return fmt.Errorf("--estimate was the retired hyfed step rule's local estimate; the block step (the default) solves each group's subproblem exactly and needs none")
	})
	fs.Float64Var(&cfg.Gamma, "gamma", d.Gamma, "update scale of the paper step rule")
	fs.Var(onFlag{&cfg.NoGroupSteps}, "group-steps", "block step, two or more sample groups: the server weighs each group's direction and a second one solved against its picks' centered Gram, which moves dual mass between the groups (--group-steps=false: one line search for all, which stalls near 1e-2)")
	fs.Var(onFlag{&cfg.EveryHolderSolves}, "solve-once", "block step: one holder of each updating group solves the group's subproblem and the others take the direction it seals (--solve-once=false: every holder is sent the Gram and solves it)")
	cfg.SharedDirections = d.SharedDirections
	fs.Var(directionsFlag{&cfg.SharedDirections}, "shared-directions", "block step: each sample group's leading directions (its picks' Gram's; the bias, the mean row, ...) priced at the number of updating groups, the rest at the adaptive sigma' (0: all at sigma')")
	fs.Var(onFlag{&cfg.NoFindBias}, "find-bias", "without a declared bias (--bias-feature): take the last feature as the data's bias when every block that holds it holds one non-zero value there in every row, as a constant feature of pooled data")
	fs.BoolVar(&cfg.DealtEntries, "dealt-entries", d.DealtEntries, "the participants' blocks deal sparse samples' non-zero entries among the holders of a group (hyfed partition grid:K,Q on sparse data), so they share feature indexes; without it a feature of a sample held twice refuses both holders")
	fs.BoolVar(&cfg.SealPrimal, "seal-primal", d.SealPrimal, "seal the primal contributions too (hat_w_k and its changes per feature): the server sees only their sum")
	fs.StringVar(&cfg.Pseudonyms, "pseudonyms", d.Pseudonyms, "how record ids become the pseudonyms samples are aligned by: keyed (a keyed hash under the link secret, which every participant can compute) or oprf (a threshold OPRF the key committee evaluates: no participant, nor the server with fewer than t members, computes one)")
	fs.StringVar(&cfg.Keys, "keys", d.Keys, "who can open a sum: shared (every participant derives the one key from the link secret) or threshold (t-of-n keys: no participant, nor the server with fewer than t participants, opens another's values)")
	fs.IntVar(&cfg.KeyCommittee, "key-committee", d.KeyCommittee, "threshold keys: the most participants that hold shares of the collective key (n of t-of-n)")
	fs.IntVar(&cfg.KeyThreshold, "key-threshold", d.KeyThreshold, "threshold keys: t, the committee members needed to open a sum for a participant")
}

// onFlag is a boolean flag for a setting on by default (protocol.Off):
// --group-steps=false sets NoGroupSteps.
type onFlag struct{ off *protocol.Off }

func (f onFlag) String() string {
	if f.off == nil {
		return "true"
	}
	return strconv.FormatBool(!bool(*f.off))
}

func (f onFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*f.off = protocol.Off(!on)
	return nil
}

func (onFlag) IsBoolFlag() bool { return true }

// stepFlag is --step: a rule the protocol does not run, a retired one
// above all, is refused as the flag is read, with the configuration's
// message, not after the data have loaded.
type stepFlag struct{ step *string }

func (f stepFlag) String() string {
	if f.step == nil {
		return ""
	}
	return *f.step
}

func (f stepFlag) Set(s string) error {
	if err := checkStep(s); err != nil {
		return err
	}
	*f.step = s
	return nil
}

// checkStep refuses a step rule as protocol.Config.Validate does (it names
// what replaced a retired rule), on a configuration that is otherwise the
// defaults.
func checkStep(step string) error {
	c := protocol.Defaults()
	c.Step, c.Clients = step, 1
	return c.Validate()
}

// directionsFlag is --shared-directions: a count, 0 for none (the
// configuration's zero is its default).
type directionsFlag struct{ d *protocol.Directions }

func (f directionsFlag) String() string {
	if f.d == nil {
		return ""
	}
	return strconv.Itoa(f.d.Count())
}

func (f directionsFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%d: want 0 (none) or more", n)
	}
	*f.d = protocol.Directions(n)
	if n == 0 {
		*f.d = protocol.NoDirections
	}
	return nil
}

// tolFlag is --tol: a bound in (0, 1), 0 for none (the configuration's
// zero is its default).
type tolFlag struct{ t *protocol.Tolerance }

func (f tolFlag) String() string {
	if f.t == nil {
		return ""
	}
	return strconv.FormatFloat(f.t.Bound(), 'g', -1, 64)
}

func (f tolFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	if v != 0 && !(v > 0 && v < 1) {
		return fmt.Errorf("%v: want a relative bound in (0, 1), or 0 to run every round", v)
	}
	*f.t = protocol.Tolerance(v)
	if v == 0 {
		*f.t = protocol.NoTol
	}
	return nil
}

// positive is a float flag that refuses 0 and less: a 0 would read as
// "the default" in the configuration, which a user who typed it did not
// mean.
type positive struct{ v *float64 }

func (f positive) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

func (f positive) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%v: want a finite number > 0", v)
	}
	*f.v = v
	return nil
}
