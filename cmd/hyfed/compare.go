package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/svgplot"
)

// hyfed compare: the paper's comparison (the HyFDCA paper's supplement, sec. 2) of HyFDCA with
// the baselines, each tuned by a log-uniform random search, reported after
// T rounds and at equal wall time.

// cmpSetting is one cell of the grid.
type cmpSetting struct {
	Data, Partition string
	Fraction        float64
	Loss            string // hinge; logistic on the horizontal settings, where FedHybrid (smooth losses only) joins
}

func (s cmpSetting) String() string {
	l := ""
	if s.Loss != "hinge" {
		l = " " + s.Loss
	}
	return fmt.Sprintf("%s %s f=%g%s", shortData(s.Data), s.Partition, s.Fraction, l)
}

func shortData(d string) string {
	if strings.HasPrefix(d, "synthetic:") {
		return "sparse synthetic"
	}
	return d
}

// cmpPoint is one round of a run. Primal and HeldAcc are the model the
// federation hands out after the round (its best round so far, whatever
// the algorithm: Coordinator.Model), what a participant gets; IterPrimal
// is the round's own iterate, which can be far worse when a step
// overshoots.
type cmpPoint struct {
	Round int
	// Seconds is the wall time since the run started, every phase counted:
	// what the federation spends to hand out its model (the metrics phases
	// find the best round, whatever the algorithm). IterSeconds leaves out
	// a baseline's metrics phases (inner products and loss sums), which its
	// own iterates do not need; HyFDCA's step prices its candidates with
	// them, so its two are equal.
	Seconds, IterSeconds float64
	Primal               float64
	HeldAcc              float64
	IterPrimal           float64
}

// cmpParam is a hyperparameter searched log-uniformly in [Lo, Hi].
type cmpParam struct {
	Name   string
	Lo, Hi float64
}

// cmpAlgo runs one algorithm with given hyperparameters.
type cmpAlgo struct {
	Name   string
	Params []cmpParam
	// Applies says whether the algorithm runs on the partition (FedHybrid
	// is for horizontal partitions only).
	Applies func(partition string) bool
	Run     func(ctx context.Context, p *experiment.Prepared, s cmpSetting, params map[string]float64, rounds int, seed int64) ([]cmpPoint, error)
	// Same, if set, names the run params give: candidates with the same
	// name run the same numbers, so the search runs the first only.
	Same func(p *experiment.Prepared, params map[string]float64) string
}

// cmpGrid is the paper's grid (the HyFDCA paper's supplement, sec. 2: hybrid partitions, the
// hinge loss), plus horizontal settings with the logistic loss where
// FedHybrid runs too; or a small grid for --quick.
func cmpGrid(quick bool, sparse string) []cmpSetting {
	fractions := []float64{0.1, 0.5, 0.9}
	parts := map[string][]string{
		"fashion-mnist": {"quadrants:1", "quadrants:125", "quadrants:1250"},
		sparse:          {"grid:3,3", "grid:5,5", "grid:12,12"},
	}
	horizontal := []string{"fashion-mnist|horizontal:10"}
	if quick {
		fractions = []float64{0.5}
		parts = map[string][]string{"fashion-mnist": {"quadrants:1"}, sparse: {"grid:3,3"}}
		horizontal = []string{sparse + "|horizontal:4"}
	}
	var out []cmpSetting
	for _, d := range []string{"fashion-mnist", sparse} {
		for _, p := range parts[d] {
			for _, f := range fractions {
				out = append(out, cmpSetting{Data: d, Partition: p, Fraction: f, Loss: "hinge"})
			}
		}
	}
	for _, h := range horizontal {
		d, p, _ := strings.Cut(h, "|")
		for _, f := range fractions {
			out = append(out, cmpSetting{Data: d, Partition: p, Fraction: f, Loss: "logistic"})
		}
	}
	return out
}

