package check

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxLines keeps README.md an entry point: the reference is docs/.
const readmeMaxLines = 120

// TestReadmeCommandsRun: a reader copies the README's commands into a fresh
// clone, so each must run verbatim; each is checked the cheapest honest way
// (readmeChecks), and one that no check runs fails the test.
func TestReadmeCommandsRun(t *testing.T) {
	r := loadRepo(t)
	readme, err := os.ReadFile(filepath.Join(r.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(r.root, "docs", "own-data.md"))
	if err != nil {
		t.Fatal(err)
	}
	walk, err := ownDataWalkthrough(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into the docs page it belongs to", n, readmeMaxLines)
	}
	shown := 0
	for _, msg := range checkReadme(string(readme), walk, makeDryRun(t, r.root), &shown) {
		t.Errorf("README.md:%s", msg)
	}
	if shown == 0 {
		t.Error("README.md shows no command in a ```sh block: the check would pass by checking nothing")
	}
}

// TestReadmeCheckFails: checkReadme catches each kind of stale or unchecked
// command and passes what runs, so a green TestReadmeCommandsRun means something.
func TestReadmeCheckFails(t *testing.T) {
	r := loadRepo(t)
	walk := []string{"make build data", "bin/hyfed serve & SERVER=$!", "LINK=x", `bin/hyfed join "$LINK"`, "kill $SERVER"}
	block := "```sh\n" + strings.Join(walk, "\n") + "\n```\n"
	cases := []struct {
		name, readme string
		want         string // a substring of one of the problems; "" for none
	}{
		{"make targets the Makefile has", "```sh\nmake run\nmake test\n```\nand `make bench`\n", ""},
		{"the walkthrough whole", "text\n" + block, ""},
		{"a make target the Makefile lacks", "```sh\nmake run\nmake no-such-target\n```\n", "make -n no-such-target"},
		{"a backticked make target the Makefile lacks", "```sh\nmake run\n```\nthen `make no-such-target`\n", "make -n no-such-target"},
		{"part of the walkthrough", "```sh\nmake build data\nLINK=x\nbin/hyfed join \"$LINK\"\n```\n", "the whole walkthrough"},
		{"a walkthrough line changed", strings.Replace(block, "LINK=x", "LINK=y", 1), "no check runs it"},
		{"a command nothing runs", "```sh\nbin/hyfed experiment --data mnist\n```\n", "no check runs it"},
		{"an unclosed block", "```sh\nmake run\n", "not closed"},
		{"an indented code block", "text\n\n    make run\n", "indented code"},
		{"a fence of another kind", "```bash\nmake run\n```\n", "```bash"},
	}
	dry := makeDryRun(t, r.root)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shown := 0
			msgs := checkReadme(c.readme, walk, dry, &shown)
			found := false
			for _, m := range msgs {
				found = found || strings.Contains(m, c.want)
			}
			switch {
			case c.want == "" && len(msgs) > 0:
				t.Errorf("want no problem, got %q", msgs)
			case c.want != "" && !found:
				t.Errorf("want a problem saying %q, got %q", c.want, msgs)
			}
		})
	}
}

