package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// floats finds re in out and returns its groups as numbers.
func floats(t *testing.T, out, re string) []float64 {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no line matching %q in:\n%s", re, out)
	}
	var v []float64
	for _, s := range m[1:] {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		v = append(v, x)
	}
	return v
}

const numRe = `([0-9.]+)`

// TestBenchNetServerCosts: bench-net prints the server process's CPU
// seconds, its memory and the bytes per participant, round by round and
// in its summary, and writes the server's profiles. It checks what the
// numbers must satisfy, not how large they are.
func TestBenchNetServerCosts(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	const rounds, participants = 3, 4
	out, errOut, code := runCLI(t, "bench-net", "--data", "synthetic:400,12", "--partition", "grid:2,2",
		"--rounds", strconv.Itoa(rounds), "-cpuprofile", cpu, "-memprofile", mem)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	t.Log(out)
	// The lines hyfed bench-net printed before these fields: still there.
	for _, l := range []string{"participants 4  scheme bgv", "seconds per round (median of rounds 1-3):", "  step ",
		"bytes per round (median, estimated per message):", "server peak memory (VmHWM):",
		"connections lost and made again by the participants: 0\n"} {
		if !strings.Contains(out, l) {
			t.Errorf("no %q in the output", l)
		}
	}
	all := floats(t, out, `server CPU seconds: registration `+numRe+`, setup \+ round 0 `+numRe+`, all `+numRe)
	if all[2] <= 0 || all[0] < 0 || all[1] < 0 || all[0]+all[1] > all[2]+0.01 {
		t.Errorf("server CPU seconds: registration %v, setup %v, all %v", all[0], all[1], all[2])
	}
	// Round by round: CPU within the whole run's, memory resident.
	rows := regexp.MustCompile(`(?m)^ +(\d+) +`+numRe+` +`+numRe+` +`+numRe+` +(\d+) +(\d+|-) +`+numRe+` +`+numRe+`$`).FindAllStringSubmatch(out, -1)
	if len(rows) != rounds {
		t.Fatalf("%d rows in the round table, want %d", len(rows), rounds)
	}
	sum := 0.0
	for i, r := range rows {
		if r[1] != strconv.Itoa(i+1) {
			t.Errorf("row %d is round %s", i, r[1])
		}
		wall, _ := strconv.ParseFloat(r[2], 64)
		c, _ := strconv.ParseFloat(r[3], 64)
		rss, _ := strconv.ParseFloat(r[5], 64)
		if wall <= 0 || c < 0 || rss <= 0 {
			t.Errorf("round %s: wall %v s, CPU %v s, RSS %v MB", r[1], wall, c, rss)
		}
		sum += c
	}
	if sum > all[2]+0.01 {
		t.Errorf("the rounds' CPU %v s exceeds the run's %v s", sum, all[2])
	}
	med := floats(t, out, `server CPU seconds per round \(median\): `+numRe)[0]
	if med < 0 || med > sum+0.01 {
		t.Errorf("median CPU per round %v, rounds' sum %v", med, sum)
	}
	if p := floats(t, out, `participants' CPU seconds per round \(median; all 4 in this process, on the same cores\): `+numRe)[0]; p < 0 {
		t.Errorf("participants' CPU per round %v", p)
	}
	rss := floats(t, out, `server RSS: peak `+numRe+` MB \(VmHWM\), at the end `+numRe+` MB`)
	if rss[0] <= 0 || rss[1] <= 0 || rss[1] > rss[0]+1 {
		t.Errorf("server RSS: peak %v MB, end %v MB", rss[0], rss[1])
	}
	// Bytes per participant are the round's bytes over the participants.
	tot := floats(t, out, `bytes per round \(median, estimated per message\): to server `+numRe+` MB, from server `+numRe+` MB`)
	per := floats(t, out, `bytes per participant per round \(median, estimated per message\): to server `+numRe+` kB, from server `+numRe+` kB`)
	for i, what := range []string{"to", "from"} {
		if per[i] <= 0 || math.Abs(per[i]*participants/1e3-tot[i]) > 0.006+participants*0.05e-3 {
			t.Errorf("%s the server: %v kB per participant x %d != %v MB", what, per[i], participants, tot[i])
		}
	}
	// The profiles: gzipped pprof protobufs.
	for _, p := range []string{cpu, mem, mem + ".base"} {
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 100 || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: %d bytes, %v", filepath.Base(p), len(b), err)
		}
	}
}

// TestBenchNetFedAvgOrdered: the baseline through the same protocol, its
// participants registered in block order.
func TestBenchNetFedAvgOrdered(t *testing.T) {
	out, errOut, code := runCLI(t, "bench-net", "--data", "synthetic:400,12", "--partition", "grid:2,2",
		"--rounds", "2", "--algo", "fedavg", "--ordered")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, l := range []string{"algorithm fedavg", "registration (in block order)", "server CPU seconds per round (median):"} {
		if !strings.Contains(out, l) {
			t.Errorf("no %q in:\n%s", l, out)
		}
	}
}

// TestBenchNetThresholdCommittee: bench-net runs threshold keys with the
// committee asked for, and a committee the server cannot use is refused
// with the server's reason.
func TestBenchNetThresholdCommittee(t *testing.T) {
	out, errOut, code := runCLI(t, "bench-net", "--data", "synthetic:400,12", "--partition", "grid:2,2",
		"--rounds", "2", "--keys", "threshold", "--key-committee", "4", "--key-threshold", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "scheme bgv-threshold") || !strings.Contains(out, "server CPU seconds per round (median):") {
		t.Errorf("no threshold run in:\n%s", out)
	}
	out, errOut, code = runCLI(t, "bench-net", "--data", "synthetic:400,12", "--partition", "grid:2,2",
		"--rounds", "1", "--keys", "threshold", "--key-committee", "4", "--key-threshold", "1")
	if code == 0 || !strings.Contains(errOut, "key threshold 1") {
		t.Errorf("a 1-of-4 key: exit %d, %s\n%s", code, errOut, out)
	}
}
