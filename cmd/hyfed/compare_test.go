package main

import (
	"bytes"
	"context"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hyfed compare on a small custom grid: every algorithm that applies runs
// (FedHybrid only on the horizontal setting), the table has a row per
// run, the win counts add up, and the SVG has one panel per setting.
func TestCompareSmallGrid(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"--grid", "synthetic:600,20,0.5,0.05,3|grid:2,2|0.5;synthetic:600,20,0.5,0.05,3|horizontal:3|1|logistic",
		"--rounds", "8", "--budget", "2", "--out", out}
	if err := runCompare(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "comparison.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| sparse synthetic [^|]+\| (\w[\w-]*) \|`).FindAllStringSubmatch(string(md), -1)
	var algos []string
	for _, r := range rows {
		algos = append(algos, r[1])
	}
	if got := strings.Join(algos, ","); got != "hyfdca,fedavg,hyfem-prox,hyfdca,fedavg,hyfem-prox,fedhybrid" {
		t.Fatalf("rows for %s\n%s", got, md)
	}
	if strings.Contains(string(md), "failed") {
		t.Errorf("a run failed:\n%s", md)
	}
	if !strings.Contains(string(md), "lower relative loss after T rounds in") || !strings.Contains(string(md), "of 5 comparisons") ||
		!strings.Contains(string(md), "by the rounds' own iterates") {
		t.Errorf("no win counts over 5 comparisons:\n%s", md)
	}
	svg, err := os.ReadFile(filepath.Join(out, "comparison.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(svg), "<polyline"); n != 7 {
		t.Errorf("%d lines in the plot, want 7", n)
	}
	if !strings.Contains(stderr.String(), "about") {
		t.Errorf("no progress with a time estimate on stderr:\n%s", stderr.String())
	}
	// --only runs part of the grid with the draws the whole grid gives it:
	// the same hyperparameters for the horizontal setting.
	params := func(md string) string {
		var out []string
		for _, r := range regexp.MustCompile(`(?m)^\| sparse synthetic horizontal:3[^|]*\| (\w[\w-]*) \| ([^|]*) \|`).FindAllStringSubmatch(md, -1) {
			out = append(out, r[1]+" "+r[2])
		}
		return strings.Join(out, "; ")
	}
	partOut := t.TempDir()
	if err := runCompare(context.Background(), append(args[:len(args)-2:len(args)-2], "--out", partOut, "--only", "1"), &stdout, &stderr); err != nil {
		t.Fatalf("--only 1: %v\n%s", err, stderr.String())
	}
	part, err := os.ReadFile(filepath.Join(partOut, "comparison.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(part), "| sparse synthetic grid:2,2") || params(string(part)) == "" || params(string(part)) != params(string(md)) {
		t.Errorf("--only 1 ran other settings or picked other hyperparameters (%q, whole grid %q):\n%s", params(string(part)), params(string(md)), part)
	}
	for _, bad := range [][]string{{"--grid", "x|y"}, {"--grid", "synthetic:100,5|grid:1,1|2"}, {"--algos", "nope"}, {"--grid", "synthetic:100,5|grid:1,1|1", "--only", "1"}, {"--grid", "synthetic:100,5|grid:1,1|1", "--only", "x"}} {
		if err := runCompare(context.Background(), append(bad, "--out", out), &stdout, &stderr); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestCompareSameRun: HyFDCA's candidates that pick the same samples a
// round are one run (the search runs it once); more picks are another.
func TestCompareSameRun(t *testing.T) {
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:400,20", Partition: "horizontal:4"})
	if err != nil {
		t.Fatal(err)
	}
	same := hyfdcaAlgo(1e-3).Same
	small, filled, all := same(p, map[string]float64{"iic": 0.02}), same(p, map[string]float64{"iic": 0.5}), same(p, map[string]float64{"iic": 5})
	if small != filled {
		t.Errorf("iic 0.02 and 0.5 both fill up to one ciphertext's picks, but are named %q and %q", small, filled)
	}
	if all == small || all != same(p, map[string]float64{"iic": 50}) {
		t.Errorf("iic 5 and 50 pick every sample: named %q and %q (iic 0.02: %q)", all, same(p, map[string]float64{"iic": 50}), small)
	}
}

// TestRunPointsHandOutTheModel: a run's points read the model the
// federation hands out (the lowest primal so far, never worse from one
// round to the next) beside each round's own iterate.
func TestRunPointsHandOutTheModel(t *testing.T) {
	o := experiment.Options{Data: "synthetic:400,30,0.3,0.1,5", Partition: "grid:4,2"}
	p, err := experiment.Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := protocol.Defaults()
	cfg.Lambda, cfg.Rounds, cfg.Fraction = 1e-3, 40, 0.5
	o.Plaintext, o.Config = true, cfg
	pts, err := runPoints(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 40 {
		t.Fatalf("%d points for 40 rounds", len(pts))
	}
	best, swung := math.Inf(1), false
	for _, pt := range pts {
		best = math.Min(best, pt.IterPrimal)
		if pt.Primal != best {
			t.Fatalf("round %d: the handed-out model's primal %v, want the lowest so far %v", pt.Round, pt.Primal, best)
		}
		swung = swung || pt.IterPrimal > pt.Primal
	}
	if !swung {
		t.Log("no round's iterate was worse than the model so far: the test checked the equal case only")
	}
}

// TestRunPointsCountTheMetrics: a baseline's points count its metrics
// phases in Seconds (its handed-out model needs them) and leave them out of
// IterSeconds; HyFDCA's step uses them, so its two clocks agree.
func TestRunPointsCountTheMetrics(t *testing.T) {
	o := experiment.Options{Data: "synthetic:400,30,0.3,0.1,5", Partition: "grid:2,2"}
	p, err := experiment.Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, algo := range []string{protocol.AlgoHyFDCA, "fedavg"} {
		cfg := protocol.Defaults()
		cfg.Lambda, cfg.Rounds, cfg.Algo = 1e-3, 10, algo
		if algo != protocol.AlgoHyFDCA {
			cfg.StepA, cfg.StepB = 0.1, 1
		}
		o.Plaintext, o.Config, o.Algo = true, cfg, algo
		pts, err := runPoints(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		last := pts[len(pts)-1]
		switch {
		case algo == protocol.AlgoHyFDCA && last.IterSeconds != last.Seconds:
			t.Errorf("hyfdca: %v s by its iterates' clock, %v s in all", last.IterSeconds, last.Seconds)
		case algo != protocol.AlgoHyFDCA && !(last.IterSeconds < last.Seconds):
			t.Errorf("%s: %v s without its metrics phases, %v s with them", algo, last.IterSeconds, last.Seconds)
		}
	}
}