// ownDataWalkthrough is docs/own-data.md's first ```sh block, read as
// cmd/hyfed.TestOwnDataDocRuns reads it (the text between the first
// "```sh\n" and the next "```", cut into lines); that test runs every line
// but its make lines, which make test has run. Trailing blank lines are
// dropped.
func ownDataWalkthrough(doc string) ([]string, error) {
	_, rest, ok := strings.Cut(doc, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		return nil, fmt.Errorf("docs/own-data.md has no ```sh block")
	}
	lines := strings.Split(block, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines, nil
}

var makeLineRE = regexp.MustCompile(`^make( [a-z][a-z0-9-]*)+$`)

// readmeCheck is one way a README command is shown to run: lines it
// matches are checked by check (nil: the line is run elsewhere).
type readmeCheck struct {
	why   string
	match func(line string, walk []string) bool
	check func(line string) error
}

// readmeChecks are the ways, tried in order. A make line must name targets
// the Makefile has (make -n succeeds: a fresh clone's make builds them); a
// line of docs/own-data.md's walkthrough is run by
// cmd/hyfed.TestOwnDataDocRuns, provided the README shows the whole
// walkthrough (a part of it does not run alone: $LINK comes from an earlier
// line, and the server waits for all three joins), which checkReadme checks.
func readmeChecks(makeN func(targets []string) error) []readmeCheck {
	return []readmeCheck{
		{"make targets the Makefile has (make -n)",
			func(l string, _ []string) bool { return makeLineRE.MatchString(l) },
			func(l string) error { return makeN(strings.Fields(l)[1:]) }},
		{"a line of docs/own-data.md's walkthrough (cmd/hyfed.TestOwnDataDocRuns)",
			func(l string, walk []string) bool { return contains(walk, l) },
			nil},
	}
}

// checkReadme returns what is wrong with the commands a README shows, as
// "LINE: problem"; shown counts the commands in ```sh blocks. Commands are
// the lines of ```sh blocks and backticked `make ...` spans; ```text
// blocks (a usage listing, flag-checked by TestReferences) are not run.
func checkReadme(readme string, walk []string, makeN func([]string) error, shown *int) []string {
	var msgs []string
	bad := func(n int, format string, args ...any) {
		msgs = append(msgs, fmt.Sprintf("%d: ", n)+fmt.Sprintf(format, args...))
	}
	checks := readmeChecks(makeN)
	run := func(n int, line string) {
		for _, c := range checks {
			if !c.match(line, walk) {
				continue
			}
			if c.check != nil {
				if err := c.check(line); err != nil {
					bad(n, "%q: %v", line, err)
				}
			}
			return
		}
		bad(n, "%q: no check runs it (a make target, or a line of docs/own-data.md's walkthrough); run it in docs/check/readme_test.go or take it out of the README", line)
	}

	lines := strings.Split(readme, "\n")
	var block []string // the open ```sh block's lines
	blockAt, fence := 0, ""
	prevBlank := true
	for i, line := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			prevBlank = false
			if fence == "" {
				fence = strings.TrimPrefix(trimmed, "```")
				if fence != "sh" && fence != "text" {
					bad(n, "```%s: show commands in ```sh blocks (checked here) or a listing in ```text", fence)
				}
				blockAt, block = n, nil
				continue
			}
			if fence == "sh" {
				msgs = append(msgs, checkShellBlock(blockAt, block, walk)...)
				for j, l := range block {
					if strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
						*shown++
						run(blockAt+1+j, l)
					}
				}
			}
			fence = ""
			continue
		}
		if fence != "" {
			block = append(block, line)
			continue
		}
		if prevBlank && (strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")) && trimmed != "" {
			bad(n, "indented code: show commands in a ```sh block, where this test checks them")
		}
		prevBlank = trimmed == ""
		for _, m := range spanRE.FindAllStringSubmatch(line, -1) {
			if strings.HasPrefix(m[1], "make ") {
				run(n, m[1])
			}
		}
	}
	if fence != "" {
		bad(blockAt, "the ``` block is not closed")
	}
	return msgs
}

// checkShellBlock: a ```sh block that holds a line of the walkthrough
// must be the walkthrough, whole and in order.
func checkShellBlock(at int, block, walk []string) []string {
	for len(block) > 0 && strings.TrimSpace(block[len(block)-1]) == "" {
		block = block[:len(block)-1]
	}
	part := false
	for _, l := range block {
		if !makeLineRE.MatchString(l) && contains(walk, l) {
			part = true
		}
	}
	if !part || strings.Join(block, "\n") == strings.Join(walk, "\n") {
		return nil
	}
	i := 0
	for i < len(block) && i < len(walk) && block[i] == walk[i] {
		i++
	}
	got, want := "(the end)", "(the end)"
	if i < len(block) {
		got = fmt.Sprintf("%q", block[i])
	}
	if i < len(walk) {
		want = fmt.Sprintf("%q", walk[i])
	}
	return []string{fmt.Sprintf("%d: this block holds lines of docs/own-data.md's walkthrough but not the whole walkthrough, verbatim and in order (its line %d is %s, the walkthrough's %s): show the whole walkthrough, which cmd/hyfed.TestOwnDataDocRuns runs", at, i+1, got, want)}
}

// makeDryRun returns a check that make -n TARGETS succeeds in the
// repository (it prints the recipes without running them). Without make it
// skips the test, as the repository's tests do for a missing tool, unless
// CI is set.
func makeDryRun(t *testing.T, root string) func([]string) error {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("make not installed (CI is set)")
		}
		t.Skip("make not installed: the README's make lines cannot be checked")
	}
	return func(targets []string) error {
		cmd := exec.Command("make", append([]string{"-n"}, targets...)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			return fmt.Errorf("make -n %s: %v: %s", strings.Join(targets, " "), err, lines[len(lines)-1])
		}
		return nil
	}
}