// hyfdcaAlgo runs HyFDCA with its default step through the in-process
// federation (plaintext sealing: the encryption tests show it does not
// change the numbers).
func hyfdcaAlgo(lambda float64) cmpAlgo {
	return cmpAlgo{Name: "hyfdca", Params: []cmpParam{{"iic", 0.02, 1}}, Applies: func(string) bool { return true },
		Run: func(ctx context.Context, p *experiment.Prepared, s cmpSetting, params map[string]float64, rounds int, seed int64) ([]cmpPoint, error) {
			cfg := protocol.Defaults()
			cfg.Lambda, cfg.Fraction, cfg.Rounds, cfg.IIC, cfg.Loss = lambda, s.Fraction, rounds, params["iic"], s.Loss
			cfg.Tol = protocol.NoTol // the curves run every round, as the baselines' do
			return runPoints(ctx, p, experiment.Options{Data: s.Data, Partition: s.Partition, Seed: seed, Plaintext: true, Config: cfg})
		},
		// IIC matters through the samples a group picks a round only: H
		// filled up to its Gram's ciphertexts, and a group with no more
		// samples than that picks them all, in the same order, whatever
		// H is (at 5,000 clients every candidate is that run).
		Same: func(p *experiment.Prepared, params map[string]float64) string {
			h := protocol.BlockPicks(protocol.InnerFor(params["iic"], p.Data.NumTrain(), len(p.Blocks)))
			for _, b := range p.Blocks {
				if b.N() > h {
					return fmt.Sprintf("picks %d", h)
				}
			}
			return "every sample"
		}}
}

// cmpResult is one tuned run.
type cmpResult struct {
	Setting cmpSetting
	Algo    string
	Params  map[string]float64
	Points  []cmpPoint
	PStar   float64
	Err     string
}

func (r *cmpResult) relLoss(i int) float64 { return (r.Points[i].Primal - r.PStar) / r.PStar }

// iterLoss is the relative loss of round i's own iterate.
func (r *cmpResult) iterLoss(i int) float64 { return (r.Points[i].IterPrimal - r.PStar) / r.PStar }

