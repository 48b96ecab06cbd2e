package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/table"
)

// hyfed partition --names: named files the own-file reader takes against
// the schema.json beside them, and what it says on stderr.
func TestPartitionNames(t *testing.T) {
	// The dataset package's test files (the repository's shared/dataset).
	t.Setenv("HYFED_SKLEARN_DIR", filepath.Join("..", "..", "shared", "dataset", "testdata", "sklearn"))
	for _, tc := range []struct {
		args    []string
		files   int
		labels  []bool
		stderr  []string
		sharing bool
	}{
		{[]string{"--data", "diabetes", "--partition", "vertical:2", "--labels", "1", "--delimiter", "tab"}, 2, []bool{false, true},
			[]string{"columns id, age, sex, bmi, bp, s1", "columns id, label, s2", "--schema", "hyfed join 'JOIN LINK' --data"}, true},
		{[]string{"--data", "synthetic:40,5", "--partition", "grid:2,2"}, 4, []bool{true, true, true, true},
			[]string{"columns id, label, x1, x2", "every file has the labels", "--min-participants 4"}, false},
		{[]string{"--data", "synthetic:40,5", "--partition", "horizontal:2", "--labels", "0", "--delimiter", ";"}, 2, []bool{true, false},
			[]string{"have a label in no file: the federation leaves them out"}, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, code := runCLI(t, append([]string{"partition", "--format", "csv", "--names", "--out", dir}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if n := strings.Count(out, "\n"); n != tc.files {
				t.Fatalf("%d files listed: %s", n, out)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			f, err := os.Open(filepath.Join(dir, "schema.json"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := schema.Parse(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if (s.LabelPolicy() == schema.LabelsShared) != tc.sharing {
				t.Fatalf("labels %q", s.LabelPolicy())
			}
			for k := 0; k < tc.files; k++ {
				path := filepath.Join(dir, fmt.Sprintf("client-%d.csv", k))
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b, _, err := table.Load(path, raw, s, table.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if b.Raw == nil || b.Raw.HasLabels != tc.labels[k] {
					t.Fatalf("%s: %+v", path, b.Raw)
				}
			}
		})
	}
}

func TestPartitionNamesRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--names"}, "use it with --format csv (not libsvm)"},
		{[]string{"--names", "--format", "libsvm"}, "use it with --format csv"},
		{[]string{"--labels", "0", "--format", "csv"}, "--labels is for the named files of --names --format csv"},
		{[]string{"--delimiter", "tab"}, "--delimiter is for the named files"},
		{[]string{"--names", "--format", "csv", "--partition", "vertical:2", "--labels", "0,2"}, "there is no block 2: the partition makes 2 blocks, 0 to 1"},
		{[]string{"--names", "--format", "csv", "--partition", "vertical:2", "--labels", "first"}, `"first" is not a block number`},
		{[]string{"--names", "--format", "csv", "--partition", "vertical:2", "--delimiter", "pipe"}, `--delimiter "pipe": want comma, semicolon or tab`},
	} {
		args := append([]string{"partition", "--data", "synthetic:30,4", "--out", t.TempDir()}, tc.args...)
		if _, errOut, code := runCLI(t, args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}
