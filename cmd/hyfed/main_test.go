package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/partition"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

func lastJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line is not JSON: %q", lines[len(lines)-1])
	}
	return m
}

func TestExperimentCommand(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "m.csv")
	out, errOut, code := runCLI(t, "experiment", "--data", "synthetic:400,12", "--partition", "grid:2,2",
		"--lambda", "1e-2", "--rounds", "50", "--tol", "0", "--metrics", csv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := lastJSON(t, out)
	for _, k := range []string{"primal", "dual", "gap", "relative_loss", "accuracy", "rounds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	if !strings.Contains(errOut, "round 50/50") {
		t.Errorf("no progress line on stderr: %q", errOut)
	}
	if b, err := os.ReadFile(csv); err != nil || strings.Count(string(b), "\n") != 52 {
		t.Errorf("metrics file: %v", err)
	}
	if m["scheme"] != "bgv" {
		t.Errorf("default scheme %v, want bgv (encrypted)", m["scheme"])
	}
	// --plaintext: the same run without encryption, the same result.
	out, errOut, code = runCLI(t, "experiment", "--data", "synthetic:400,12", "--partition", "grid:2,2",
		"--lambda", "1e-2", "--rounds", "50", "--tol", "0", "--plaintext", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	p := lastJSON(t, out)
	if p["scheme"] != "plaintext" || p["primal"] != m["primal"] {
		t.Errorf("--plaintext: scheme %v primal %v, encrypted primal %v", p["scheme"], p["primal"], m["primal"])
	}
}

func TestCentralCommand(t *testing.T) {
	out, errOut, code := runCLI(t, "central", "--data", "synthetic:300,10", "--lambda", "1e-2", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := lastJSON(t, out)
	for _, k := range []string{"primal", "dual", "gap", "accuracy", "iterations", "seconds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	if m["gap"].(float64) > 1e-6*m["primal"].(float64) {
		t.Errorf("gap %v not closed", m["gap"])
	}
}

func TestPartitionCommandWritesLoadableBlocks(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "partition", "--data", "synthetic:200,9", "--partition", "grid:2,3", "--out", dir, "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "\n"); n != 6 {
		t.Fatalf("%d files listed: %s", n, out)
	}
	f, err := os.Open(filepath.Join(dir, "client-5.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := partition.ReadBlock(f, "client-5.csv")
	if err != nil || b.N() != 100 {
		t.Fatalf("block: %v", err)
	}
}

func TestBadInvocations(t *testing.T) {
	for _, args := range [][]string{
		{"nonsense"},
		{"experiment", "--rounds", "x"},
		{"experiment", "--data", "synthetic:100,5", "--partition", "grid:1", "--quiet"},
		{"experiment", "--data", "/no/such/file.libsvm", "--quiet"},
		{"experiment", "--data", "synthetic:100,5", "--lambda", "0", "--quiet"}, // refused, as create refuses it
		{"central", "stray"},
		{"partition", "--format", "xml"},
	} {
		if _, errOut, code := runCLI(t, args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if out, _, code := runCLI(t, "help"); code != 0 || !strings.Contains(out, "experiment") {
		t.Error("help")
	}
}

// hyfed experiment --algo runs the baselines in process with the same
// summary (without the dual), encrypted and plaintext alike, and refuses
// what an algorithm cannot run.
func TestExperimentBaselines(t *testing.T) {
	for _, c := range []struct{ algo, partition, loss string }{
		{"fedavg", "grid:2,2", "hinge"},
		{"hyfem-prox", "grid:2,2", "hinge"},
		{"fedhybrid", "horizontal:3", "logistic"},
	} {
		var primal []any
		for _, extra := range []string{"--quiet", "--plaintext"} {
			out, errOut, code := runCLI(t, "experiment", "--algo", c.algo, "--data", "synthetic:400,12", "--partition", c.partition,
				"--loss", c.loss, "--lambda", "1e-2", "--rounds", "20", extra)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", c.algo, code, errOut)
			}
			m := lastJSON(t, out)
			rel, _ := m["relative_loss"].(float64)
			if m["algo"] != c.algo || m["rounds"] != float64(20) || rel <= 0 || rel > 1 {
				t.Errorf("%s: summary %v", c.algo, m)
			}
			if _, ok := m["dual"]; ok {
				t.Errorf("%s: the summary has a dual", c.algo)
			}
			primal = append(primal, m["primal"])
		}
		if primal[0] != primal[1] {
			t.Errorf("%s: encrypted primal %v, plaintext %v", c.algo, primal[0], primal[1])
		}
	}
	for _, bad := range [][]string{
		{"--algo", "nope"},
		{"--algo", "fedhybrid", "--partition", "grid:2,2", "--loss", "logistic"},
		{"--algo", "fedhybrid", "--partition", "horizontal:2"}, // hinge is not smooth
	} {
		args := append([]string{"experiment", "--data", "synthetic:200,8", "--rounds", "2", "--quiet"}, bad...)
		if _, errOut, code := runCLI(t, args...); code == 0 || !strings.Contains(errOut, "hyfed experiment:") {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}