// at returns the last point at or before wall time t (-1: none), by
// Seconds, or by IterSeconds when iter is set.
func (r *cmpResult) at(t float64, iter bool) int {
	idx := -1
	for i, p := range r.Points {
		sec := p.Seconds
		if iter {
			sec = p.IterSeconds
		}
		if sec <= t {
			idx = i
		}
	}
	return idx
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", stderr)
	quick := fs.Bool("quick", false, "a small grid (Fashion-MNIST quadrants:1 and the sparse set grid:3,3, fraction 0.5, 40 rounds, budget 2): minutes")
	rounds := fs.Int("rounds", 300, "rounds T of each final run")
	tuneRounds := fs.Int("tune-rounds", 0, "rounds of each random-search candidate (default T/3)")
	budget := fs.Int("budget", 5, "random-search candidates per algorithm and setting (the HyFDCA paper's supplement, sec. 2.3: log-uniform)")
	algos := fs.String("algos", "", "comma-separated algorithms (default: all)")
	sparse := fs.String("sparse", defaultSparse, "the sparse text-like data set (synthetic:N,M,density,noise,seed, or a LIBSVM file)")
	lambda := fs.Float64("lambda", protocol.DefaultLambda, "L2 regularization lambda")
	out := fs.String("out", "compare-out", "folder for comparison.md and the SVG plots")
	seed := fs.Int64("seed", 1, "seed of the searches and runs")
	custom := fs.String("grid", "", "settings instead of the paper's grid: DATA|PARTITION|FRACTION[|LOSS];... (e.g. 'synthetic:600,20|grid:2,2|0.5')")
	only := fs.String("only", "", "comma-separated positions (from 0) of the grid's settings to run, the rest skipped; each keeps the search draws it has in the whole grid, so parts run apart (or on other machines) pick what one run would")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *quick {
		*rounds, *budget = 40, 2
	}
	if *tuneRounds <= 0 {
		*tuneRounds = max(5, *rounds/3)
	}
	if *rounds < 1 || *budget < 1 {
		return errors.New("--rounds and --budget must be at least 1")
	}
	all := compareAlgos(*lambda)
	var chosen []cmpAlgo
	for _, a := range all {
		if *algos == "" || containsWord(*algos, a.Name) {
			chosen = append(chosen, a)
		}
	}
	if len(chosen) == 0 {
		names := make([]string, len(all))
		for i, a := range all {
			names[i] = a.Name
		}
		return fmt.Errorf("--algos %q: none of %s", *algos, strings.Join(names, ", "))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	grid := cmpGrid(*quick, *sparse)
	if *custom != "" {
		var err error
		if grid, err = parseGrid(*custom); err != nil {
			return err
		}
	}
	run, err := gridSubset(*only, len(grid))
	if err != nil {
		return err
	}
	// Count the runs for the progress estimate.
	total := 0
	for si, s := range grid {
		if !run[si] {
			continue
		}
		for _, a := range chosen {
			if a.Applies(s.Partition) {
				total += *budget + 1
			}
		}
	}
	fmt.Fprintf(stderr, "compare: %d settings x %d algorithms, %d runs (%d tuning rounds each, %d final rounds)\n",
		len(grid), len(chosen), total, *tuneRounds, *rounds)
	start := time.Now()
	done := 0
	progress := func(what string) {
		done++
		el := time.Since(start)
		left := time.Duration(float64(el) / float64(done) * float64(total-done))
		fmt.Fprintf(stderr, "[%d/%d] %s  (%.0fs elapsed, about %s left)\n", done, total, what, el.Seconds(), left.Round(time.Second))
	}
	pstars := map[string]float64{}
	prepared := map[string]*experiment.Prepared{}
	var results []*cmpResult
	var ran []cmpSetting
	for si, s := range grid {
		if !run[si] {
			continue
		}
		ran = append(ran, s)
		key := s.Data + "|" + s.Partition
		p := prepared[key]
		if p == nil {
			var err error
			fmt.Fprintf(stderr, "compare: loading %s, partition %s\n", s.Data, s.Partition)
			if p, err = experiment.Prepare(experiment.Options{Data: s.Data, Partition: s.Partition}); err != nil {
				return err
			}
			prepared = map[string]*experiment.Prepared{key: p} // one at a time: 5,000 blocks are large
		}
		ps, ok := pstars[s.Data+"|"+s.Loss]
		if !ok {
			fmt.Fprintf(stderr, "compare: P* of %s, %s loss (central solver)\n", s.Data, s.Loss)
			lf, err := loss.Parse(s.Loss)
			if err != nil {
				return err
			}
			r, err := central.Solve(ctx, p.Data, central.Config{Lambda: *lambda, Loss: lf, Tol: 1e-9, Seed: 1})
			if err != nil {
				return err
			}
			ps, pstars[s.Data+"|"+s.Loss] = r.Primal, r.Primal
		}
		for ai, a := range chosen {
			if !a.Applies(s.Partition) {
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(*seed), uint64(si*100+ai)))
			best := &cmpResult{Setting: s, Algo: a.Name, PStar: ps}
			bestLoss := math.Inf(1)
			ran := map[string]string{} // a run's name (Same) -> the candidate that ran it
			for c := 0; c < *budget; c++ {
				params := map[string]float64{}
				for _, pr := range a.Params {
					params[pr.Name] = math.Exp(math.Log(pr.Lo) + rng.Float64()*(math.Log(pr.Hi)-math.Log(pr.Lo)))
				}
				if a.Same != nil {
					name := a.Same(p, params)
					if first, ok := ran[name]; ok {
						progress(fmt.Sprintf("%s %s tune %s: the same run as %s (%s), not run again", s, a.Name, fmtParams(params), first, name))
						continue
					}
					ran[name] = fmtParams(params)
				}
				pts, err := a.Run(ctx, p, s, params, *tuneRounds, *seed)
				progress(fmt.Sprintf("%s %s tune %s", s, a.Name, fmtParams(params)))
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					fmt.Fprintf(stderr, "  candidate failed: %v\n", err)
					continue
				}
				if l := (pts[len(pts)-1].Primal - ps) / ps; l < bestLoss || best.Params == nil {
					bestLoss, best.Params = l, params
				}
			}
			if best.Params == nil {
				best.Err = "every candidate failed"
				results = append(results, best)
				continue
			}
			pts, err := a.Run(ctx, p, s, best.Params, *rounds, *seed)
			progress(fmt.Sprintf("%s %s final %s", s, a.Name, fmtParams(best.Params)))
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				best.Err = err.Error()
			}
			best.Points = pts
			results = append(results, best)
		}
	}
	md, fig := compareReport(ran, results, *rounds)
	cmdline := "hyfed compare " + strings.Join(args, " ")
	md = fmt.Sprintf("Made by `%s` in %.0f s on %s.\n\n%s", strings.TrimSpace(cmdline), time.Since(start).Seconds(), time.Now().UTC().Format("2006-01-02"), md)
	if err := os.WriteFile(filepath.Join(*out, "comparison.md"), []byte(md), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(*out, "comparison.svg"))
	if err != nil {
		return err
	}
	if err := fig.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stderr, "compare: wrote %s and %s\n", filepath.Join(*out, "comparison.md"), filepath.Join(*out, "comparison.svg"))
	return nil
}

