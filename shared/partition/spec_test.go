package partition

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want   string // want: String() of the spec, or "error: <substring>"
		k, q, kind int
	}{
		{in: "quadrants:3", want: "quadrants:3", k: 3, q: 4},
		{in: "grid:2,5", want: "grid:2,5", k: 2, q: 5},
		{in: " Grid: 2 , 5 ", want: "grid:2,5", k: 2, q: 5},
		{in: "horizontal:7", want: "horizontal:7", k: 7, q: 1},
		{in: "vertical:4", want: "vertical:4", k: 1, q: 4},
		{in: "grid:1,1", want: "grid:1,1", k: 1, q: 1},
		{in: "quadrants", want: "error: no ':'"},
		{in: "", want: "error: no ':'"},
		{in: "grid:2", want: "error: grid takes K,Q"},
		{in: "grid:2,3,4", want: "error: grid takes K,Q"},
		{in: "horizontal:1,2", want: "error: horizontal takes K"},
		{in: "grid:0,3", want: `error: "0" is not a whole number from 1`},
		{in: "vertical:x", want: `error: "x" is not a whole number`},
		{in: "vertical:-2", want: `error: "-2" is not a whole number`},
		{in: "quadrants:", want: `error: "" is not a whole number`},
		{in: "grid:99999999999999999999,2", want: "error: is not a whole number"},
		{in: "diagonal:3", want: `error: unknown kind "diagonal"`},
	} {
		s, err := Parse(tc.in)
		if e, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), e) {
				t.Errorf("Parse(%q) = %v, %v; want error with %q", tc.in, s, err, e)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if s.String() != tc.want || s.K != tc.k || s.Q != tc.q || s.Seed != 1 || s.Clients() != tc.k*tc.q {
			t.Errorf("Parse(%q) = %+v (%s)", tc.in, s, s)
		}
		if again, err := Parse(s.String()); err != nil || again != s {
			t.Errorf("Parse(String()) of %q = %+v, %v", tc.in, again, err)
		}
	}
	if s, _ := Parse("grid:2,2"); s.WithSeed(-9).Seed != -9 || s.Seed != 1 {
		t.Error("WithSeed")
	}
}

func TestSplitPassesCheck(t *testing.T) {
	img, dense, sp := imageData(41, 4, 6, 1), denseData(37, 11), sparseData(53, 40)
	spImg := toSparse(img)
	for _, tc := range []struct {
		spec    string
		d       *dataset.Dataset
		clients int
	}{
		{"quadrants:1", img, 4},
		{"quadrants:3", img, 12},
		{"grid:2,3", img, 6},
		{"grid:4,11", dense, 44},
		{"grid:1,1", dense, 1},
		{"horizontal:5", dense, 5},
		{"horizontal:37", dense, 37},
		{"vertical:4", dense, 4},
		{"quadrants:2", spImg, 8},
		{"grid:2,3", spImg, 6},
		{"grid:3,4", sp, 12},
		{"grid:2,12", sp, 24}, // more clients per group than some samples have non-zeros
		{"grid:3,1", sp, 3},
		{"horizontal:2", sp, 2},
		{"vertical:3", sp, 3},
	} {
		t.Run(tc.spec+"/"+tc.d.Name, func(t *testing.T) {
			s, _ := Parse(tc.spec)
			blocks := mustSplit(t, tc.spec, tc.d)
			if len(blocks) != tc.clients {
				t.Fatalf("%d blocks, want %d", len(blocks), tc.clients)
			}
			if err := Check(tc.d, blocks); err != nil {
				t.Fatal(err)
			}
			groups := Groups(blocks)
			if len(groups) != s.K {
				t.Fatalf("%d sample groups, want %d: %v", len(groups), s.K, groups)
			}
			n := tc.d.N()
			for g, ks := range groups {
				if len(ks) != s.Q {
					t.Fatalf("group %d has clients %v, want %d", g, ks, s.Q)
				}
				// Near-equal groups: n/K rounded down or up.
				if size := blocks[ks[0]].N(); size != n/s.K && size != (n+s.K-1)/s.K {
					t.Errorf("group %d has %d samples of %d for K=%d", g, size, n, s.K)
				}
			}
			for k, b := range blocks {
				if b.X.IsSparse() != tc.d.X.IsSparse() {
					t.Errorf("client %d: sparse %v, data sparse %v", k, b.X.IsSparse(), tc.d.X.IsSparse())
				}
				if b.Features == nil {
					t.Errorf("client %d: nil Features", k)
				}
			}
		})
	}
}

