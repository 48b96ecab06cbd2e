package partition_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/table"
)

// The sklearn fixtures of shared/dataset: diabetes and breast-cancer
// without the real files.
const sklearnFixtures = "../dataset/testdata/sklearn"

// loadRaw loads a data set as hyfed partition --names does and splits it.
func loadRaw(t *testing.T, spec, part string) (*dataset.Dataset, []partition.Block) {
	t.Helper()
	d, err := dataset.Load(spec, dataset.Options{Raw: true, Dense: true})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := partition.Parse(part)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := sp.Split(d)
	if err != nil {
		t.Fatal(err)
	}
	return d, blocks
}

// Every named file read back by the own-file reader against the written
// schema: the ids of one sample alike in every file, the raw values, the
// labels only where asked, no block magic or held-out column, rows
// shuffled, and a block the federation takes.
func TestWriteNamedReadBack(t *testing.T) {
	t.Setenv("HYFED_SKLEARN_DIR", sklearnFixtures)
	for _, tc := range []struct {
		data, part string
		labels     []bool
		delim      rune
	}{
		{"diabetes", "vertical:2", []bool{true, false}, ';'},
		{"diabetes", "grid:2,2", nil, '\t'},
		{"breast-cancer", "vertical:3", []bool{false, true, false}, ','},
		{"synthetic:60,9", "grid:2,3", []bool{true, false, false, false, true, false}, 0},
		{"synthetic:60,9,0.3", "horizontal:2", nil, ';'},
		{"digits", "quadrants:1", nil, ','},
	} {
		t.Run(tc.data+" "+tc.part, func(t *testing.T) {
			d, blocks := loadRaw(t, tc.data, tc.part)
			dir := t.TempDir()
			files, schemaPath, err := partition.WriteNamed(dir, d, blocks, partition.NamedOptions{Labels: tc.labels, Delimiter: tc.delim, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if schemaPath != filepath.Join(dir, partition.SchemaFile) || len(files) != len(blocks) {
				t.Fatalf("schema %s, %d files", schemaPath, len(files))
			}
			raw, err := os.ReadFile(schemaPath)
			if err != nil {
				t.Fatal(err)
			}
			s, err := schema.Parse(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if s.NumColumns() != numColumns(d)+1 || !s.HasIntercept() || (s.LabelPolicy() == schema.LabelsShared) != slices.Contains(tc.labels, false) {
				t.Fatalf("schema: %d columns for %d features, intercept %v, labels %q", s.NumColumns(), d.M(), s.HasIntercept(), s.LabelPolicy())
			}
			cols := s.Columns()
			covered := map[string][]bool{} // a sample's schema columns, over its files
			for k, f := range files {
				wantLabels := tc.labels == nil || tc.labels[k]
				text, err := os.ReadFile(f.Path)
				if err != nil {
					t.Fatal(err)
				}
				head, _, _ := strings.Cut(string(text), "\n")
				if strings.Contains(string(text), "hyfed-block") || strings.Contains(head, "heldout") || strings.Contains(head, partition.NamedLabel) != wantLabels {
					t.Fatalf("%s: header %q", f.Path, head)
				}
				tb, err := table.Read(bytes.NewReader(text), f.Path, s, table.Options{})
				if err != nil {
					t.Fatal(err)
				}
				b := &blocks[k]
				if tb.HasLabels != wantLabels || f.HasLabels != wantLabels || len(tb.IDs) != b.N() || f.Rows != b.N() {
					t.Fatalf("%s: labels %v (%v), %d rows of %d", f.Path, tb.HasLabels, f.HasLabels, len(tb.IDs), b.N())
				}
				if tc.delim != 0 && tb.Delimiter != tc.delim {
					t.Fatalf("%s: read as %q-separated", f.Path, tb.Delimiter)
				}
				inBlock := map[string]int{}
				for r, id := range b.IDs {
					inBlock[id] = r
				}
				var order []int
				for r, pid := range tb.IDs {
					i := sampleOf(t, d, pid)
					br, ok := inBlock[d.IDs[i]]
					if !ok {
						t.Fatalf("%s: id %s is sample %q, not in block %d", f.Path, pid, d.IDs[i], k)
					}
					order = append(order, br)
					if wantLabels && tb.Labels[r] != d.Y[i] {
						t.Fatalf("%s: %s labelled %v, the data %v", f.Path, pid, tb.Labels[r], d.Y[i])
					}
					if covered[pid] == nil {
						covered[pid] = make([]bool, len(cols))
					}
					for c, col := range tb.Columns {
						got, want := tb.X.At(r, c), d.X.At(i, cols[col].Feature)
						if cols[col].Categorical() {
							want = 0
							if strconv.FormatFloat(d.X.At(i, cols[col].Feature), 'g', -1, 64) == cols[col].Category {
								want = 1
							}
						}
						if got != want {
							t.Fatalf("%s: %s column %s: %v, the raw data %v", f.Path, pid, cols[col].Name, got, want)
						}
						if covered[pid][col] {
							t.Fatalf("%s: %s column %s in two files", f.Path, pid, cols[col].Name)
						}
						covered[pid][col] = true
					}
				}
				if len(order) > 8 && (slices.IsSorted(order) || slices.IsSortedFunc(tb.IDs, strings.Compare)) {
					t.Fatalf("%s: rows in the block's or the ids' order", f.Path)
				}
				pb, err := tb.Block(s)
				if err != nil {
					t.Fatal(err)
				}
				if pb.NumFeatures != s.NumColumns() || pb.Features[len(pb.Features)-1] != s.InterceptColumn() || pb.Raw == nil || pb.Raw.HasLabels != wantLabels {
					t.Fatalf("%s: block of %d features, %v", f.Path, pb.NumFeatures, pb.Features)
				}
			}
			// Together the files hold every sample's every column once.
			if len(covered) != d.N() {
				t.Fatalf("%d of %d samples in the files", len(covered), d.N())
			}
			for pid, c := range covered {
				if n := countTrue(c); n != len(cols)-1 {
					t.Fatalf("%s: %d of %d columns", pid, n, len(cols)-1)
				}
			}
		})
	}
}

func numColumns(d *dataset.Dataset) int {
	n := d.M()
	for _, cs := range d.Categories {
		n += len(cs) - 1
	}
	return n
}

func countTrue(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

// sampleOf is the data set's sample a file's id names: "p" and its
// 1-based number, zero-padded.
func sampleOf(t *testing.T, d *dataset.Dataset, pid string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(pid, "p"))
	if !strings.HasPrefix(pid, "p") || err != nil || n < 1 || n > d.N() || len(pid) != 1+len(strconv.Itoa(d.N())) {
		t.Fatalf("id %q is not p<sample number>", pid)
	}
	return n - 1
}

// The schema beside diabetes' files, byte for byte: its names, sex as a
// category, the intercept, labels shared when a file has none.
func TestNamedSchemaGolden(t *testing.T) {
	t.Setenv("HYFED_SKLEARN_DIR", sklearnFixtures)
	d, blocks := loadRaw(t, "diabetes", "vertical:2")
	for _, tc := range []struct {
		labels []bool
		golden string
	}{
		{[]bool{true, false}, "testdata/diabetes-schema.json"},
		{nil, "testdata/diabetes-schema-every-holder.json"},
	} {
		dir := t.TempDir()
		_, path, err := partition.WriteNamed(dir, d, blocks, partition.NamedOptions{Labels: tc.labels})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(tc.golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs:\n%s", tc.golden, got)
		}
	}
}

// One seed, the same files; another seed, other row orders.
func TestWriteNamedSeed(t *testing.T) {
	d, blocks := loadRaw(t, "synthetic:80,5", "vertical:2")
	read := func(seed int64) string {
		dir := t.TempDir()
		files, _, err := partition.WriteNamed(dir, d, blocks, partition.NamedOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var all []byte
		for _, f := range files {
			b, err := os.ReadFile(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return string(all)
	}
	if a, b, c := read(1), read(1), read(2); a != b || a == c {
		t.Fatalf("seed 1 twice alike %v, seeds 1 and 2 alike %v", a == b, a == c)
	}
}

func TestWriteNamedRefuses(t *testing.T) {
	d, blocks := loadRaw(t, "synthetic:20,5", "vertical:2")
	sparse, err := dataset.Load("synthetic:20,6,0.5", dataset.Options{Raw: true, Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := partition.Parse("grid:1,2")
	dealt, err := sp.Split(sparse)
	if err != nil {
		t.Fatal(err)
	}
	named := func(names ...string) *dataset.Dataset {
		c := *d
		c.Names = names
		return &c
	}
	coded := *d
	coded.Categories = map[int][]string{0: {"1", "2"}}
	for _, tc := range []struct {
		name   string
		d      *dataset.Dataset
		blocks []partition.Block
		o      partition.NamedOptions
		want   string
	}{
		{"delimiter", d, blocks, partition.NamedOptions{Delimiter: '|'}, `delimiter '|': want comma, semicolon or tab`},
		{"labels", d, blocks, partition.NamedOptions{Labels: []bool{true}}, "labels for 1 files, 2 blocks"},
		{"no blocks", d, nil, partition.NamedOptions{}, "no blocks"},
		{"dealt", sparse, dealt, partition.NamedOptions{}, "clients 0 and 1 hold the same samples and both feature"},
		{"names", named("a", "b", "A", "c"), blocks, partition.NamedOptions{}, `feature 3 "A": the name is already the feature 1`},
		{"name id", named("a", "id", "b", "c"), blocks, partition.NamedOptions{}, `"id": the name is already the id column`},
		{"category", &coded, blocks, partition.NamedOptions{}, "codes none of the categories"},
	} {
		_, _, err := partition.WriteNamed(t.TempDir(), tc.d, tc.blocks, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "write named files: ") {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
