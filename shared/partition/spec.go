package partition

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
)

// Kinds of partition.
const (
	Quadrants  = "quadrants"
	Grid       = "grid"
	Horizontal = "horizontal"
	Vertical   = "vertical"
)

// Spec is a parsed partition: K sample groups x Q feature groups.
type Spec struct {
	Kind string
	K, Q int
	Seed uint64
}

// Parse reads quadrants:K, grid:K,Q, horizontal:K or vertical:Q.
func Parse(text string) (Spec, error) {
	kind, args, ok := strings.Cut(strings.TrimSpace(text), ":")
	if !ok {
		return Spec{}, fmt.Errorf("partition %q: want quadrants:K, grid:K,Q, horizontal:K or vertical:Q", text)
	}
	var nums []int
	for _, a := range strings.Split(args, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil || v < 1 {
			return Spec{}, fmt.Errorf("partition %q: %q is not a whole number from 1", text, a)
		}
		nums = append(nums, v)
	}
	s := Spec{Kind: kind, Seed: 1}
	want := 1
	switch kind {
	case Quadrants:
		s.K, s.Q = nums[0], 4
	case Grid:
		want = 2
		if len(nums) == 2 {
			s.K, s.Q = nums[0], nums[1]
		}
	case Horizontal:
		s.K, s.Q = nums[0], 1
	case Vertical:
		s.K, s.Q = 1, nums[0]
	default:
		return Spec{}, fmt.Errorf("partition %q: unknown kind %q (quadrants, grid, horizontal, vertical)", text, kind)
	}
	if len(nums) != want {
		return Spec{}, fmt.Errorf("partition %q: %s takes %d number(s)", text, kind, want)
	}
	return s, nil
}

// WithSeed returns the spec with the seed of the sample shuffle.
func (s Spec) WithSeed(seed int64) Spec {
	s.Seed = uint64(seed)
	return s
}

// Clients returns the number of blocks the spec makes.
func (s Spec) Clients() int { return s.K * s.Q }

func (s Spec) String() string {
	switch s.Kind {
	case Grid:
		return fmt.Sprintf("grid:%d,%d", s.K, s.Q)
	case Vertical:
		return fmt.Sprintf("vertical:%d", s.Q)
	}
	return fmt.Sprintf("%s:%d", s.Kind, s.K)
}

// sampleGroups shuffles the sample order (data files are often sorted by
// label) and cuts it into K contiguous, near-equal groups.
func (s Spec) sampleGroups(n int) ([][]int, error) {
	if s.K > n {
		return nil, fmt.Errorf("%d sample groups for %d samples", s.K, n)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x9a97))
	rng.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
	groups := make([][]int, s.K)
	for g := range groups {
		groups[g] = order[g*n/s.K : (g+1)*n/s.K]
	}
	return groups, nil
}

// featureGroups returns the Q feature sets of dense splits.
func (s Spec) featureGroups(d *dataset.Dataset) ([][]int, error) {
	m := d.M()
	if s.Kind == Quadrants {
		img := d.Image
		if img == nil || img.Width%2 != 0 || img.Height%2 != 0 || img.Width*img.Height+img.Extra != m {
			return nil, fmt.Errorf("quadrants need image data of even width and height; %s is not", d.Name)
		}
		fg := make([][]int, 4)
		for j := 0; j < img.Width*img.Height; j++ {
			r, c := j/img.Width, j%img.Width
			q := 0
			if r >= img.Height/2 {
				q = 2
			}
			if c >= img.Width/2 {
				q++
			}
			fg[q] = append(fg[q], j)
		}
		for j := img.Width * img.Height; j < m; j++ {
			fg[3] = append(fg[3], j) // the bias goes with the 4th quadrant
		}
		return fg, nil
	}
	if s.Q > m {
		return nil, fmt.Errorf("%d feature groups for %d features", s.Q, m)
	}
	fg := make([][]int, s.Q)
	for q := range fg {
		for j := q * m / s.Q; j < (q+1)*m/s.Q; j++ {
			fg[q] = append(fg[q], j)
		}
	}
	return fg, nil
}