// Client order: g*Q+q for grid (a group's clients are adjacent), q*K+g for
// quadrants (a quadrant's clients are adjacent).
func TestClientOrder(t *testing.T) {
	d := imageData(12, 4, 4, 1)
	if g := Groups(mustSplit(t, "grid:3,2", d)); !reflect.DeepEqual(g, [][]int{{0, 1}, {2, 3}, {4, 5}}) {
		t.Errorf("grid:3,2 groups %v", g)
	}
	if g := Groups(mustSplit(t, "quadrants:3", d)); !reflect.DeepEqual(g, [][]int{{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}}) {
		t.Errorf("quadrants:3 groups %v", g)
	}
	blocks := mustSplit(t, "vertical:3", d)
	for q, want := range [][]int{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9, 10}, {11, 12, 13, 14, 15, 16}} {
		if !reflect.DeepEqual(blocks[q].Features, want) || blocks[q].N() != 12 {
			t.Errorf("vertical client %d: features %v, %d samples", q, blocks[q].Features, blocks[q].N())
		}
	}
}

func TestQuadrantLayout(t *testing.T) {
	// A 4x4 image: pixel y*4+x; the bias is feature 16.
	blocks := mustSplit(t, "quadrants:2", imageData(20, 4, 4, 1))
	want := [][]int{
		{0, 1, 4, 5},         // top-left
		{2, 3, 6, 7},         // top-right
		{8, 9, 12, 13},       // bottom-left
		{10, 11, 14, 15, 16}, // bottom-right and the bias
	}
	for k, b := range blocks {
		if q := k / 2; !reflect.DeepEqual(b.Features, want[q]) {
			t.Errorf("client %d (quadrant %d): features %v, want %v", k, q, b.Features, want[q])
		}
	}

	// MNIST shape: pixel 0 (top-left) is in quadrant 0 only, the bias
	// (feature 784, the last) in quadrant 3 only.
	const k = 3
	blocks = mustSplit(t, fmt.Sprintf("quadrants:%d", k), imageData(30, 28, 28, 1))
	if len(blocks) != 4*k {
		t.Fatalf("%d clients, want %d", len(blocks), 4*k)
	}
	for c, b := range blocks {
		q := c / k
		if len(b.Features) != 196+q/3 {
			t.Errorf("client %d: %d features", c, len(b.Features))
		}
		if has := slices.Contains(b.Features, 0); has != (q == 0) {
			t.Errorf("client %d (quadrant %d) holds pixel 0: %v", c, q, has)
		}
		if has := slices.Contains(b.Features, 784); has != (q == 3) {
			t.Errorf("client %d (quadrant %d) holds the bias: %v", c, q, has)
		}
	}
}

func TestSplitErrors(t *testing.T) {
	img := imageData(10, 4, 4, 1)
	odd := imageData(10, 3, 4, 0)
	wrong := imageData(10, 4, 4, 1)
	wrong.Image = &dataset.ImageShape{Width: 4, Height: 4} // 16 pixels but 17 features
	for _, tc := range []struct {
		spec string
		d    *dataset.Dataset
		want string
	}{
		{"quadrants:1", denseData(10, 5), "quadrants need image data; dense has no image shape"},
		{"quadrants:1", sparseData(10, 5), "no image shape"},
		{"quadrants:1", odd, "quadrants need an even width and height"},
		{"quadrants:1", wrong, "width*height+extra = 17 features; image is 4x4+0"},
		{"quadrants:11", img, "11 sample groups but only 10 samples"},
		{"horizontal:11", img, "11 sample groups but only 10 samples"},
		{"vertical:18", img, "18 feature groups but only 17 features"},
		{"grid:2,18", img, "18 feature groups but only 17 features"},
	} {
		_, err := mustParse(t, tc.spec).Split(tc.d)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "partition "+tc.spec) {
			t.Errorf("%s of %s: %v, want %q", tc.spec, tc.d.Name, err, tc.want)
		}
	}
	for _, s := range []Spec{{Kind: "grid", K: 0, Q: 1}, {Kind: Quadrants, K: 1, Q: 3}, {Kind: Vertical, K: 2, Q: 2}, {Kind: "x", K: 1, Q: 1}} {
		if _, err := s.Split(img); err == nil {
			t.Errorf("Spec literal %+v accepted", s)
		}
	}
	bad := denseData(4, 3)
	bad.IDs[1] = bad.IDs[0]
	if _, err := mustParse(t, "grid:2,2").Split(bad); err == nil || !strings.Contains(err.Error(), `record id "s0"`) {
		t.Errorf("duplicate ids: %v", err)
	}
}

