package partition

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
)

// image returns n 4x4 "images" plus a bias feature.
func image(n int) *dataset.Dataset {
	d := &dataset.Dataset{Name: "img", X: dataset.NewDense(n, 17), Image: &dataset.ImageShape{Width: 4, Height: 4, Extra: 1}}
	for i := 0; i < n; i++ {
		for j := 0; j < 16; j++ {
			d.X.Data[i*17+j] = float64((i+j)%5) / 4
		}
		d.X.Data[i*17+16] = 10
		d.Y = append(d.Y, float64(1-2*(i%2)))
		d.IDs = append(d.IDs, fmt.Sprintf("s%d", i))
		d.Heldout = append(d.Heldout, i%7 == 0)
	}
	return d
}

func sparse(n, m int) *dataset.Dataset {
	d, err := dataset.Load(fmt.Sprintf("synthetic:%d,%d,0.05,0,3", n, m), dataset.Options{})
	if err != nil {
		panic(err)
	}
	return d
}

func TestSpecsSplitAndCheck(t *testing.T) {
	img, sp := image(40), sparse(60, 200)
	for _, tc := range []struct {
		spec    string
		d       *dataset.Dataset
		clients int
	}{
		{"quadrants:1", img, 4},
		{"quadrants:3", img, 12},
		{"grid:2,3", img, 6},
		{"horizontal:5", img, 5},
		{"vertical:4", img, 4},
		{"grid:3,4", sp, 12},
		{"horizontal:2", sp, 2},
		{"vertical:3", sp, 3},
	} {
		t.Run(tc.spec+"/"+tc.d.Name, func(t *testing.T) {
			s, err := Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := s.Split(tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if len(blocks) != tc.clients || s.Clients() != tc.clients {
				t.Fatalf("%d blocks, want %d", len(blocks), tc.clients)
			}
			if err := Check(tc.d, blocks); err != nil {
				t.Fatal(err)
			}
			for k, b := range blocks {
				if b.X.IsSparse() != tc.d.X.IsSparse() {
					t.Fatalf("client %d storage changed", k)
				}
			}
			again, _ := s.Split(tc.d)
			if fmt.Sprint(again[0].IDs) != fmt.Sprint(blocks[0].IDs) {
				t.Fatal("not deterministic")
			}
		})
	}
}

func TestQuadrantLayout(t *testing.T) {
	d := image(20)
	s, _ := Parse("quadrants:2")
	blocks, err := s.Split(d)
	if err != nil {
		t.Fatal(err)
	}
	// Clients 0,1 hold quadrant 0 (top-left: pixels 0,1,4,5); clients 6,7
	// quadrant 3 with the bias (feature 16).
	if fmt.Sprint(blocks[0].Features) != "[0 1 4 5]" || fmt.Sprint(blocks[1].Features) != "[0 1 4 5]" {
		t.Fatalf("quadrant 0 features %v", blocks[0].Features)
	}
	if fmt.Sprint(blocks[7].Features) != "[10 11 14 15 16]" {
		t.Fatalf("quadrant 3 features %v", blocks[7].Features)
	}
	if g := Groups(blocks); len(g) != 2 || fmt.Sprint(g[0]) != "[0 2 4 6]" {
		t.Fatalf("groups %v", g)
	}
}

func TestCheckCatchesOverlapAndGap(t *testing.T) {
	d := image(10)
	s, _ := Parse("vertical:2")
	blocks, _ := s.Split(d)
	// Overlap: client 1 also claims feature 1 of every sample.
	over := append([]Block(nil), blocks...)
	over[1] = cut(d, idsRows(d, blocks[1].IDs), append([]int{0}, blocks[1].Features...))
	if err := Check(d, over); err == nil || !strings.Contains(err.Error(), "feature 1 held by clients 0 and 1") {
		t.Fatalf("overlap: %v", err)
	}
	// Gap: client 1 drops its last feature (the bias, feature 17).
	gap := append([]Block(nil), blocks...)
	f := blocks[1].Features
	gap[1] = cut(d, idsRows(d, blocks[1].IDs), f[:len(f)-1])
	if err := Check(d, gap); err == nil || !strings.Contains(err.Error(), "feature 17 held by no client") {
		t.Fatalf("gap: %v", err)
	}
	// A sample nobody holds.
	miss := append([]Block(nil), blocks...)
	for k := range miss {
		rows := idsRows(d, blocks[k].IDs)
		miss[k] = cut(d, rows[1:], blocks[k].Features)
	}
	if err := Check(d, miss); err == nil || !strings.Contains(err.Error(), "held by no client") {
		t.Fatalf("missing sample: %v", err)
	}
}

func idsRows(d *dataset.Dataset, ids []string) []int {
	idx := map[string]int{}
	for i, id := range d.IDs {
		idx[id] = i
	}
	var out []int
	for _, id := range ids {
		out = append(out, idx[id])
	}
	return out
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"quadrants", "grid:2", "grid:0,3", "vertical:x", "diagonal:3", "horizontal:1,2"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	if _, err := (Spec{Kind: Quadrants, K: 1, Q: 4}).Split(sparse(10, 30)); err == nil {
		t.Error("quadrants of non-image data accepted")
	}
}

func TestFileRoundTrip(t *testing.T) {
	for _, d := range []*dataset.Dataset{image(12), sparse(30, 100)} {
		s, _ := Parse("grid:2,2")
		blocks, err := s.Split(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"libsvm", "csv"} {
			for k := range blocks {
				var buf bytes.Buffer
				write := WriteLIBSVM
				if format == "csv" {
					write = WriteCSV
				}
				if err := write(&buf, &blocks[k]); err != nil {
					t.Fatal(err)
				}
				got, err := ReadBlock(&buf, "b")
				if err != nil {
					t.Fatalf("%s client %d: %v", format, k, err)
				}
				if fmt.Sprint(got.Features) != fmt.Sprint(blocks[k].Features) || fmt.Sprint(got.IDs) != fmt.Sprint(blocks[k].IDs) ||
					fmt.Sprint(got.Heldout) != fmt.Sprint(blocks[k].Heldout) || fmt.Sprint(got.Y) != fmt.Sprint(blocks[k].Y) {
					t.Fatalf("%s client %d: metadata differs", format, k)
				}
				for r := 0; r < got.N(); r++ {
					for c := range got.Features {
						if got.X.At(r, c) != blocks[k].X.At(r, c) {
							t.Fatalf("%s client %d: entry (%d,%d) %v != %v", format, k, r, c, got.X.At(r, c), blocks[k].X.At(r, c))
						}
					}
				}
			}
		}
	}
}

func TestReadBlockErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"+1 1:1 # a\n", "b:1: not a hyfed block file"},
		{"# hyfed-block v1 features=10 cols=1-3\n+1 5:1 # a\n", "b:2: field 2: feature 5 is not among the block's columns"},
		{"# hyfed-block v1 features=10 cols=1-3\n+1 1:1 # a\n-1 2:1 # a\n", "b:3: record id \"a\" appears twice"},
		{"# hyfed-block v1 features=10 cols=1-3\n2 1:1 # a\n", "b:2: field 1: label"},
		{"# hyfed-block v1 features=10 cols=1-3\n+1 1:Inf # a\n", "b:2: field 2"},
		{"# hyfed-block v1 features=10 cols=3-1\n", "b:1: field cols"},
		{"# hyfed-block v1 features=4\nid,label,heldout,f1\na,+1,0,x\n", "b:3: field f1"},
		{"# hyfed-block v1 features=x cols=1\n", "b:1: field features"},
	} {
		_, err := ReadBlock(strings.NewReader(tc.in), "b")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzReadBlock(f *testing.F) {
	var buf bytes.Buffer
	d := image(3)
	blocks, _ := Spec{Kind: Grid, K: 1, Q: 2, Seed: 1}.Split(d)
	WriteLIBSVM(&buf, &blocks[0])
	f.Add(buf.String())
	buf.Reset()
	WriteCSV(&buf, &blocks[1])
	f.Add(buf.String())
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ReadBlock(strings.NewReader(s), "fuzz")
		if err == nil {
			if verr := b.Validate(); verr != nil {
				t.Fatalf("invalid block returned: %v", verr)
			}
		}
	})
}

func ExampleSpec_Split() {
	d, _ := dataset.Load("synthetic:100,8", dataset.Options{})
	s, _ := Parse("grid:2,4")
	blocks, _ := s.Split(d)
	fmt.Println(len(blocks), blocks[0].N(), blocks[0].Features, Check(d, blocks))
	// Output: 8 50 [0 1] <nil>
}
