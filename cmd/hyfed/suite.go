package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
)

// hyfed suite: the convergence suite, which holds the default step to fixed
// convergence targets on data sets it was not tuned on. A fixed grid of
// `hyfed experiment` runs (each row is that command with the flags shown,
// every other setting its default, so the suite measures the defaults a
// user gets), P* and plain SDCA's passes from shared/central once per
// (data, lambda, loss), and a Markdown report with one section per data set.

// The suite's fixed grid.
var (
	suiteDataSets       = []string{"fashion-mnist", "mnist", "breast-cancer", "digits", suiteSparse}
	suitePartitions     = []string{"grid:2,4", "grid:4,2", "horizontal:4", "vertical:4"}
	suiteImagePartition = "quadrants:2" // added for image data
	suiteFractions      = []float64{1, 0.5}
	suiteLambdas        = []float64{1e-3, 1e-4}
	suiteLosses         = []string{"hinge"}
	// suiteBothLosses is the set that also runs with the logistic loss: real
	// data of moderate size, so that the extra rows cost minutes.
	suiteBothLosses = "digits"
	// suiteCheckpoints are the rounds at which rows report the relative loss.
	suiteCheckpoints = []int{100, 300, 1000}
)

// suiteSparse names the synthetic sparse set in --data; --sparse says which.
const suiteSparse = "sparse"

// defaultSparse is the text-like sparse set of the suite and of hyfed
// compare: 20,000 samples x 2,000 features, 10 non-zeros per row.
const defaultSparse = "synthetic:20000,2000,0.005,0.05,7"

// suiteTarget is one of the convergence targets the default step is held
// to: a relative loss below Below within Rounds rounds.
type suiteTarget struct {
	Below  float64
	Rounds int
}

var (
	suiteTargets = []suiteTarget{{1e-2, 300}, {1e-3, 1000}}
	// suiteHardPasses: where central SDCA needs more passes than this for
	// the last target, the targets become the rounds that give the
	// federation the same number of sample updates as central SDCA needed.
	suiteHardPasses = 100.0
)

// The quick subset: minutes, the smallest sets, one fraction and lambda,
// every kind of partition once, both losses, and a small sparse set.
var (
	suiteQuickData       = []string{"breast-cancer", "digits", suiteSparse}
	suiteQuickSparse     = "synthetic:3000,1000,0.01,0.05,7"
	suiteQuickPartitions = map[string][]string{"breast-cancer": {"vertical:4"}, "digits": {"quadrants:2"}, suiteSparse: {"grid:2,4"}}
)

// suiteSetting is one cell of the grid; every step rule runs on it.
type suiteSetting struct {
	Data      string // as given to --data of hyfed experiment
	Partition string
	Fraction  float64
	Lambda    float64
	Loss      string
}

// suiteData is what the suite knows of a data set after its first load.
type suiteData struct {
	Name, Spec       string
	N, Train, M, NNZ int
	Sparse, Image    bool
}

// suiteCentral is the central yardstick of one (data, lambda, loss).
type suiteCentral struct {
	PStar   float64
	Gap     float64   // the central solver's relative duality gap at P* (1e-9 unless it ran out of epochs)
	Passes  []float64 // to each of experiment.Thresholds (-1: not within the cap)
	Cap     int       // the cap on passes
	Seconds float64
}

// suiteRow is one run: a setting under one step rule.
type suiteRow struct {
	Setting suiteSetting
	Step    string
	Rounds  int
	// Rel[r] is the relative loss after round r (index 0: round 1).
	Rel             []float64
	RoundsTo        []int   // first round below each of experiment.Thresholds (-1: never)
	LastMaxMin      float64 // the primal's max/min over the last tenth of rounds
	SecondsPerRound float64
	BytesPerRound   float64
	PassesPerRound  float64 // samples updated per round / training samples
	Err             string
}

type suiteOptions struct {
	data, steps     []string
	sparse          string
	rounds          int
	quick, bgv      bool
	checkTargets    bool
	centralPasses   int
	seed            int64
	extra           []string
	out             string
	commandLine     string
	partitionsBySet map[string][]string
}