// parseGrid reads --grid: settings separated by ';', fields by '|'.
func parseGrid(s string) ([]cmpSetting, error) {
	var out []cmpSetting
	for i, item := range strings.Split(s, ";") {
		f := strings.Split(strings.TrimSpace(item), "|")
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("--grid: setting %d %q: want DATA|PARTITION|FRACTION[|LOSS]", i+1, item)
		}
		var frac float64
		if _, err := fmt.Sscan(f[2], &frac); err != nil || frac <= 0 || frac > 1 {
			return nil, fmt.Errorf("--grid: setting %d: fraction %q, want a number in (0, 1]", i+1, f[2])
		}
		st := cmpSetting{Data: f[0], Partition: f[1], Fraction: frac, Loss: "hinge"}
		if len(f) == 4 {
			if _, err := loss.Parse(f[3]); err != nil {
				return nil, fmt.Errorf("--grid: setting %d: %w", i+1, err)
			}
			st.Loss = f[3]
		}
		out = append(out, st)
	}
	return out, nil
}

func containsWord(list, w string) bool {
	for _, x := range strings.Split(list, ",") {
		if strings.TrimSpace(x) == w {
			return true
		}
	}
	return false
}

func fmtParams(p map[string]float64) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%.3g", k, p[k])
	}
	return strings.Join(parts, " ")
}