// Split cuts d into blocks. Quadrants: client q*K+g holds quadrant q of
// sample group g (the first quarter of the clients holds the first
// quadrant, as in papers/001). Grid, horizontal and vertical: client g*Q+q.
// Sparse data under grid deals each sample's non-zero features to the Q
// clients of its group in turn (papers/001 sec. 2.2); blocks keep the
// data's storage kind.
func (s Spec) Split(d *dataset.Dataset) ([]Block, error) {
	groups, err := s.sampleGroups(d.N())
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", s, err)
	}
	if s.Kind == Grid && d.X.IsSparse() && s.Q > 1 {
		return s.splitSparseDealt(d, groups), nil
	}
	fg, err := s.featureGroups(d)
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", s, err)
	}
	blocks := make([]Block, s.K*len(fg))
	for g, rows := range groups {
		for q, feats := range fg {
			k := g*len(fg) + q
			if s.Kind == Quadrants {
				k = q*s.K + g
			}
			blocks[k] = cut(d, rows, feats)
		}
	}
	return blocks, nil
}

func meta(d *dataset.Dataset, rows []int) Block {
	b := Block{NumFeatures: d.M(), IDs: make([]string, len(rows)), Y: make([]float64, len(rows)), Heldout: make([]bool, len(rows))}
	for r, i := range rows {
		b.IDs[r], b.Y[r], b.Heldout[r] = d.IDs[i], d.Y[i], d.Heldout[i]
	}
	return b
}

// cut returns the block of the given rows restricted to feats (ascending).
func cut(d *dataset.Dataset, rows, feats []int) Block {
	b := meta(d, rows)
	b.Features = feats
	if !d.X.IsSparse() {
		b.X = dataset.NewDense(len(rows), len(feats))
		for r, i := range rows {
			src := d.X.Data[i*d.M() : (i+1)*d.M()]
			dst := b.X.Data[r*len(feats) : (r+1)*len(feats)]
			for c, j := range feats {
				dst[c] = src[j]
			}
		}
		return b
	}
	local := make(map[int32]int32, len(feats))
	for c, j := range feats {
		local[int32(j)] = int32(c)
	}
	b.X = dataset.NewSparseBuilder(len(feats))
	var idx []int32
	var val []float64
	for _, i := range rows {
		idx, val = idx[:0], val[:0]
		ri, rv := d.X.Row(i)
		for k, j := range ri {
			if c, ok := local[j]; ok {
				idx = append(idx, c)
				val = append(val, rv[k])
			}
		}
		b.X.AppendRow(idx, val)
	}
	return b
}

// splitSparseDealt deals every sample's non-zero entries to the Q clients
// of its group in turn; a block's features are those it holds any entry of.
func (s Spec) splitSparseDealt(d *dataset.Dataset, groups [][]int) []Block {
	blocks := make([]Block, s.K*s.Q)
	for g, rows := range groups {
		// First pass: which features each client of the group sees.
		seen := make([]map[int32]bool, s.Q)
		for q := range seen {
			seen[q] = map[int32]bool{}
		}
		for _, i := range rows {
			idx, _ := d.X.Row(i)
			for k, j := range idx {
				seen[k%s.Q][j] = true
			}
		}
		for q := 0; q < s.Q; q++ {
			b := meta(d, rows)
			for j := 0; j < d.M(); j++ {
				if seen[q][int32(j)] {
					b.Features = append(b.Features, j)
				}
			}
			local := make(map[int32]int32, len(b.Features))
			for c, j := range b.Features {
				local[int32(j)] = int32(c)
			}
			b.X = dataset.NewSparseBuilder(len(b.Features))
			var idx []int32
			var val []float64
			for _, i := range rows {
				idx, val = idx[:0], val[:0]
				ri, rv := d.X.Row(i)
				for k, j := range ri {
					if k%s.Q == q {
						idx = append(idx, local[j])
						val = append(val, rv[k])
					}
				}
				b.X.AppendRow(idx, val)
			}
			blocks[g*s.Q+q] = b
		}
	}
	return blocks
}

// Groups returns, per sample group, the clients holding its samples
// (clients with identical sample id sets form a group).
func Groups(blocks []Block) [][]int {
	key := map[string]int{}
	var out [][]int
	for k, b := range blocks {
		kk := strings.Join(b.IDs, "\x00")
		g, ok := key[kk]
		if !ok {
			g = len(out)
			key[kk] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], k)
	}
	return out
}