func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("suite", stderr)
	dataList := fs.String("data", strings.Join(suiteDataSets, ","), "comma-separated data sets of the grid: some of the default ("+suiteSparse+" is --sparse) or LIBSVM/CSV files, which get the same grid")
	sparse := fs.String("sparse", defaultSparse, "the synthetic sparse set (synthetic:N,M,density,noise,seed)")
	steps := fs.String("steps", protocol.StepBlock, "comma-separated step rules (--step of hyfed experiment), side by side in the table; --check-targets checks the first")
	rounds := fs.Int("rounds", suiteCheckpoints[len(suiteCheckpoints)-1], "rounds of every run")
	quick := fs.Bool("quick", false, "a small subset (breast-cancer vertical:4, digits quadrants:2 with both losses, a small sparse set grid:2,4; fraction 0.5, lambda 1e-3): a minute or two")
	bgv := fs.Bool("bgv", false, "encrypt (BGV); the default seals in plaintext, which computes the same numbers faster (bytes then count 8 per value)")
	check := fs.Bool("check-targets", false, "fail if a row of the first step rule misses the convergence targets (relative loss below 1e-2 within 300 rounds and below 1e-3 within 1,000, or within as many sample updates as central SDCA needs where it needs more than 100 passes) or fails (rows whose targets lie beyond the run do not count)")
	cpasses := fs.Int("central-passes", 1000, "cap on the passes of central SDCA when measuring its passes to the targets")
	seed := fs.Int64("seed", 1, "seed of every run (--seed of hyfed experiment) and of central SDCA's order")
	extra := fs.String("extra", "", "more flags for every hyfed experiment run, space-separated (recorded in the report; the suite measures defaults without)")
	out := fs.String("out", "convergence.md", "the report; sections of data sets not run, and notes between <!-- notes --> and <!-- /notes --> lines, are kept from an existing file")
	if err := parse(fs, args); err != nil {
		return err
	}
	o := suiteOptions{sparse: *sparse, rounds: *rounds, quick: *quick, bgv: *bgv, checkTargets: *check, centralPasses: *cpasses,
		seed: *seed, extra: strings.Fields(*extra), out: *out}
	o.commandLine = strings.TrimSpace("hyfed suite " + strings.Join(args, " "))
	for _, s := range strings.Split(*steps, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.steps = append(o.steps, s)
		}
	}
	if len(o.steps) == 0 {
		return errors.New("--steps: no step rule given")
	}
	for _, st := range o.steps {
		// Fail now, not after the central solves: the protocol knows the rules.
		if err := checkStep(st); err != nil {
			return fmt.Errorf("--steps %s: %w", st, err)
		}
	}
	if o.rounds < 1 || o.centralPasses < 1 {
		return errors.New("--rounds and --central-passes must be at least 1")
	}
	given := strings.Split(*dataList, ",")
	if o.quick {
		o.partitionsBySet = suiteQuickPartitions
		if !flagSet(fs, "data") {
			given = suiteQuickData
		}
		if !flagSet(fs, "sparse") {
			o.sparse = suiteQuickSparse
		}
	}
	for _, d := range given {
		d = strings.TrimSpace(d)
		if !slices.Contains(suiteDataSets, d) {
			// A file of one's own (LIBSVM or CSV): the same grid,
			// measured against central SDCA on it.
			if st, err := os.Stat(d); err != nil || st.IsDir() {
				return fmt.Errorf("--data %q: want some of %s, or a LIBSVM/CSV file", d, strings.Join(suiteDataSets, ","))
			}
		}
		o.data = append(o.data, d)
	}
	rep, err := suiteRun(ctx, o, stderr)
	if rep == nil {
		return err
	}
	if werr := suiteWrite(o.out, rep); werr != nil {
		return werr
	}
	if err != nil {
		fmt.Fprintf(stderr, "suite: interrupted; wrote the %d runs done to %s\n", len(rep.rows), o.out)
		return err
	}
	fmt.Fprint(stdout, rep.markdown())
	fmt.Fprintf(stderr, "suite: wrote %s\n", o.out)
	if o.checkTargets {
		if missed := rep.missedTargets(o.steps[0]); len(missed) > 0 {
			return fmt.Errorf("step %s misses the targets in %d rows:\n  %s", o.steps[0], len(missed), strings.Join(missed, "\n  "))
		}
	}
	return nil
}