func mustParse(t *testing.T, spec string) Spec {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSplitDeterministicPerSeed(t *testing.T) {
	for _, d := range []*dataset.Dataset{imageData(40, 4, 4, 1), sparseData(40, 30)} {
		s := mustParse(t, "grid:4,3")
		a, _ := s.Split(d)
		b, _ := s.Split(d)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two splits with one seed differ", d.Name)
		}
		c, _ := s.WithSeed(2).Split(d)
		if reflect.DeepEqual(a[0].IDs, c[0].IDs) {
			t.Errorf("%s: seeds 1 and 2 give the same sample group", d.Name)
		}
	}
}

// Labels are sorted in the file; the shuffle must still give every
// sample group both classes, and held-out flags travel with the samples.
func TestSampleGroupsShuffled(t *testing.T) {
	d := denseData(100, 3)
	blocks := mustSplit(t, "horizontal:4", d)
	for k, b := range blocks {
		pos, held := 0, 0
		for r, y := range b.Y {
			if y > 0 {
				pos++
			}
			i := rowsOf(d, b.IDs[r:r+1])[0]
			if b.Heldout[r] != d.Heldout[i] || b.Y[r] != d.Y[i] {
				t.Fatalf("client %d: sample %s lost its label or flag", k, b.IDs[r])
			}
			if b.Heldout[r] {
				held++
			}
		}
		if pos == 0 || pos == b.N() || held == 0 {
			t.Errorf("client %d: %d of %d positive, %d held out", k, pos, b.N(), held)
		}
	}
}

// Sparse grid deals every sample's non-zeros over its group's Q clients:
// each client gets floor or ceil of nnz/Q of them, and the shares over all
// samples are balanced.
func TestSparseGridDealsEntries(t *testing.T) {
	const q = 3
	d := sparseData(60, 40)
	blocks := mustSplit(t, fmt.Sprintf("grid:2,%d", q), d)
	total := make([]int, len(blocks))
	for _, ks := range Groups(blocks) {
		for r, id := range blocks[ks[0]].IDs {
			i := rowsOf(d, []string{id})[0]
			nnz := d.X.Indptr[i+1] - d.X.Indptr[i]
			for _, k := range ks {
				got := blocks[k].X.Indptr[r+1] - blocks[k].X.Indptr[r]
				if got != nnz/q && got != (nnz+q-1)/q {
					t.Errorf("sample %s: client %d holds %d of %d non-zeros", id, k, got, nnz)
				}
				total[k] += got
			}
		}
	}
	for k := range total {
		if k%q == 0 && (total[k] > total[k+1]+2 || total[k] > total[k+2]+2) {
			t.Errorf("unbalanced shares %v", total)
		}
	}
	// The blocks of a group list the features they hold any entry of.
	for k, b := range blocks {
		used := map[int]bool{}
		for _, c := range b.X.Indices {
			used[b.Features[c]] = true
		}
		if len(used) != len(b.Features) {
			t.Errorf("client %d lists %d features but holds entries of %d", k, len(b.Features), len(used))
		}
	}
}

func TestGroupsAndSummary(t *testing.T) {
	mk := func(ids ...string) Block { return Block{IDs: ids} }
	blocks := []Block{mk("a", "b"), mk("c"), mk("b", "a"), mk("c"), mk("d")}
	if g := Groups(blocks); !reflect.DeepEqual(g, [][]int{{0, 2}, {1, 3}, {4}}) {
		t.Errorf("Groups = %v", g)
	}
	s := Summary(mustSplit(t, "grid:2,2", denseData(10, 4)))
	if want := "client 3: group 1, 5 samples (1 held out), 2 features, 10 entries\n"; !strings.HasSuffix(s, want) {
		t.Errorf("Summary:\n%s", s)
	}
}
