// Package experiment runs a whole federation in one process over the
// in-memory transport: load data, partition it, find the centralized
// optimum, train, and report per-round metrics.
package experiment

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// Options configure one experiment; the flags of `hyfed experiment`.
type Options struct {
	Data      string  // built-in name or file
	Positive  string  // label rule, e.g. "0,1,2,3,4"
	Holdout   float64 // held-out fraction for data without a split
	Partition string  // quadrants:K, grid:K,Q, horizontal:K, vertical:Q

	// Config is the federation's configuration (Clients is set from the
	// partition, Seed from Seed below). Algo "" is hyfdca; a baseline runs
	// through the same coordinator, participants and memory transport,
	// and its Mu 0 means averaging.DefaultProxMu for hyfem-prox and
	// fedhybrid.DefaultMu for fedhybrid.
	protocol.Config
	// Seed seeds the participation draws and picks (Config.Seed) and the
	// experiment's federation secret.
	Seed int64
	// Plaintext runs without encryption (seal.Plaintext) for comparison;
	// the default seals with BGV.
	Plaintext bool

	PStar   float64 // centralized optimum; 0 means compute it
	Metrics string  // CSV file, one row per round ("" = none)

	// Progress receives a progress line now and then (nil = none).
	Progress io.Writer
	Log      *slog.Logger
	// Observe sees every protocol message (privacy tests).
	Observe func(toServer bool, client int, m *protocol.Message)
	// Script, if set, runs before every transport event with the memory
	// transport and the coordinator: scripted drops and returns.
	Script func(m *protocol.Memory, c *protocol.Coordinator)
}

// Summary is the JSON line `hyfed experiment` prints last.
type Summary struct {
	Data       string  `json:"data"`
	Partition  string  `json:"partition"`
	Clients    int     `json:"clients"`
	Step       string  `json:"step"`
	GroupSteps bool    `json:"group_steps,omitempty"`       // the block step's cross-group step
	Shared     int     `json:"shared_directions,omitempty"` // the block step's leading directions priced apart
	Scheme     string  `json:"scheme"`
	Keys       string  `json:"keys,omitempty"` // "threshold"; absent: the shared key
	SealPrimal bool    `json:"seal_primal,omitempty"`
	Loss       string  `json:"loss"`
	Lambda     float64 `json:"lambda"`
	Fraction   float64 `json:"fraction"`
	Inner      int     `json:"inner"`
	Rounds     int     `json:"rounds"` // run: at most the configuration's, fewer when the tolerance ends training
	// Tol is the configuration's tolerance (0: none); Bound the certified
	// relative distance of the handed-out model from the optimum
	// (protocol.Coordinator.Bound); Converged that the bound ended training.
	Tol           float64            `json:"tol"`
	Bound         Float              `json:"bound"`
	Converged     bool               `json:"converged"`
	Primal        float64            `json:"primal"`
	Dual          float64            `json:"dual"`
	Gap           float64            `json:"gap"`
	PStar         float64            `json:"pstar"`
	RelativeLoss  float64            `json:"relative_loss"`
	Accuracy      float64            `json:"accuracy"`
	TrainAccuracy float64            `json:"train_accuracy"`
	RoundsTo      map[string]int     `json:"rounds_to"` // first round with relative loss below 1e-1, 1e-2, 1e-3 (-1: never)
	Seconds       float64            `json:"seconds"`
	SecondsTo     map[string]float64 `json:"seconds_to"`
	BytesIn       int                `json:"bytes_to_server"`
	BytesOut      int                `json:"bytes_from_server"`
	DualDecreases int                `json:"dual_decreases"`
	CentralSecs   float64            `json:"central_seconds,omitempty"`

	// The model the federation hands out (protocol.Coordinator.Model):
	// the round with the lowest primal, its relative loss and the
	// held-out and training accuracy of that round's w. -1 and NaN
	// (null) without a round with a primal.
	BestRound         int   `json:"best_round"`
	BestPrimal        Float `json:"best_primal"`
	BestRelativeLoss  Float `json:"best_relative_loss"`
	BestAccuracy      Float `json:"best_accuracy"`
	BestTrainAccuracy Float `json:"best_train_accuracy"`
	// Swing is the last iterate's largest relative loss over the last
	// tenth of the rounds divided by the lowest relative loss seen up to
	// then (1: no jump; the handed-out model's is 1 by construction).
	Swing Float `json:"swing_last_tenth"`

	// Model is the handed-out iterate itself, w included (for --model);
	// its round and metrics are the best_* fields. Unset by sim.
	Model protocol.Iterate `json:"-"`

	rels []float64 // every round's relative loss, for Swing
}

// Float is a float64 that encodes NaN and infinities as JSON null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// Thresholds of relative loss reported in RoundsTo.
var Thresholds = []float64{1e-1, 1e-2, 1e-3}