// suiteReport holds the results of a run of the suite.
type suiteReport struct {
	opt      suiteOptions
	data     []*suiteData
	central  map[string]*suiteCentral // by centralKey
	rows     []*suiteRow
	seconds  map[string]float64 // wall time per data set (central and runs)
	commit   string             // what the binary was built from, read at the start
	started  time.Time
	finished time.Time
	// interrupted: the run was stopped (SIGINT) before the grid's end.
	interrupted bool
}

func centralKey(data string, lambda float64, lossName string) string {
	return fmt.Sprintf("%s|%g|%s", data, lambda, lossName)
}

// settings lists the grid of one data set.
func (o suiteOptions) settings(d *suiteData) []suiteSetting {
	parts := suitePartitions
	if d.Image {
		parts = append([]string{suiteImagePartition}, parts...)
	}
	fractions, lambdas := suiteFractions, suiteLambdas
	if o.quick {
		fractions, lambdas = []float64{0.5}, lambdas[:1]
		if q := o.partitionsBySet[d.Name]; q != nil {
			parts = q
		} else {
			parts = parts[:1]
		}
	}
	losses := suiteLosses
	if d.Name == suiteBothLosses {
		losses = []string{"hinge", "logistic"}
	}
	var out []suiteSetting
	for _, l := range losses {
		for _, lambda := range lambdas {
			for _, p := range parts {
				for _, f := range fractions {
					out = append(out, suiteSetting{Data: d.Spec, Partition: p, Fraction: f, Lambda: lambda, Loss: l})
				}
			}
		}
	}
	return out
}

// suiteRun measures the central yardsticks of every data set first (so that
// the time left can be estimated from the data sizes), then runs the grid.
func suiteRun(ctx context.Context, o suiteOptions, stderr io.Writer) (*suiteReport, error) {
	rep := &suiteReport{opt: o, central: map[string]*suiteCentral{}, seconds: map[string]float64{}, commit: suiteCommit(), started: time.Now()}
	for _, name := range o.data {
		spec := name
		if name == suiteSparse {
			spec = o.sparse
		}
		t0 := time.Now()
		fmt.Fprintf(stderr, "suite: loading %s\n", spec)
		d, err := experiment.LoadData(spec, "", 0)
		if err != nil {
			return nil, err
		}
		sd := &suiteData{Name: name, Spec: spec, N: d.N(), Train: d.NumTrain(), M: d.M(), NNZ: d.X.NNZ(), Sparse: d.X.IsSparse(), Image: d.Image != nil}
		rep.data = append(rep.data, sd)
		losses := suiteLosses
		if name == suiteBothLosses {
			losses = []string{"hinge", "logistic"}
		}
		lambdas := suiteLambdas
		if o.quick {
			lambdas = lambdas[:1]
		}
		for _, l := range losses {
			lf, err := loss.Parse(l)
			if err != nil {
				return nil, err
			}
			for _, lambda := range lambdas {
				c0 := time.Now()
				cfg := central.Config{Lambda: lambda, Loss: lf, Tol: 1e-9, Seed: uint64(o.seed)}
				r, err := central.Solve(ctx, d, cfg)
				if err != nil {
					return nil, fmt.Errorf("central %s lambda %g %s: %w", name, lambda, l, err)
				}
				passes, err := central.Passes(ctx, d, cfg, r.Primal, experiment.Thresholds, o.centralPasses)
				if err != nil {
					return nil, fmt.Errorf("central passes %s lambda %g %s: %w", name, lambda, l, err)
				}
				c := &suiteCentral{PStar: r.Primal, Gap: r.RelativeGap, Passes: passes, Cap: o.centralPasses, Seconds: time.Since(c0).Seconds()}
				rep.central[centralKey(spec, lambda, l)] = c
				fmt.Fprintf(stderr, "suite: %s lambda %g %s: P* = %.12g (relative gap %.2g), central SDCA passes to %s: %s (%.1fs)\n",
					name, lambda, l, r.Primal, r.RelativeGap, thresholdList(), passList(passes), c.Seconds)
			}
		}
		rep.seconds[name] += time.Since(t0).Seconds()
	}
	// Work units for the estimate: a round costs about the stored entries
	// of the training data.
	type job struct {
		d *suiteData
		s suiteSetting
	}
	var jobs []job
	total := 0.0
	for _, d := range rep.data {
		for _, s := range o.settings(d) {
			jobs = append(jobs, job{d, s})
			total += float64(d.NNZ) * float64(len(o.steps))
		}
	}
	fmt.Fprintf(stderr, "suite: %d settings x %d step rules, %d rounds each\n", len(jobs), len(o.steps), o.rounds)
	runStart := time.Now()
	done, doneUnits := 0, 0.0
	for _, j := range jobs {
		c := rep.central[centralKey(j.s.Data, j.s.Lambda, j.s.Loss)]
		for _, step := range o.steps {
			t0 := time.Now()
			row := suiteRunOne(ctx, o, j.d, j.s, step, c.PStar)
			if ctx.Err() != nil {
				// Interrupted: the report keeps the rows done, so that a
				// long grid stopped early still shows what it measured.
				rep.interrupted = true
				rep.finished = time.Now()
				return rep, ctx.Err()
			}
			rep.rows = append(rep.rows, row)
			rep.seconds[j.d.Name] += time.Since(t0).Seconds()
			done++
			doneUnits += float64(j.d.NNZ)
			el := time.Since(runStart)
			left := time.Duration(float64(el) / doneUnits * (total - doneUnits)).Round(time.Second)
			status := fmt.Sprintf("relative loss %s after %d rounds, %.1fs", fmtRel(row.relAt(o.rounds)), o.rounds, time.Since(t0).Seconds())
			if row.Err != "" {
				status = "failed: " + row.Err
			}
			fmt.Fprintf(stderr, "[%d/%d] %s %s: %s  (%s elapsed, about %s left)\n", done, len(jobs)*len(o.steps), j.s.label(j.d.Name), step, status,
				el.Round(time.Second), left)
		}
	}
	rep.finished = time.Now()
	return rep, nil
}

