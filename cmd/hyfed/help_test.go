package main

import (
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// helpEntry is one command line of hyfed -h or of the package doc.
type helpEntry struct{ group, name, summary string }

// helpEntries reads a grouped command list: a line "Title:" starts a
// group, an indented line "name  summary" is one of its commands; other
// lines (the usage line, the closing hint) are not entries.
func helpEntries(text string) []helpEntry {
	var out []helpEntry
	group := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case line != trimmed:
			name, summary, _ := strings.Cut(trimmed, " ")
			out = append(out, helpEntry{group, name, strings.TrimSpace(summary)})
		case strings.HasSuffix(trimmed, ":"):
			group = strings.TrimSuffix(trimmed, ":")
		}
	}
	return out
}

// hyfed -h lists every command once, with its summary, under the group of
// those who use it.
func TestHelpListsEveryCommandByGroup(t *testing.T) {
	const (
		participants = "For participants and organizers"
		researchers  = "For researchers"
		benchmarks   = "Benchmarks"
	)
	want := map[string]string{
		"serve": participants, "create": participants, "join": participants, "sim": participants,
		"predict": participants, "data": participants, "partition": participants,
		"experiment": researchers, "central": researchers, "suite": researchers, "compare": researchers,
		"bench": benchmarks, "bench-net": benchmarks, "bench-abuse": benchmarks,
	}
	if len(want) != len(commands) {
		t.Errorf("the table has %d commands, the test knows %d: give the new one its group here", len(commands), len(want))
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, nil} {
		out, _, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("hyfed %v: exit %d", args, code)
		}
		got := helpEntries(out)
		if len(got) != len(commands) {
			t.Errorf("hyfed %v lists %d commands, the table has %d:\n%s", args, len(got), len(commands), out)
		}
		for _, c := range commands {
			i := slices.IndexFunc(got, func(e helpEntry) bool { return e.name == c.name })
			switch {
			case i < 0:
				t.Errorf("hyfed %v does not list %s", args, c.name)
			case got[i].group != want[c.name]:
				t.Errorf("hyfed %v lists %s under %q, want %q", args, c.name, got[i].group, want[c.name])
			case got[i].summary != c.summary:
				t.Errorf("hyfed %v: %s's summary %q, want %q", args, c.name, got[i].summary, c.summary)
			}
		}
	}
}

// The package doc (go doc ./cmd/hyfed) lists the commands as hyfed -h
// does: the same groups, commands, order and summaries.
func TestPackageDocListsCommands(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("main.go has no package doc")
	}
	out, _, _ := runCLI(t, "-h")
	doc, help := helpEntries(f.Doc.Text()), helpEntries(out)
	for i := range max(len(doc), len(help)) {
		var d, h helpEntry
		if i < len(doc) {
			d = doc[i]
		}
		if i < len(help) {
			h = help[i]
		}
		if d != h {
			t.Fatalf("entry %d: the package doc of main.go lists %q, hyfed -h %q", i, d, h)
		}
	}
}