// Prepared is data split for a federation.
type Prepared struct {
	Data   *dataset.Dataset
	Blocks []partition.Block
	Spec   partition.Spec
}

// LoadData loads a data set as the command-line flags name it, for
// training: features scaled when its rows are too long to seal
// (fitSealRange).
func LoadData(data, positive string, holdout float64) (*dataset.Dataset, error) {
	d, err := LoadRawData(data, positive, holdout)
	if err != nil {
		return nil, err
	}
	if err := fitSealRange(d); err != nil {
		return nil, err
	}
	return d, nil
}

// LoadRawData loads a data set as the command-line flags name it, its
// features as they are (for scoring and export).
func LoadRawData(data, positive string, holdout float64) (*dataset.Dataset, error) {
	dopt := dataset.Options{Holdout: holdout}
	if positive != "" {
		r, err := dataset.ParsePositive(positive)
		if err != nil {
			return nil, fmt.Errorf("--positive: %w", err)
		}
		dopt.Positive = r
	}
	return dataset.Load(data, dopt)
}

// fitSealRange scales the features of data whose rows are too long to
// seal: the block step seals partial squared norms and Gram entries, which
// must stay within seal.MaxAbs, so raw features in the thousands (a count,
// an amount of money) would stop the federation at its first round. Every
// feature is then divided by its largest magnitude (dataset.ScaleMaxAbs),
// which also gives the dual solvers the conditioning they need, and the
// model files map the weights back to the raw features. Data within the
// range is left as it is.
func fitSealRange(d *dataset.Dataset) error {
	n, i := d.MaxRowNormSq()
	if n <= seal.MaxAbs {
		return nil
	}
	d.ScaleMaxAbs()
	slog.Warn(fmt.Sprintf("data %s: %s has squared norm %.4g, beyond the ±%d that sealing carries: every feature is divided by its largest magnitude (to [-1, 1]); model files map the weights back to the raw features",
		d.Name, d.SampleName(i), n, seal.MaxAbs))
	if n, i := d.MaxRowNormSq(); n > seal.MaxAbs {
		return fmt.Errorf("data %s: %s has squared norm %.4g even with every feature scaled to [-1, 1], beyond the ±%d that sealing carries: normalize the rows (e.g. to unit length)",
			d.Name, d.SampleName(i), n, seal.MaxAbs)
	}
	return nil
}

// Prepare loads and partitions the data.
func Prepare(o Options) (*Prepared, error) {
	d, err := LoadData(o.Data, o.Positive, o.Holdout)
	if err != nil {
		return nil, err
	}
	spec, err := partition.Parse(o.Partition)
	if err != nil {
		return nil, fmt.Errorf("--partition: %w", err)
	}
	blocks, err := spec.Split(d)
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", o.Partition, err)
	}
	return &Prepared{Data: d, Blocks: blocks, Spec: spec}, nil
}

// Run runs the experiment.
func Run(ctx context.Context, o Options) (*Summary, error) {
	p, err := Prepare(o)
	if err != nil {
		return nil, err
	}
	return RunPrepared(ctx, p, o)
}

// RunPrepared runs the experiment on prepared data.
func RunPrepared(ctx context.Context, p *Prepared, o Options) (*Summary, error) {
	return RunPreparedWithHistory(ctx, p, o, nil)
}