func (s suiteSetting) label(name string) string {
	return fmt.Sprintf("%s %s f=%g lambda=%g %s", name, s.Partition, s.Fraction, s.Lambda, s.Loss)
}

// experimentArgs is the hyfed experiment command line of a row.
// experimentArgs: every run goes all its rounds (--tol 0), since the suite
// measures the rounds to each threshold.
func (o suiteOptions) experimentArgs(s suiteSetting, step string) []string {
	args := []string{"--data", s.Data, "--partition", s.Partition, "--fraction", fmtNum(s.Fraction), "--lambda", fmtNum(s.Lambda),
		"--loss", s.Loss, "--step", step, "--rounds", strconv.Itoa(o.rounds), "--tol", "0", "--seed", strconv.FormatInt(o.seed, 10)}
	return append(args, o.commonArgs()...)
}

// commonArgs are the flags every run gets beyond its setting.
func (o suiteOptions) commonArgs() []string {
	var args []string
	if !o.bgv {
		args = append(args, "--plaintext")
	}
	return append(args, o.extra...)
}

// suiteRunOne runs hyfed experiment for one row, reading its JSON summary
// and its per-round CSV.
func suiteRunOne(ctx context.Context, o suiteOptions, d *suiteData, s suiteSetting, step string, pstar float64) *suiteRow {
	row := &suiteRow{Setting: s, Step: step, Rounds: o.rounds}
	dir, err := os.MkdirTemp("", "hyfed-suite-")
	if err != nil {
		row.Err = err.Error()
		return row
	}
	defer os.RemoveAll(dir)
	metrics := filepath.Join(dir, "rounds.csv")
	args := append(o.experimentArgs(s, step), "--pstar", strconv.FormatFloat(pstar, 'g', -1, 64), "--metrics", metrics, "--quiet")
	var out, errb bytes.Buffer
	if err := runExperiment(ctx, args, &out, &errb); err != nil {
		row.Err = err.Error()
		return row
	}
	var sum experiment.Summary
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		row.Err = fmt.Sprintf("summary: %v", err)
		return row
	}
	f, err := os.Open(metrics)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		row.Err = fmt.Sprintf("%s: %v (%d lines)", metrics, err, len(recs))
		return row
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"round", "primal", "relative_loss", "groups_updated", "bytes_to_server", "bytes_from_server"} {
		if _, ok := col[h]; !ok {
			row.Err = fmt.Sprintf("%s: no column %q", metrics, h)
			return row
		}
	}
	var primal []float64
	var bytesSum, updated float64
	for li, r := range recs[1:] {
		num := func(h string) float64 {
			v, perr := strconv.ParseFloat(r[col[h]], 64)
			if perr != nil && err == nil {
				err = fmt.Errorf("%s:%d: field %s: %q is not a number", metrics, li+2, h, r[col[h]])
			}
			return v
		}
		round := int(num("round"))
		if round < 1 {
			continue // the state before training
		}
		primal = append(primal, num("primal"))
		row.Rel = append(row.Rel, num("relative_loss"))
		bytesSum += num("bytes_to_server") + num("bytes_from_server")
		updated += num("groups_updated")
	}
	if err != nil {
		row.Err = err.Error()
		return row
	}
	if len(primal) != o.rounds {
		row.Err = fmt.Sprintf("%s: %d rounds, want %d", metrics, len(primal), o.rounds)
		return row
	}
	n := float64(len(primal))
	row.RoundsTo = make([]int, len(experiment.Thresholds))
	for k, th := range experiment.Thresholds {
		row.RoundsTo[k] = sum.RoundsTo[strconv.FormatFloat(th, 'g', -1, 64)]
	}
	tenth := primal[len(primal)-max(1, len(primal)/10):]
	row.LastMaxMin = slices.Max(tenth) / slices.Min(tenth)
	row.SecondsPerRound = sum.Seconds / n
	row.BytesPerRound = bytesSum / n
	// Samples updated per round: H per updated sample group (hyfed), per
	// updated client (paper); with no group count reported, H per sample
	// group of the partition.
	groups := updated / n
	if groups == 0 {
		if sp, perr := partition.Parse(s.Partition); perr == nil {
			groups = float64(sp.K)
		}
	}
	inner := sum.Inner
	if step == protocol.StepBlock {
		// The block step caps H and fills its Gram's last chunk.
		inner = protocol.BlockPicks(inner)
	}
	row.PassesPerRound = groups * float64(inner) / float64(d.Train)
	return row
}