// compareReport writes the Markdown table (after T rounds and at equal
// wall time), HyFDCA's win counts, and the figure (relative loss vs
// rounds, one panel per setting).
func compareReport(grid []cmpSetting, results []*cmpResult, rounds int) (string, *svgplot.Figure) {
	var b strings.Builder
	b.WriteString("| setting | algorithm | hyperparameters | relative loss after T | held-out accuracy after T | seconds for T | relative loss at equal time | held-out accuracy at equal time |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	fig := &svgplot.Figure{Title: fmt.Sprintf("relative loss (P-P*)/P* by round, %d rounds", rounds), Columns: 3}
	type win struct{ loss, acc, n, iter int }
	var byRounds, byTime win
	for _, s := range grid {
		var rs []*cmpResult
		for _, r := range results {
			if r.Setting == s {
				rs = append(rs, r)
			}
		}
		// Equal wall time: the shortest full run's time (for the iterates,
		// by their own clock).
		tEq, tIter := math.Inf(1), math.Inf(1)
		for _, r := range rs {
			if r.Err == "" && len(r.Points) > 0 {
				tEq = math.Min(tEq, r.Points[len(r.Points)-1].Seconds)
				tIter = math.Min(tIter, r.Points[len(r.Points)-1].IterSeconds)
			}
		}
		panel := svgplot.Panel{Title: s.String(), XLabel: "round", YLabel: "relative loss", LogY: true}
		var hy *cmpResult
		for _, r := range rs {
			if r.Algo == "hyfdca" {
				hy = r
			}
		}
		for _, r := range rs {
			if r.Err != "" || len(r.Points) == 0 {
				fmt.Fprintf(&b, "| %s | %s | | failed: %s | | | | |\n", s, r.Algo, r.Err)
				continue
			}
			last := len(r.Points) - 1
			ie := r.at(tEq, false)
			eqLoss, eqAcc := "–", "–"
			if ie >= 0 {
				eqLoss, eqAcc = fmt.Sprintf("%.3g", r.relLoss(ie)), fmt.Sprintf("%.4f", r.Points[ie].HeldAcc)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.3g | %.4f | %.1f | %s | %s |\n", s, r.Algo, fmtParams(r.Params), r.relLoss(last),
				r.Points[last].HeldAcc, r.Points[last].Seconds, eqLoss, eqAcc)
			ser := svgplot.Series{Name: r.Algo}
			for i, p := range r.Points {
				ser.X = append(ser.X, float64(p.Round))
				ser.Y = append(ser.Y, r.relLoss(i))
			}
			panel.Series = append(panel.Series, ser)
			if hy != nil && r != hy && hy.Err == "" && len(hy.Points) > 0 {
				hl := len(hy.Points) - 1
				byRounds.n++
				if hy.relLoss(hl) < r.relLoss(last) {
					byRounds.loss++
				}
				if hy.iterLoss(hl) < r.iterLoss(last) {
					byRounds.iter++
				}
				if hy.Points[hl].HeldAcc > r.Points[last].HeldAcc {
					byRounds.acc++
				}
				if he := hy.at(tEq, false); he >= 0 && ie >= 0 {
					byTime.n++
					if hy.relLoss(he) < r.relLoss(ie) {
						byTime.loss++
					}
					if hy.Points[he].HeldAcc > r.Points[ie].HeldAcc {
						byTime.acc++
					}
				}
				if he, ii := hy.at(tIter, true), r.at(tIter, true); he >= 0 && ii >= 0 && hy.iterLoss(he) < r.iterLoss(ii) {
					byTime.iter++
				}
			}
		}
		fig.Panels = append(fig.Panels, panel)
	}
	fmt.Fprintf(&b, "\nHyFDCA against each baseline in each setting: lower relative loss after T rounds in %d of %d comparisons, higher held-out accuracy in %d of %d; at equal wall time lower loss in %d of %d, higher accuracy in %d of %d.\n",
		byRounds.loss, byRounds.n, byRounds.acc, byRounds.n, byTime.loss, byTime.n, byTime.acc, byTime.n)
	fmt.Fprintf(&b, "Losses are of the model each federation hands out (its best round so far), and times count every phase (the metrics find that round); by the rounds' own iterates, with the baselines' metrics phases left out of their time, HyFDCA's is the lower in %d of %d after T rounds and %d of %d at equal wall time.\n",
		byRounds.iter, byRounds.n, byTime.iter, byTime.n)
	return b.String(), fig
}

// compareAlgos lists the algorithms hyfed compare runs. HyFEM-Avg is left
// out: for linear models it is FedAvg (the HyFEM paper, Remark 3; a test in
// shared/protocol shows identical runs).
func compareAlgos(lambda float64) []cmpAlgo {
	return []cmpAlgo{hyfdcaAlgo(lambda), baselineAlgo(averaging.FedAvg, lambda), baselineAlgo(averaging.HyFEMProx, lambda), fedHybridAlgo(lambda)}
}

// fedHybridAlgo runs FedHybrid with Newton-type participants on horizontal
// partitions (its setting: the FedHybrid paper), tuning the penalty mu; the
// step sizes are FedHybrid's defaults (fedhybrid.NewNode).
func fedHybridAlgo(lambda float64) cmpAlgo {
	return cmpAlgo{Name: fedhybrid.Name, Params: []cmpParam{{"mu", 1e-4, 10}},
		Applies: func(partition string) bool { return strings.HasPrefix(partition, "horizontal:") },
		Run: func(ctx context.Context, p *experiment.Prepared, s cmpSetting, params map[string]float64, rounds int, seed int64) ([]cmpPoint, error) {
			return runPoints(ctx, p, experiment.Options{Data: s.Data, Partition: s.Partition, Seed: seed, Plaintext: true, Config: protocol.Config{Algo: fedhybrid.Name, Mode: "newton", Loss: s.Loss, Lambda: lambda, Mu: params["mu"], Fraction: s.Fraction, Rounds: rounds, Inner: 1}})
		}}
}

// baselineAlgo runs FedAvg or HyFEM with the search ranges of the HyFDCA paper's supplement
// sec. 2.3 (IIC, a and b log-uniform; HyFEM also mu). Plaintext sealing,
// as for HyFDCA.
func baselineAlgo(name string, lambda float64) cmpAlgo {
	params := []cmpParam{{"iic", 1e-3, 5}, {"a", 1e-5, 25}, {"b", 1e-5, 25}}
	if name == averaging.HyFEMProx {
		params = append(params, cmpParam{"mu", 1e-3, 10})
	}
	return cmpAlgo{Name: name, Params: params, Applies: func(string) bool { return true },
		Run: func(ctx context.Context, p *experiment.Prepared, s cmpSetting, params map[string]float64, rounds int, seed int64) ([]cmpPoint, error) {
			h := protocol.InnerFor(params["iic"], p.Data.NumTrain(), len(p.Blocks))
			h = min(h, 100000) // a huge H is a candidate the search should drop, not a stall
			return runPoints(ctx, p, experiment.Options{Data: s.Data, Partition: s.Partition, Seed: seed,
				Plaintext: true, Config: protocol.Config{Algo: name, Loss: s.Loss, Lambda: lambda, StepA: params["a"], StepB: params["b"], Mu: params["mu"], Fraction: s.Fraction, Rounds: rounds, Inner: h}})
		}}
}

// gridSubset parses --only: the positions of the grid's settings to run
// (every one when empty).
func gridSubset(only string, n int) ([]bool, error) {
	run := make([]bool, n)
	if strings.TrimSpace(only) == "" {
		for i := range run {
			run[i] = true
		}
		return run, nil
	}
	for _, f := range strings.Split(only, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("--only: %q is not a position from 0 to %d of the grid's %d settings", f, n-1, n)
		}
		run[i] = true
	}
	return run, nil
}

