package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/session"
)

// hospitalSchema is the two-hospital consortium of docs/own-data.md: A has
// the outcome, B other columns of some of A's patients.
const hospitalSchema = `{"id": "patient_id",
 "label": {"column": "outcome", "positive": ["yes"], "negative": ["no"]},
 "features": [{"name": "age"}, {"name": "blood_pressure"}, {"name": "smoker", "categories": ["never", "former", "current"]},
              {"name": "glucose"}, {"name": "bmi"}],
 "labels": "shared-with-co-holders"}
`

// ownServer starts hyfed serve and creates a federation with the schema;
// it returns the server's base URL and the join link.
func ownServer(t *testing.T, schemaText string, participants int, extra ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	_, base, token := startServe(t, dir, "127.0.0.1:0")
	sch := filepath.Join(dir, "schema.json")
	if err := os.WriteFile(sch, []byte(schemaText), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"create", "--server", base, "--create-token", token, "--schema", sch,
		"--min-participants", strconv.Itoa(participants), "--rounds", "30"}, extra...)
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "join: "); ok {
			return base, v
		}
	}
	t.Fatalf("create printed %q", out)
	return "", ""
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ownStatus(t *testing.T, link string) server.Status {
	t.Helper()
	l, err := session.ParseLink(link)
	if err != nil {
		t.Fatal(err)
	}
	var st server.Status
	if err := getJSON(context.Background(), l.StatusURL(), l.Invite, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestOwnFileBadInputRefusedBeforeJoining: each bad cell is refused by
// hyfed join with its file, line and column, before anything reaches the
// federation, whose status still lists no participant.
func TestOwnFileBadInputRefusedBeforeJoining(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process")
	}
	_, link := ownServer(t, hospitalSchema, 2)
	const head = "patient_id,age,blood_pressure,smoker,outcome\n"
	for _, c := range []struct{ name, text, want string }{
		{"duplicate id", head + "p1,50,120,never,yes\np1,51,121,never,no\n", `bad.csv:3: column "patient_id" (1): id "p1" is already the id of line 2`},
		{"empty id", head + "p1,50,120,never,yes\n,51,121,never,no\n", `bad.csv:3: column "patient_id" (1)`},
		{"label not listed", head + "p1,50,120,never,maybe\n", `bad.csv:2: column "outcome" (5): label "maybe"`},
		{"not a number", head + "p1,fifty,120,never,yes\n", `bad.csv:2: column "age" (2): "fifty" is not a number`},
		{"category not listed", head + "p1,50,120,sometimes,yes\n", `bad.csv:2: column "smoker" (4): "sometimes"`},
		{"missing cell", head + "p1,50,,never,yes\n", `bad.csv:2: column "blood_pressure" (3)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "join", link, "--data", writeFile(t, "bad.csv", c.text), "--retry-for", "2s")
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q, want it to say %q", code, errOut, c.want)
			}
			if strings.Count(errOut, c.want) != 1 {
				t.Errorf("the error is said %d times: %q", strings.Count(errOut, c.want), errOut)
			}
		})
	}
	if st := ownStatus(t, link); len(st.Participants) != 0 || st.State != "waiting" {
		t.Errorf("after the refusals: state %s, participants %+v", st.State, st.Participants)
	}
}

// TestOwnFileLabelConflictRefused: two hospitals that label a shared
// patient differently are both refused by name with the count, and the
// federation waits for registrations again instead of training to a
// zero model.
func TestOwnFileLabelConflictRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process")
	}
	conflict := strings.Replace(hospitalSchema, `"labels": "shared-with-co-holders"`, `"labels": "every-holder"`, 1)
	_, link := ownServer(t, conflict, 2)
	a := writeFile(t, "a.csv", "patient_id,age,blood_pressure,outcome\np1,50,120,yes\np2,60,130,no\np3,40,110,no\np4,70,150,yes\n")
	b := writeFile(t, "b.csv", "patient_id;glucose;bmi;outcome\np1;90;22;yes\np2;100;25;yes\np3;80;30;no\np4;110;28;yes\n")
	var wg sync.WaitGroup
	errs := make([]string, 2)
	codes := make([]int, 2)
	for i, f := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i], codes[i] = runCLI(t, "join", link, "--data", f, "--retry-for", "5s", "--quiet")
		}()
		time.Sleep(200 * time.Millisecond) // in order: the first is A
	}
	wg.Wait()
	for i := range errs {
		if codes[i] == 0 || !strings.Contains(errs[i], "disagree on 1 shared sample") {
			t.Errorf("participant %d: exit %d, %q", i, codes[i], errs[i])
		}
	}
	st := ownStatus(t, link)
	if st.State != "waiting" || len(st.Notices) != 1 || !strings.Contains(st.Notices[0], " and ") {
		t.Errorf("state %s, notices %q", st.State, st.Notices)
	}
	for _, p := range st.Participants {
		if p.State != "refused" || !strings.Contains(p.Reason, "disagree") {
			t.Errorf("participant %+v", p)
		}
	}
}

// TestBlockTooLargeToSealStops: a block whose row is too large to seal
// stops its participant at once with the reason (no retrying for minutes),
// and the organizer sees who stopped and why.
func TestBlockTooLargeToSealStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process")
	}
	dir := t.TempDir()
	_, base, token := startServe(t, dir, "127.0.0.1:0")
	out, errOut, code := runCLI(t, "create", "--server", base, "--create-token", token, "--min-participants", "1", "--rounds", "5")
	if code != 0 {
		t.Fatalf("create: %s", errOut)
	}
	link := strings.TrimPrefix(strings.Split(out, "\n")[0], "join: ")
	blk := writeFile(t, "b.libsvm", "# hyfed-block v1 features=2 cols=1-2\n+1 1:1 2:35488.84 # a\n-1 1:2 2:1 # b\n")
	start := time.Now()
	_, errOut, code = runCLI(t, "join", link, "--data", blk, "--quiet")
	if code == 0 || !strings.Contains(errOut, "beyond the sealable range") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if s := time.Since(start); s > 20*time.Second {
		t.Errorf("the join took %v: it retried", s)
	}
	// The server reads the participant's last word after it has gone.
	st := ownStatus(t, link)
	for end := time.Now().Add(5 * time.Second); len(st.Notices) == 0 && time.Now().Before(end); st = ownStatus(t, link) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(st.Notices) != 1 || !strings.Contains(st.Notices[0], "beyond the sealable range") {
		t.Errorf("notices %q", st.Notices)
	}
}

// TestOwnDataDocRuns runs docs/own-data.md's first shell block verbatim
// (its make lines aside: make test has built the data, and bin/hyfed is
// this test binary) in a fresh directory: the walkthrough works as written.
func TestOwnDataDocRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a federation of three processes")
	}
	doc, err := os.ReadFile("../../docs/own-data.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/own-data.md has no ```sh block")
	}
	var script []string
	for _, l := range strings.Split(block, "\n") {
		if !strings.HasPrefix(l, "make ") {
			script = append(script, l)
		}
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := filepath.Abs("../../.cache")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nHYFED_MAIN=1 exec " + strconv.Quote(self) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "hyfed"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cache, filepath.Join(dir, ".cache")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", strings.Join(script, "\n"))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second // a server left behind keeps the output open
	out, err := cmd.CombinedOutput()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // a server left behind by a failure
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{"client-0.csv: 442 rows", "model: trial/model", `"accuracy":`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "trial", "model.json")); err != nil {
		t.Error(err)
	}
}