// relAt is the relative loss after round r (NaN beyond the run or failed).
func (r *suiteRow) relAt(round int) float64 {
	if round < 1 || round > len(r.Rel) {
		return math.NaN()
	}
	return r.Rel[round-1]
}

// targetRounds returns the round limits of suiteTargets for a row: where
// central SDCA needs more than suiteHardPasses passes for the last target,
// the rounds that give the federation as many sample updates as central
// SDCA needed, if more. exact[i] is false where central SDCA did not reach
// the threshold within its cap: the limit is then a lower bound.
func (r *suiteRow) targetRounds(c *suiteCentral) (limits []int, exact []bool) {
	passes := func(th float64) (float64, bool) {
		if p := c.passesTo(th); p >= 0 {
			return p, true
		}
		return float64(c.Cap), false
	}
	last, _ := passes(suiteTargets[len(suiteTargets)-1].Below)
	for _, t := range suiteTargets {
		lim, ok := t.Rounds, true
		if last > suiteHardPasses && r.PassesPerRound > 0 {
			var p float64
			p, ok = passes(t.Below)
			lim = max(lim, int(math.Ceil(p/r.PassesPerRound)))
		}
		limits, exact = append(limits, lim), append(exact, ok)
	}
	return limits, exact
}

// passesTo returns central SDCA's passes to a threshold of
// experiment.Thresholds (-1: not reached or not measured).
func (c *suiteCentral) passesTo(th float64) float64 {
	for k, t := range experiment.Thresholds {
		if t == th && k < len(c.Passes) {
			return c.Passes[k]
		}
	}
	return -1
}