// RunPreparedWithHistory is RunPrepared that also returns every round's
// metrics in *hist.
func RunPreparedWithHistory(ctx context.Context, p *Prepared, o Options, hist *[]protocol.RoundMetrics) (*Summary, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l, err := loss.Parse(o.Loss)
	if err != nil {
		return nil, fmt.Errorf("--loss: %w", err)
	}
	d := p.Data
	clients := len(p.Blocks)
	inner := o.Inner
	if inner <= 0 {
		if o.IIC <= 0 {
			return nil, fmt.Errorf("give --inner H or --iic X")
		}
		inner = protocol.InnerFor(o.IIC, d.NumTrain(), clients)
	}
	s := &Summary{Data: d.Name, Partition: o.Partition, Clients: clients, Loss: l.Name(), Lambda: o.Lambda,
		Inner: inner, PStar: o.PStar}
	if s.PStar == 0 {
		progress(o.Progress, "central: solving for P* on %d samples x %d features\n", d.NumTrain(), d.M())
		r, err := central.Solve(ctx, d, central.Config{Lambda: o.Lambda, Loss: l, Tol: 1e-9, Seed: uint64(o.Seed)})
		if err != nil {
			return nil, err
		}
		s.PStar, s.CentralSecs = r.Primal, r.Seconds
		progress(o.Progress, "central: P* = %.9g (relative gap %.2g, %d epochs, %.1fs)\n", r.Primal, r.RelativeGap, r.Epochs, r.Seconds)
	}
	cfg := o.Config
	cfg.Loss, cfg.Inner, cfg.Seed, cfg.Clients = l.Name(), inner, uint64(o.Seed), clients
	cfg.DealtEntries = cfg.DealtEntries || p.Spec.Dealt(d)
	if cfg.Mu == 0 {
		switch cfg.Algo {
		case averaging.HyFEMProx:
			cfg.Mu = averaging.DefaultProxMu
		case fedhybrid.Name:
			if cfg.Mu, err = fedhybrid.DefaultMu(p.Blocks, o.Lambda, d.NumTrain()); err != nil {
				return nil, err
			}
		}
	}
	if f, v, ok := p.Data.ConstantFeature(); ok {
		cfg.BiasFeature, cfg.BiasValue = f, v
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s.Step, s.Fraction, s.Rounds, s.Tol = cfg.Step, cfg.Fraction, cfg.Rounds, cfg.Tol.Bound()
	s.GroupSteps = cfg.GroupSteps() && cfg.Step == protocol.StepBlock && !cfg.Baseline()
	s.Shared = cfg.SharedDirections.Count()
	if cfg.Baseline() {
		s.Step = "" // the baselines have no step rule
		if !cfg.Averaging() {
			s.Inner = 0 // nor does fedhybrid take local steps
		}
	}
	scheme, err := SchemeFor(o.Plaintext, cfg.Keys)
	if err != nil {
		return nil, err
	}
	if cfg.Keys == protocol.KeysThreshold {
		s.Keys = cfg.Keys
	}
	s.Scheme, s.SealPrimal = scheme.Name(), o.SealPrimal
	coord, err := protocol.NewCoordinator(cfg, scheme)
	if err != nil {
		return nil, err
	}
	sec := secret.FromSeed(o.Seed)
	mem, err := protocol.NewMemory(clients, func(k int) (*protocol.Participant, error) {
		// Every participant derives its own key object from the secret:
		// keys are not safe for concurrent use. With threshold keys the
		// key setup gives each its key.
		var key seal.Key
		if cfg.Keys != protocol.KeysThreshold {
			if key, err = seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose)); err != nil {
				return nil, err
			}
		}
		pt, err := protocol.NewParticipant(&p.Blocks[k], sec, key)
		if err == nil && cfg.OPRF() {
			pt.AlignByOPRF()
		}
		return pt, err
	})
	if err != nil {
		return nil, err
	}
	mem.Observe = o.Observe

	var w *csv.Writer
	if o.Metrics != "" {
		f, err := os.Create(o.Metrics)
		if err != nil {
			return nil, fmt.Errorf("--metrics: %w", err)
		}
		defer f.Close()
		w = csv.NewWriter(f)
		if err := w.Write(csvHeader()); err != nil {
			return nil, fmt.Errorf("--metrics %s: %w", o.Metrics, err)
		}
	}
	start := time.Now()
	written := 0
	elapsed := 0.0
	lastProgress := time.Time{}
	var werr error
	flushRows := func() {
		h := coord.History()
		for ; written < len(h); written++ {
			r := h[written]
			elapsed = time.Since(start).Seconds()
			rel := s.AddRound(h[:written], r, elapsed)
			if w != nil && werr == nil {
				werr = w.Write(csvRow(r, rel, elapsed))
			}
			if o.Progress != nil && (time.Since(lastProgress) > 2*time.Second || r.Round == cfg.Rounds) {
				lastProgress = time.Now()
				progress(o.Progress, "round %d/%d  P=%.6g  rel=%.3g  gap=%.3g  acc=%.4f  %.1fs\n",
					r.Round, cfg.Rounds, r.Primal, rel, r.Gap, r.HeldAcc, elapsed)
			}
		}
	}
	mem.Hook = func() {
		flushRows()
		if o.Script != nil {
			o.Script(mem, coord)
		}
	}
	if err := protocol.Serve(ctx, coord, mem, log); err != nil {
		return nil, err
	}
	flushRows()
	if w != nil {
		w.Flush()
		if werr == nil {
			werr = w.Error()
		}
		if werr != nil {
			return nil, fmt.Errorf("--metrics %s: %w", o.Metrics, werr)
		}
	}
	h := coord.History()
	if hist != nil {
		*hist = h
	}
	s.Finish(h[len(h)-1], time.Since(start).Seconds())
	s.Model = coord.Model()
	s.Rounds, s.Bound, s.Converged = h[len(h)-1].Round, Float(coord.Bound()), coord.Converged()
	return s, nil
}