// runPoints runs o on p through the in-memory federation and returns its
// rounds as points (those completed, with the error of a run that stopped
// early). A point's seconds are the phases' seconds scaled to the measured
// wall time (the phase timings omit the transport's own overhead): Seconds
// every phase, IterSeconds without a baseline's metrics phases (inner
// products and metrics), which its iterates do not need but its handed-out
// model does (they find its best round); HyFDCA's step uses them.
func runPoints(ctx context.Context, p *experiment.Prepared, o experiment.Options) ([]cmpPoint, error) {
	o.PStar = 1 // not needed here: the report computes relative losses
	start := time.Now()
	var h []protocol.RoundMetrics
	_, err := experiment.RunPreparedWithHistory(ctx, p, o, &h)
	total := time.Since(start).Seconds()
	baseline := o.Algo != "" && o.Algo != protocol.AlgoHyFDCA
	all, lean := 0.0, 0.0
	pts := make([]cmpPoint, 0, len(h))
	best, bestAcc := math.Inf(1), math.NaN() // the handed-out model (Coordinator.keepIfBest)
	for _, r := range h {
		if r.Round == 0 {
			continue
		}
		if !r.Partial && r.Primal < best {
			best, bestAcc = r.Primal, r.HeldAcc
		}
		model, acc := best, bestAcc
		if math.IsInf(best, 1) { // no certified round yet: the current iterate
			model, acc = r.Primal, r.HeldAcc
		}
		for phase, sec := range r.Seconds {
			all += sec
			if !baseline || (phase != protocol.PhaseMargins && phase != protocol.PhaseScore) {
				lean += sec
			}
		}
		pts = append(pts, cmpPoint{Round: r.Round, Seconds: all, IterSeconds: lean, Primal: model, HeldAcc: acc, IterPrimal: r.Primal})
	}
	if all > 0 {
		for i := range pts {
			pts[i].Seconds *= total / all
			pts[i].IterSeconds *= total / all
		}
	}
	if err != nil {
		return pts, fmt.Errorf("%s: %w", o.Algo, err)
	}
	return pts, nil
}