// targets says whether a row meets the targets: "met", "missed" and what,
// or "n/a" and why (a limit beyond the run, or one central SDCA gives no
// number for, when the row did not get there either).
func (r *suiteRow) targets(c *suiteCentral) string {
	if r.Err != "" {
		return "failed"
	}
	limits, exact := r.targetRounds(c)
	var missed, open []string
	for i, t := range suiteTargets {
		got := r.RoundsTo[slices.Index(experiment.Thresholds, t.Below)]
		switch {
		case got >= 0 && got <= limits[i]:
		case !exact[i]:
			open = append(open, fmt.Sprintf("%g: central SDCA > %d passes", t.Below, c.Cap))
		case limits[i] > r.Rounds && got < 0:
			open = append(open, fmt.Sprintf("%g by %d > rounds run", t.Below, limits[i]))
		default:
			missed = append(missed, fmt.Sprintf("%g by %d", t.Below, limits[i]))
		}
	}
	switch {
	case len(missed) > 0:
		return "missed " + strings.Join(missed, ", ")
	case len(open) > 0:
		return "n/a (" + strings.Join(open, "; ") + ")"
	}
	return "met"
}

// missedTargets lists the rows of a step rule that miss the targets or
// failed; rows whose targets lie beyond the run ("n/a") cannot be judged
// and do not count.
func (rep *suiteReport) missedTargets(step string) []string {
	var out []string
	for _, r := range rep.rows {
		if r.Step != step {
			continue
		}
		if t := r.targets(rep.central[centralKey(r.Setting.Data, r.Setting.Lambda, r.Setting.Loss)]); t != "met" && !strings.HasPrefix(t, "n/a") {
			out = append(out, r.Setting.label(shortData(r.Setting.Data))+": "+t)
		}
	}
	return out
}

func thresholdList() string {
	parts := make([]string, len(experiment.Thresholds))
	for i, t := range experiment.Thresholds {
		parts[i] = fmtNum(t)
	}
	return strings.Join(parts, ", ")
}

func passList(p []float64) string {
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = fmtPasses(v)
	}
	return strings.Join(parts, ", ")
}