// SchemeFor returns the sealing scheme of an experiment: plaintext (which
// seals nothing, so it has no key to split: threshold keys are refused with
// it), the threshold BGV scheme for threshold keys, BGV otherwise.
func SchemeFor(plaintext bool, keys string) (seal.Scheme, error) {
	switch {
	case plaintext && keys == protocol.KeysThreshold:
		return nil, fmt.Errorf("--plaintext seals nothing, so --keys %s has no key to split: use one or the other", keys)
	case plaintext:
		return seal.Plaintext{}, nil
	case keys == protocol.KeysThreshold:
		return seal.ThresholdScheme()
	}
	return seal.ByName("bgv")
}

// AddRound adds round r (after the rounds in prev) to the summary's
// thresholds, dual decreases and bytes, elapsed seconds into the run, and
// returns r's relative loss.
func (s *Summary) AddRound(prev []protocol.RoundMetrics, r protocol.RoundMetrics, elapsed float64) float64 {
	if s.RoundsTo == nil {
		s.BestRound = -1
		s.RoundsTo = map[string]int{}
		s.SecondsTo = map[string]float64{}
		for _, th := range Thresholds {
			s.RoundsTo[thKey(th)] = -1
			s.SecondsTo[thKey(th)] = -1
		}
	}
	rel := (r.Primal - s.PStar) / s.PStar
	s.rels = append(s.rels, rel)
	if !r.Partial && !math.IsNaN(r.Primal) && (s.BestRound < 0 || r.Primal < float64(s.BestPrimal)) {
		// The coordinator's rule (Coordinator.Model): first lowest wins.
		s.BestRound, s.BestPrimal, s.BestRelativeLoss = r.Round, Float(r.Primal), Float(rel)
		s.BestAccuracy, s.BestTrainAccuracy = Float(r.HeldAcc), Float(r.TrainAcc)
	}
	for _, th := range Thresholds {
		if s.RoundsTo[thKey(th)] < 0 && rel < th {
			s.RoundsTo[thKey(th)] = r.Round
			s.SecondsTo[thKey(th)] = elapsed
		}
	}
	if n := len(prev); n > 0 && r.Dual < prev[n-1].Dual-1e-12*math.Abs(prev[n-1].Dual) {
		s.DualDecreases++
	}
	s.BytesIn += r.BytesIn
	s.BytesOut += r.BytesOut
	return rel
}

// Finish records the last round's results and the run's seconds.
func (s *Summary) Finish(last protocol.RoundMetrics, seconds float64) {
	s.Primal, s.Dual, s.Gap = last.Primal, last.Dual, last.Gap
	s.RelativeLoss = (last.Primal - s.PStar) / s.PStar
	s.Accuracy, s.TrainAccuracy = last.HeldAcc, last.TrainAcc
	s.Seconds = seconds
	if s.BestRound < 0 {
		nan := Float(math.NaN())
		s.BestPrimal, s.BestRelativeLoss, s.BestAccuracy, s.BestTrainAccuracy = nan, nan, nan, nan
	}
	s.Swing = Float(Swing(s.rels))
}

// Swing returns the largest ratio, over the last tenth of the rounds (at
// least one), of a round's relative loss to the lowest relative loss of
// the rounds up to it: how much worse than the best seen the last iterate
// gets near the end. Rounds without a primal (NaN) are skipped; NaN if
// there is none, or if the best is not above 0 (P* no better than a
// federated primal: the ratio says nothing).
func Swing(rels []float64) float64 {
	from := len(rels) - max(1, len(rels)/10)
	best, worst := math.Inf(1), math.NaN()
	for i, r := range rels {
		if math.IsNaN(r) {
			continue
		}
		best = math.Min(best, r)
		if best <= 0 {
			return math.NaN()
		}
		if i >= from {
			if q := r / best; math.IsNaN(worst) || q > worst {
				worst = q
			}
		}
	}
	return worst
}

func thKey(th float64) string { return strconv.FormatFloat(th, 'g', -1, 64) }

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

func csvHeader() []string {
	h := []string{"round", "primal", "dual", "gap", "relative_loss", "train_accuracy", "heldout_accuracy", "gamma", "active", "groups_updated", "partial", "seconds"}
	for _, p := range protocol.Phases {
		h = append(h, "seconds_"+p)
	}
	return append(h, "bytes_to_server", "bytes_from_server")
}

func csvRow(r protocol.RoundMetrics, rel, elapsed float64) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	row := []string{strconv.Itoa(r.Round), f(r.Primal), f(r.Dual), f(r.Gap), f(rel), f(r.TrainAcc), f(r.HeldAcc),
		f(r.Gamma), strconv.Itoa(r.Active), strconv.Itoa(r.Updated), strconv.FormatBool(r.Partial), f(elapsed)}
	for _, p := range protocol.Phases {
		row = append(row, f(r.Seconds[p]))
	}
	return append(row, strconv.Itoa(r.BytesIn), strconv.Itoa(r.BytesOut))
}
