package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
)

// suiteKnownMisses are the quick suite's settings where the default step
// misses the convergence targets (suiteTargets) today, with why (none today: the dealt sparse
// grid, the last one, meets them since the block step fills its Gram's
// last chunk with picks); every other row of the default step must meet
// them (or lie beyond the run: n/a).
var suiteKnownMisses = map[string]string{}

// The quick suite on the real small sets: a section per data set, the
// P* table, one row per setting and step rule with sane numbers, and
// progress lines with the time left.
func TestSuiteQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 8 federations of 1,000 rounds")
	}
	if _, err := dataset.SklearnDir(); err != nil {
		t.Skip(err) // `make test` fetches them (make data)
	}
	out := filepath.Join(t.TempDir(), "convergence.md")
	args := []string{"--quick", "--steps", "block,paper", "--out", out}
	var stdout, stderr bytes.Buffer
	if err := runSuite(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if md != stdout.String() {
		t.Error("stdout is not the report written")
	}
	if !regexp.MustCompile(`\[8/8\] .*about 0s left`).MatchString(stderr.String()) {
		t.Errorf("no progress line with the time left:\n%s", stderr.String())
	}
	steps := []string{"block", "paper"}
	for _, name := range []string{"breast-cancer", "digits", "sparse"} {
		sec := suiteSectionOf(t, md, name)
		pstars := suiteTable(t, sec, "| lambda | loss | P* |", 8)
		wantP := map[string]int{"digits": 2}[name] // hinge and logistic
		if wantP == 0 {
			wantP = 1
		}
		if len(pstars) != wantP {
			t.Fatalf("%s: %d P* rows, want %d", name, len(pstars), wantP)
		}
		for _, r := range pstars {
			prev := 0.0
			if g := suiteNum(t, name, r[3]); g < 0 || g > 1e-3 {
				t.Errorf("%s: P* with a relative gap of %v", name, g)
			}
			for _, c := range r[4:7] {
				if c == "never" {
					prev = math.Inf(1)
					continue
				}
				p := suiteNum(t, name, c)
				if p <= 0 || p < prev {
					t.Errorf("%s: central passes %v", name, r)
				}
				prev = p
			}
			if p := suiteNum(t, name, r[2]); p <= 0 || p >= 1 {
				t.Errorf("%s: P* %v", name, r[2]) // the zero model has P = 1 (hinge), log 2 (logistic)
			}
		}
		rows := suiteTable(t, sec, "| partition | fraction |", 17)
		if len(rows) != 2*len(pstars) {
			t.Fatalf("%s: %d rows, want %d\n%s", name, len(rows), 2*len(pstars), sec)
		}
		for i, r := range rows {
			if r[4] != steps[i%len(steps)] || r[1] != "0.5" || r[2] != "0.001" {
				t.Errorf("%s row %d: %v", name, i, r)
			}
			if strings.HasPrefix(r[5], "failed") {
				t.Fatalf("%s row %d failed: %v", name, i, r)
			}
			var rel []float64
			for _, c := range r[5:8] {
				v := suiteNum(t, name, c)
				// Below P* only by the central solver's gap.
				if v < -1e-8 {
					t.Errorf("%s row %d: relative loss %v", name, i, v)
				}
				rel = append(rel, v)
			}
			prevRound := 0
			for k, c := range r[8:11] {
				if c == "never" {
					prevRound = math.MaxInt
					continue
				}
				n, err := strconv.Atoi(c)
				if err != nil || n < 1 || n > 1000 || n < prevRound {
					t.Errorf("%s row %d: rounds to threshold %d: %q", name, i, k, c)
				}
				prevRound = n
			}
			// The columns agree: a loss below 1e-1 after 1,000 rounds has a
			// first round below 1e-1.
			if rel[2] < 0.1 && r[8] == "never" {
				t.Errorf("%s row %d: loss %v after 1000 rounds but never below 1e-1", name, i, rel[2])
			}
			if v := suiteNum(t, name, r[11]); v < 1 {
				t.Errorf("%s row %d: max/min %v", name, i, v)
			}
			if v := suiteNum(t, name, r[13]); v <= 0 || v > 1 {
				t.Errorf("%s row %d: passes per round %v", name, i, v)
			}
			if suiteNum(t, name, r[14]) <= 0 || suiteNum(t, name, r[15]) <= 0 {
				t.Errorf("%s row %d: seconds %s, bytes %s per round", name, i, r[14], r[15])
			}
			if !regexp.MustCompile(`^(met|missed .+|n/a \(.+\))$`).MatchString(r[16]) {
				t.Errorf("%s row %d: targets %q", name, i, r[16])
			}
			if why, known := suiteKnownMisses[name+" "+r[0]]; r[4] == "block" && strings.HasPrefix(r[16], "missed") {
				if !known {
					t.Errorf("%s row %d: the default step %s: %v", name, i, r[16], r)
				} else {
					t.Logf("%s %s: the default step %s (known: %s)", name, r[0], r[16], why)
				}
			}
			// The default step's model beats the zero model (relative loss
			// (1 - P*)/P* for the hinge loss, more than 2 here) after 1,000 rounds.
			if r[4] == "block" && rel[2] > 1 {
				t.Errorf("%s row %d: the default step ends at relative loss %v", name, i, rel[2])
			}
		}
		if !regexp.MustCompile(`Targets met: block in \d+ of \d+ rows, \d+ missed; paper in \d+ of \d+ rows, \d+ missed\.`).MatchString(sec) {
			t.Errorf("%s: no target counts per step rule", name)
		}
		// The overview at the top has the section's line.
		title := name
		if name == "sparse" {
			title = "sparse: " + suiteQuickSparse
		}
		if !regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(title) + ` \| ` + strconv.Itoa(len(rows)) + ` \| \d+ s( \(\d+ min\))? \| block in `).MatchString(md) {
			t.Errorf("%s: no line in the overview", name)
		}
	}

	// A run over one data set replaces only its section, and keeps notes.
	before := map[string]string{}
	for _, name := range []string{"digits", "sparse"} {
		before[name] = suiteSectionOf(t, md, name)
	}
	const notes = "<!-- notes -->\nWhat we learned.\n<!-- /notes -->\n"
	if err := os.WriteFile(out, []byte(strings.Replace(md, "\n<!-- suite:", "\n"+notes+"\n<!-- suite:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := runSuite(context.Background(), []string{"--quick", "--data", "breast-cancer", "--rounds", "20", "--steps", "paper", "--out", out}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(out)
	for name, sec := range before {
		if suiteSectionOf(t, string(b), name) != sec {
			t.Errorf("section %s changed", name)
		}
	}
	if strings.Count(string(b), notes) != 1 {
		t.Errorf("notes not kept once:\n%s", b)
	}
	bc := suiteSectionOf(t, string(b), "breast-cancer")
	if rows := suiteTable(t, bc, "| partition | fraction |", 17); len(rows) != 1 || !strings.Contains(bc, "--rounds 20") || rows[0][7] != "–" {
		t.Errorf("breast-cancer section after the rerun:\n%s", bc)
	}
	if strings.Contains(stdout.String(), "suite:digits") {
		t.Error("stdout has sections the run did not make")
	}
}

func TestSuiteFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", "iris"}, `--data "iris"`},
		{[]string{"--steps", " , "}, "--steps: no step rule given"},
		{[]string{"--steps", "paper,nope"}, `--steps nope: config: step "nope"`},
		{[]string{"--steps", "hyfed"}, `--steps hyfed: config: step "hyfed" was retired`},
		{[]string{"--rounds", "0"}, "--rounds and --central-passes must be at least 1"},
	} {
		var stdout, stderr bytes.Buffer
		err := runSuite(context.Background(), append(tc.args, "--out", filepath.Join(t.TempDir(), "x.md")), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The convergence targets on made-up rows: the plain limits, the limits
// scaled to central SDCA's passes where it needs more than 100 for 1e-3,
// limits beyond the run, and central SDCA that never got there.
func TestSuiteTargets(t *testing.T) {
	easy := &suiteCentral{Passes: []float64{1, 5, 20}, Cap: 1000}
	hard := &suiteCentral{Passes: []float64{10, 100, 400}, Cap: 1000} // 400 passes for 1e-3
	never := &suiteCentral{Passes: []float64{10, 100, -1}, Cap: 1000}
	for _, tc := range []struct {
		name     string
		c        *suiteCentral
		roundsTo []int
		rounds   int
		perRound float64
		want     string
	}{
		{"met", easy, []int{10, 250, 900}, 1000, 0.2, "met"},
		{"1e-2 late", easy, []int{10, 301, 900}, 1000, 0.2, "missed 0.01 by 300"},
		{"both missed", easy, []int{10, -1, -1}, 1000, 0.2, "missed 0.01 by 300, 0.001 by 1000"},
		{"short run", easy, []int{10, 250, -1}, 500, 0.2, "n/a (0.001 by 1000 > rounds run)"},
		{"short run, met anyway", easy, []int{10, 250, 480}, 500, 0.2, "met"},
		// 400 passes at 0.2 per round: 2,000 rounds; 100 passes: 500 rounds.
		{"hard, scaled", hard, []int{10, 450, 1900}, 2000, 0.2, "met"},
		{"hard, scaled, missed", hard, []int{10, 501, 1900}, 2000, 0.2, "missed 0.01 by 500"},
		{"hard, beyond the run", hard, []int{10, 450, -1}, 1000, 0.2, "n/a (0.001 by 2000 > rounds run)"},
		{"hard, fast federation", hard, []int{10, 40, 90}, 100, 2, "met"},
		{"central never", never, []int{10, 450, -1}, 5000, 0.2, "n/a (0.001: central SDCA > 1000 passes)"},
		{"central never, met", never, []int{10, 200, 900}, 1000, 0.2, "met"},
	} {
		r := &suiteRow{RoundsTo: tc.roundsTo, Rounds: tc.rounds, PassesPerRound: tc.perRound}
		if got := r.targets(tc.c); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	rep := &suiteReport{central: map[string]*suiteCentral{centralKey("d", 1e-3, "hinge"): easy}}
	for _, st := range []string{"new", "old"} {
		rep.rows = append(rep.rows, &suiteRow{Setting: suiteSetting{Data: "d", Partition: "grid:2,4", Fraction: 1, Lambda: 1e-3, Loss: "hinge"},
			Step: st, RoundsTo: []int{1, 2, 3}, Rounds: 1000, PassesPerRound: 0.1})
	}
	rep.rows[1].RoundsTo = []int{1, -1, -1}
	rep.rows = append(rep.rows, &suiteRow{Setting: rep.rows[0].Setting, Step: "new", Err: "boom"},
		&suiteRow{Setting: rep.rows[0].Setting, Step: "new", RoundsTo: []int{1, 2, -1}, Rounds: 500, PassesPerRound: 0.1}) // n/a: not counted
	if m := rep.missedTargets("new"); len(m) != 1 || !strings.HasSuffix(m[0], ": failed") {
		t.Errorf("new: %q", m)
	}
	if m := rep.missedTargets("old"); len(m) != 1 || !strings.Contains(m[0], "grid:2,4") || !strings.Contains(m[0], "missed 0.01 by 300") {
		t.Errorf("old: %q", m)
	}
}

// suiteSectionOf returns a data set's section of a report.
func suiteSectionOf(t *testing.T, md, name string) string {
	t.Helper()
	begin, end := "<!-- suite:"+name+" -->\n", "<!-- /suite:"+name+" -->\n"
	i, j := strings.Index(md, begin), strings.Index(md, end)
	if i < 0 || j < i {
		t.Fatalf("no section %s in\n%s", name, md)
	}
	return md[i : j+len(end)]
}

// suiteTable returns the cells of the table whose header starts with head,
// each row checked to have cols cells.
func suiteTable(t *testing.T, sec, head string, cols int) [][]string {
	t.Helper()
	i := strings.Index(sec, head)
	if i < 0 {
		t.Fatalf("no table %q in\n%s", head, sec)
	}
	lines := strings.Split(sec[i:], "\n")
	var rows [][]string
	for k, l := range lines {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for c := range cells {
			cells[c] = strings.TrimSpace(cells[c])
		}
		if len(cells) != cols {
			t.Fatalf("table %q line %d has %d cells, want %d: %s", head, k+1, len(cells), cols, l)
		}
		if k >= 2 {
			rows = append(rows, cells)
		}
	}
	return rows
}

func suiteNum(t *testing.T, where, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		t.Fatalf("%s: %q is not a finite number", where, s)
	}
	return v
}

// cancelOn cancels a context once a line containing marker is written.
type cancelOn struct {
	bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.Buffer.Write(p)
	if strings.Contains(c.Buffer.String(), c.marker) {
		c.cancel()
	}
	return n, err
}

// An interrupted suite writes the runs it finished, and says so.
func TestSuiteInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := filepath.Join(t.TempDir(), "c.md")
	stderr := &cancelOn{marker: "[1/2]", cancel: cancel}
	var stdout bytes.Buffer
	err := runSuite(ctx, []string{"--quick", "--data", "sparse", "--rounds", "20", "--steps", "block,paper", "--out", out}, &stdout, stderr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sec := suiteSectionOf(t, string(b), "sparse")
	if rows := suiteTable(t, sec, "| partition | fraction |", 17); len(rows) != 1 || rows[0][4] != "block" {
		t.Fatalf("rows %v", rows)
	}
	if !strings.Contains(sec, ": 1 of 2 (interrupted) runs,") || !strings.Contains(string(b), "| sparse: synthetic:3000,1000,0.01,0.05,7 | 1 of 2 (interrupted) |") {
		t.Errorf("the report does not say it was interrupted:\n%s", b)
	}
}

// The overview reads each section's title, runs, wall time and target
// counts; notes go between it and the sections.
func TestSuiteAssemble(t *testing.T) {
	secs := []string{
		"<!-- suite:digits -->\n## digits\n\nMade by `x` at commit a on d: 80 runs, 725 s wall time including the central solves.\n\nTargets met: hyfed in 0 of 40 rows; new in 38 of 40 rows.\n<!-- /suite:digits -->\n",
		"<!-- suite:mnist -->\n## mnist\n\nMade by `x` at commit a on d: 3 of 40 (interrupted) runs, 95 s wall time including the central solves.\n\nTargets met: hyfed in 0 of 3 rows.\n<!-- /suite:mnist -->\n",
	}
	md := suiteAssemble(secs, "<!-- notes -->\nN\n<!-- /notes -->\n")
	for _, want := range []string{
		"\n| digits | 80 | 725 s (12 min) | hyfed in 0 of 40 rows; new in 38 of 40 rows |\n| mnist | 3 of 40 (interrupted) | 95 s | hyfed in 0 of 3 rows |\n\n<!-- notes -->\nN\n<!-- /notes -->\n\n<!-- suite:digits -->",
		secs[1],
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	if !strings.HasPrefix(md, suitePreamble) {
		t.Error("no preamble")
	}
}

// TestSuiteFile: a data file of one's own gets the same grid and its own
// section (here the quick subset: its first partition).
func TestSuiteFile(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "own.libsvm")
	var b strings.Builder
	for i := range 300 {
		x1, x2 := float64(i%17)/17, float64(i%5)/5
		y := "+1"
		if x1-x2 < 0.1 {
			y = "-1"
		}
		fmt.Fprintf(&b, "%s 1:%g 2:%g 3:1\n", y, x1, x2)
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "c.md")
	var stdout, stderr bytes.Buffer
	if err := runSuite(context.Background(), []string{"--quick", "--data", data, "--steps", "block", "--rounds", "20", "--out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	rep, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sec := suiteSectionOf(t, string(rep), data)
	if rows := suiteTable(t, sec, "| partition | fraction |", 17); len(rows) != 1 || rows[0][0] != "grid:2,4" || rows[0][4] != "block" {
		t.Fatalf("rows %v\n%s", rows, sec)
	}
}

// TestSuiteCommitSaysWhenGuessed: a test binary carries no commit stamp, so
// the report names git's HEAD where it ran and says that it is a guess (a
// binary built from another commit would otherwise be credited to this one).
func TestSuiteCommitSaysWhenGuessed(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git here: %v", err)
	}
	got := suiteCommit()
	if want := "commit " + string(head[:7]); !strings.HasPrefix(got, want) || !strings.Contains(got, "no commit stamp") {
		t.Fatalf("suiteCommit() = %q, want %q... saying the binary carries no commit stamp", got, want)
	}
}