func fmtPasses(v float64) string {
	switch {
	case v < 0:
		return "never"
	case v < 1:
		return fmt.Sprintf("%.2g", v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func fmtRel(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.3g", v)
}

func fmtRound(r int) string {
	if r < 0 {
		return "never"
	}
	return strconv.Itoa(r)
}

// Report sections are delimited so that a run over some data sets updates
// only their sections of an existing report.
const (
	suiteBegin = "<!-- suite:%s -->"
	suiteEnd   = "<!-- /suite:%s -->"
)

var suiteSectionRE = regexp.MustCompile(`(?s)<!-- suite:([^ \n]+) -->\n.*?<!-- /suite:([^ \n]+) -->\n`)

// names lists the sections of a report in order: the built-in sets in
// theirs, then data files, those of an earlier report (old) in its order
// before this run's.
func (rep *suiteReport) names(old []byte) []string {
	names := slices.Clone(suiteDataSets)
	for _, m := range suiteSectionRE.FindAllStringSubmatch(string(old), -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	for _, d := range rep.data {
		if !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	return names
}

// markdown is the report of this run: the preamble and one section per
// data set run.
func (rep *suiteReport) markdown() string {
	var secs []string
	for _, name := range rep.names(nil) {
		if sec := rep.section(name); sec != "" {
			secs = append(secs, sec)
		}
	}
	return suiteAssemble(secs, "")
}

var (
	suiteTitleRE  = regexp.MustCompile(`(?m)^## (.+)$`)
	suiteRunsRE   = regexp.MustCompile(`: ([\d]+(?: of \d+)?(?: \(interrupted\))?) runs, (\d+) s wall time`)
	suiteTargetRE = regexp.MustCompile(`(?m)^Targets met: (.+)\.$`)
)

// suiteNotesRE finds hand-written notes in a report, kept across runs.
var suiteNotesRE = regexp.MustCompile(`(?s)<!-- notes -->\n.*?<!-- /notes -->\n`)

// suiteAssemble puts the preamble, an overview of the sections (read back
// from them, since some may come from earlier runs), notes and the
// sections together.
func suiteAssemble(secs []string, notes string) string {
	var b strings.Builder
	b.WriteString(suitePreamble)
	b.WriteString("\n| data set | runs | wall time | targets met |\n| --- | --- | --- | --- |\n")
	for _, sec := range secs {
		title, runs, wall, met := "?", "?", "?", "?"
		if m := suiteTitleRE.FindStringSubmatch(sec); m != nil {
			title = m[1]
		}
		if m := suiteRunsRE.FindStringSubmatch(sec); m != nil {
			runs, wall = m[1], m[2]+" s"
			if s, err := strconv.Atoi(m[2]); err == nil && s >= 120 {
				wall = fmt.Sprintf("%s (%.0f min)", wall, float64(s)/60)
			}
		}
		if m := suiteTargetRE.FindStringSubmatch(sec); m != nil {
			met = m[1]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", title, runs, wall, met)
	}
	if notes != "" {
		b.WriteString("\n" + notes)
	}
	for _, sec := range secs {
		b.WriteString("\n" + sec)
	}
	return b.String()
}

const suitePreamble = `# Convergence suite

Made by ` + "`hyfed suite`" + ` (` + "`make convergence`" + `): a fixed grid of in-process federations, every
row one ` + "`hyfed experiment`" + ` run with the flags its section names and every other setting at its
default (the suite measures what a user gets, with no per-set tuning), plaintext sealing unless a
section's command says otherwise (an encrypted run computes the same numbers bit for bit; plaintext
bytes count 8 per value). P* is the central solver's optimum per data set, lambda and loss, to a
relative duality gap of 1e-9 or the gap its 3,000 passes reach (the P* tables show it: relative
losses are uncertain by that much). Relative loss is (P - P*)/P* of the federation's model after a
round. Columns: the relative loss after rounds 100, 300 and 1,000; the first round below 1e-1, 1e-2
and 1e-3; the primal's max/min over the last tenth of rounds (how much the model still jumps); central
SDCA's passes over the training data to the same thresholds (plain sequential SDCA in random order,
the yardstick of progress per sample update) and the federation's passes per round (samples updated
per round over training samples); wall seconds per round (all parties in one process) and bytes per
round, both directions. "targets" checks the convergence targets: below 1e-2 within 300 rounds and below 1e-3 within
1,000, or, where central SDCA needs more than 100 passes for 1e-3, within the rounds that give the
federation as many sample updates as central SDCA needed; the overview counts the rows that met them
and the rows that missed them (the rest lie beyond the rounds run). Each section names the command,
commit and wall time that made it.
`

// section renders one data set's section ("" if it was not run).
func (rep *suiteReport) section(name string) string {
	var d *suiteData
	for _, x := range rep.data {
		if x.Name == name {
			d = x
		}
	}
	if d == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, suiteBegin+"\n", name)
	title := name
	if name == suiteSparse {
		title = "sparse: " + d.Spec
	}
	storage := "dense"
	if d.Sparse {
		storage = fmt.Sprintf("sparse, %.1f non-zeros per row", float64(d.NNZ)/float64(d.N))
	}
	runs := strconv.Itoa(rep.runs(d))
	if planned := len(rep.opt.settings(d)) * len(rep.opt.steps); rep.runs(d) < planned {
		runs = fmt.Sprintf("%d of %d", rep.runs(d), planned)
		if rep.interrupted {
			runs += " (interrupted)"
		}
	}
	fmt.Fprintf(&b, "## %s\n\n%d samples (%d for training) x %d features, %s. Made by `%s` at %s on %s: %s runs, %.0f s wall time including the central solves.\n\n",
		title, d.N, d.Train, d.M, storage, rep.opt.commandLine, rep.commit, rep.started.UTC().Format("2006-01-02"),
		runs, rep.seconds[name])
	fmt.Fprintf(&b, "Every row: `%s`.\n\n", strings.Join(append([]string{"hyfed experiment --data", d.Spec, "--partition P --fraction F --lambda L --loss LOSS --step STEP --rounds",
		strconv.Itoa(rep.opt.rounds), "--seed", strconv.FormatInt(rep.opt.seed, 10)}, rep.opt.commonArgs()...), " "))
	b.WriteString("| lambda | loss | P* | relative gap of P* | central SDCA passes to 1e-1 | to 1e-2 | to 1e-3 | central seconds |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	seen := map[string]bool{}
	for _, s := range rep.opt.settings(d) {
		k := centralKey(s.Data, s.Lambda, s.Loss)
		if seen[k] {
			continue
		}
		seen[k] = true
		c := rep.central[k]
		fmt.Fprintf(&b, "| %g | %s | %.10g | %.2g |", s.Lambda, s.Loss, c.PStar, c.Gap)
		for _, p := range c.Passes {
			fmt.Fprintf(&b, " %s |", fmtPasses(p))
		}
		fmt.Fprintf(&b, " %.1f |\n", c.Seconds)
	}
	b.WriteString("\n| partition | fraction | lambda | loss | step | after 100 | after 300 | after 1000 | rounds to 1e-1 | to 1e-2 | to 1e-3 | primal max/min, last tenth | central passes to 1e-1/1e-2/1e-3 | passes per round | s/round | bytes/round | targets |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	met := map[string][3]int{} // met, rows, missed (the rest lie beyond the run)
	for _, r := range rep.rows {
		if r.Setting.Data != d.Spec {
			continue
		}
		s := r.Setting
		c := rep.central[centralKey(s.Data, s.Lambda, s.Loss)]
		t := r.targets(c)
		m := met[r.Step]
		m[1]++
		if t == "met" {
			m[0]++
		}
		if strings.HasPrefix(t, "missed") {
			m[2]++
		}
		met[r.Step] = m
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | %g | %g | %s | %s | failed: %s | | | | | | | | | | | |\n", s.Partition, s.Fraction, s.Lambda, s.Loss, r.Step,
				strings.ReplaceAll(r.Err, "|", "/"))
			continue
		}
		fmt.Fprintf(&b, "| %s | %g | %g | %s | %s |", s.Partition, s.Fraction, s.Lambda, s.Loss, r.Step)
		for _, cp := range suiteCheckpoints {
			fmt.Fprintf(&b, " %s |", fmtRel(r.relAt(cp)))
		}
		for _, rt := range r.RoundsTo {
			fmt.Fprintf(&b, " %s |", fmtRound(rt))
		}
		fmt.Fprintf(&b, " %.3g | %s | %.3g | %.3g | %.0f | %s |\n", r.LastMaxMin, strings.ReplaceAll(passList(c.Passes), ", ", " / "),
			r.PassesPerRound, r.SecondsPerRound, r.BytesPerRound, t)
	}
	b.WriteString("\nTargets met:")
	for i, st := range rep.opt.steps {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s in %d of %d rows, %d missed", st, met[st][0], met[st][1], met[st][2])
	}
	b.WriteString(".\n")
	fmt.Fprintf(&b, suiteEnd+"\n", name)
	return b.String()
}

// runs counts the rows of a data set.
func (rep *suiteReport) runs(d *suiteData) int {
	n := 0
	for _, r := range rep.rows {
		if r.Setting.Data == d.Spec {
			n++
		}
	}
	return n
}

// suiteWrite writes the report, keeping the sections of data sets this run
// did not cover from an existing file.
func suiteWrite(path string, rep *suiteReport) error {
	kept := map[string]string{}
	notes := ""
	oldReport, err := os.ReadFile(path)
	if err == nil {
		for _, m := range suiteSectionRE.FindAllStringSubmatch(string(oldReport), -1) {
			if m[1] == m[2] {
				kept[m[1]] = m[0]
			}
		}
		notes = suiteNotesRE.FindString(string(oldReport))
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--out: %w", err)
	}
	var secs []string
	for _, name := range rep.names(oldReport) {
		sec := rep.section(name)
		if sec == "" {
			sec = kept[name]
		}
		if sec != "" {
			secs = append(secs, sec)
		}
	}
	if err := os.WriteFile(path, []byte(suiteAssemble(secs, notes)), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// suiteCommit names the commit the report was made at: from the build's
// version control stamp, else from git in the current directory (builds
// with -buildvcs=false, go run, go test), said so: a binary built elsewhere
// or earlier may not be that commit's.
func suiteCommit() string {
	rev, dirty, guessed := "", false, false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" {
		out, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			return "an unknown commit"
		}
		rev = strings.TrimSpace(string(out))
		st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
		dirty = err != nil || len(bytes.TrimSpace(st)) > 0
		guessed = true
	}
	rev = "commit " + rev[:min(7, len(rev))]
	if dirty {
		rev += " (with uncommitted changes)"
	}
	if guessed {
		rev += " (git's HEAD where it ran: the binary carries no commit stamp)"
	}
	return rev
}
