package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
)

// Kinds of partition.
const (
	Quadrants  = "quadrants"  // image quadrants x K sample groups (the HyFDCA paper's supplement, MNIST)
	Grid       = "grid"       // K sample groups x Q feature groups
	Horizontal = "horizontal" // K sample groups, all features each
	Vertical   = "vertical"   // all samples, Q feature groups
)

// maxGroups bounds K and Q so that K*Q cannot overflow; no data set has
// anywhere near that many samples per client anyway.
const maxGroups = 1 << 20

// Spec is a parsed partition: K sample groups x Q feature groups, K*Q
// clients. Seed drives the sample shuffle that precedes grouping, because
// data files are often sorted by label (the mnist JSON goes digit by digit)
// and contiguous groups of a sorted file would each see one class.
type Spec struct {
	Kind string
	K, Q int
	Seed int64
}

// Parse reads quadrants:K, grid:K,Q, horizontal:K or vertical:Q, with
// K, Q >= 1. The seed is 1; change it with WithSeed.
func Parse(spec string) (Spec, error) {
	const forms = "want quadrants:K, grid:K,Q, horizontal:K or vertical:Q"
	kind, args, ok := strings.Cut(strings.TrimSpace(spec), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	if !ok {
		return Spec{}, fmt.Errorf("partition %q: no ':' (%s)", spec, forms)
	}
	want, names := 1, "K"
	switch kind {
	case Grid:
		want, names = 2, "K,Q (sample groups, feature groups)"
	case Quadrants, Horizontal:
		names = "K (sample groups)"
	case Vertical:
		names = "Q (feature groups)"
	default:
		return Spec{}, fmt.Errorf("partition %q: unknown kind %q (%s)", spec, kind, forms)
	}
	parts := strings.Split(args, ",")
	if len(parts) != want {
		return Spec{}, fmt.Errorf("partition %q: %s takes %s", spec, kind, names)
	}
	nums := make([]int, want)
	for i, a := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil || v < 1 || v > maxGroups {
			return Spec{}, fmt.Errorf("partition %q: %q is not a whole number from 1 to %d", spec, strings.TrimSpace(a), maxGroups)
		}
		nums[i] = v
	}
	s := Spec{Kind: kind, Seed: 1}
	switch kind {
	case Quadrants:
		s.K, s.Q = nums[0], 4
	case Grid:
		s.K, s.Q = nums[0], nums[1]
	case Horizontal:
		s.K, s.Q = nums[0], 1
	case Vertical:
		s.K, s.Q = 1, nums[0]
	}
	return s, nil
}

// WithSeed returns the spec with another seed for the sample shuffle.
func (s Spec) WithSeed(seed int64) Spec {
	s.Seed = seed
	return s
}

// Clients returns the number of blocks the spec makes: K*Q.
func (s Spec) Clients() int { return s.K * s.Q }

// String returns the text Parse reads back (the seed is not part of it).
func (s Spec) String() string {
	switch s.Kind {
	case Grid:
		return fmt.Sprintf("grid:%d,%d", s.K, s.Q)
	case Vertical:
		return fmt.Sprintf("vertical:%d", s.Q)
	}
	return fmt.Sprintf("%s:%d", s.Kind, s.K)
}

// validate catches specs built as literals rather than by Parse.
func (s Spec) validate() error {
	if s.K < 1 || s.Q < 1 || s.K > maxGroups || s.Q > maxGroups {
		return fmt.Errorf("K=%d, Q=%d: both must be from 1 to %d", s.K, s.Q, maxGroups)
	}
	ok := false
	switch s.Kind {
	case Quadrants:
		ok = s.Q == 4
	case Grid:
		ok = true
	case Horizontal:
		ok = s.Q == 1
	case Vertical:
		ok = s.K == 1
	}
	if !ok {
		return fmt.Errorf("kind %q with K=%d, Q=%d is not a partition", s.Kind, s.K, s.Q)
	}
	return nil
}

// Dealt reports whether Split deals d's entries: grid:K,Q with Q > 1 on
// sparse data, whose blocks of one group share feature indexes.
func (s Spec) Dealt(d *dataset.Dataset) bool {
	return s.Kind == Grid && d.X.IsSparse() && s.Q > 1
}

// Split cuts d into s.Clients() blocks. Training and held-out samples are
// both partitioned; every block copies the held-out flags of its samples.
//
// Sample groups: the sample order is shuffled with s.Seed, then cut into K
// contiguous groups whose sizes differ by at most one. Within a block the
// samples keep the shuffled order.
//
// Feature groups and client order:
//   - quadrants:K needs d.Image with even width and height. Quadrant 0 is the
//     top-left, 1 top-right, 2 bottom-left, 3 bottom-right (pixel y*Width+x);
//     the Extra features (the bias) go with quadrant 3. Client q*K+g holds
//     quadrant q of sample group g, so the first quarter of the clients holds
//     the first quadrant, as in the HyFDCA paper's supplement, sec. 2.2.
//   - grid:K,Q on dense data: Q contiguous feature ranges of near-equal size.
//     On sparse data each sample's non-zero entries are dealt to the Q
//     clients of its group in turn (the HyFDCA paper's supplement, sec. 2.2: each gets 1/Q of
//     every sample's non-zero features), starting at a client that rotates
//     from sample to sample so that no client is systematically favoured.
//     Blocks of one group then share feature indexes, but every entry has one
//     holder; a block's Features are the features it holds any entry of.
//     Client g*Q+q.
//   - horizontal:K: K sample groups with all features; client g.
//   - vertical:Q: one group of all samples, Q contiguous feature ranges;
//     client q.
//
// Blocks keep the storage kind of d: sparse data is never densified.
func (s Spec) Split(d *dataset.Dataset) ([]Block, error) {
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("partition %s: %w", s, err)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("partition %s: %w", s, err)
	}
	groups, err := s.sampleGroups(d.N())
	if err != nil {
		return nil, fmt.Errorf("partition %s of %s: %w", s, d.Name, err)
	}
	if s.Dealt(d) {
		return s.splitDealt(d, groups), nil
	}
	fg, err := s.featureGroups(d)
	if err != nil {
		return nil, fmt.Errorf("partition %s of %s: %w", s, d.Name, err)
	}
	blocks := make([]Block, s.K*len(fg))
	col := make([]int32, d.M()) // global -> local column, for sparse cuts
	for q, feats := range fg {
		if d.X.IsSparse() {
			for j := range col {
				col[j] = -1
			}
			for c, j := range feats {
				col[j] = int32(c)
			}
		}
		for g, rows := range groups {
			k := g*len(fg) + q
			if s.Kind == Quadrants {
				k = q*s.K + g
			}
			blocks[k] = cut(d, rows, feats, col)
		}
	}
	return blocks, nil
}

// sampleGroups shuffles the sample order and cuts it into K contiguous,
// near-equal groups.
func (s Spec) sampleGroups(n int) ([][]int, error) {
	if s.K > n {
		return nil, fmt.Errorf("%d sample groups but only %d samples", s.K, n)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(uint64(s.Seed), 0x9a97))
	rng.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
	groups := make([][]int, s.K)
	for g := range groups {
		groups[g] = order[g*n/s.K : (g+1)*n/s.K]
	}
	return groups, nil
}

// featureGroups returns the ascending feature sets of the dense-style
// splits (everything but grid on sparse data).
func (s Spec) featureGroups(d *dataset.Dataset) ([][]int, error) {
	m := d.M()
	if s.Kind == Quadrants {
		img := d.Image
		if img == nil {
			return nil, fmt.Errorf("quadrants need image data; %s has no image shape (try grid:K,4)", d.Name)
		}
		if img.Width < 2 || img.Height < 2 || img.Width%2 != 0 || img.Height%2 != 0 || img.Extra < 0 || img.Width*img.Height+img.Extra != m {
			return nil, fmt.Errorf("quadrants need an even width and height and width*height+extra = %d features; %s is %dx%d+%d",
				m, d.Name, img.Width, img.Height, img.Extra)
		}
		fg := make([][]int, 4)
		for j := 0; j < img.Width*img.Height; j++ {
			y, x := j/img.Width, j%img.Width
			q := 0
			if y >= img.Height/2 {
				q = 2
			}
			if x >= img.Width/2 {
				q++
			}
			fg[q] = append(fg[q], j)
		}
		for j := img.Width * img.Height; j < m; j++ {
			fg[3] = append(fg[3], j) // the bias goes with the 4th quadrant (the HyFDCA paper's supplement)
		}
		return fg, nil
	}
	if s.Q > m {
		return nil, fmt.Errorf("%d feature groups but only %d features", s.Q, m)
	}
	fg := make([][]int, s.Q)
	for q := range fg {
		lo, hi := q*m/s.Q, (q+1)*m/s.Q
		fg[q] = make([]int, 0, hi-lo)
		for j := lo; j < hi; j++ {
			fg[q] = append(fg[q], j)
		}
	}
	return fg, nil
}

// meta returns a block with the ids, labels and flags of rows and no matrix.
func meta(d *dataset.Dataset, rows []int) Block {
	b := Block{NumFeatures: d.M(), IDs: make([]string, len(rows)), Y: make([]float64, len(rows)), Heldout: make([]bool, len(rows))}
	for r, i := range rows {
		b.IDs[r], b.Y[r], b.Heldout[r] = d.IDs[i], d.Y[i], d.Heldout[i]
	}
	return b
}

// cut returns the block of rows restricted to feats (ascending). For sparse
// data col maps every feature of feats to its local column and every other
// feature to -1.
func cut(d *dataset.Dataset, rows, feats []int, col []int32) Block {
	b := meta(d, rows)
	b.Features = slices.Clone(feats) // blocks must not share backing arrays
	m, w := d.M(), len(feats)
	if !d.X.IsSparse() {
		b.X = dataset.NewDense(len(rows), w)
		for r, i := range rows {
			src := d.X.Data[i*m : (i+1)*m]
			dst := b.X.Data[r*w : (r+1)*w]
			for c, j := range feats {
				dst[c] = src[j]
			}
		}
		return b
	}
	b.X = newSparse(w)
	var idx []int32
	var val []float64
	for _, i := range rows {
		idx, val = idx[:0], val[:0]
		ri, rv := d.X.Row(i)
		for t, j := range ri {
			if c := col[j]; c >= 0 {
				idx = append(idx, c)
				val = append(val, rv[t])
			}
		}
		b.X.AppendRow(idx, val)
	}
	return b
}

// newSparse starts a CSR matrix whose index and value slices are never
// nil: Matrix.Row tells sparse rows by a non-nil index slice, so a block
// without any stored entry would otherwise read as dense (and Matrix.At
// panic on it).
func newSparse(cols int) *dataset.Matrix {
	m := dataset.NewSparseBuilder(cols)
	m.Indices, m.Values = []int32{}, []float64{}
	return m
}

// splitDealt is grid:K,Q on sparse data: the t-th non-zero entry of the
// sample at position r of its group goes to client (t+r) mod Q of the group.
// Rotating the start by r keeps the clients' shares within one entry per
// sample of each other on average instead of always favouring client 0.
func (s Spec) splitDealt(d *dataset.Dataset, groups [][]int) []Block {
	m := d.M()
	blocks := make([]Block, s.K*s.Q)
	stamp := make([]int, m) // stamp[j] == k+1: feature j already listed for client k
	col := make([]int32, m) // global -> local column of the current client
	for g, rows := range groups {
		for q := 0; q < s.Q; q++ {
			k := g*s.Q + q
			b := meta(d, rows)
			// The entries of client q in row r are t = first(r), first(r)+Q, ...
			first := func(r int) int { return ((q-r)%s.Q + s.Q) % s.Q }
			for r, i := range rows {
				ri, _ := d.X.Row(i)
				for t := first(r); t < len(ri); t += s.Q {
					if j := ri[t]; stamp[j] != k+1 {
						stamp[j] = k + 1
						b.Features = append(b.Features, int(j))
					}
				}
			}
			slices.Sort(b.Features)
			for c, j := range b.Features {
				col[j] = int32(c)
			}
			b.X = newSparse(len(b.Features))
			var idx []int32
			var val []float64
			for r, i := range rows {
				idx, val = idx[:0], val[:0]
				ri, rv := d.X.Row(i)
				for t := first(r); t < len(ri); t += s.Q {
					idx = append(idx, col[ri[t]]) // ascending: col is monotone on Features
					val = append(val, rv[t])
				}
				b.X.AppendRow(idx, val)
			}
			if b.Features == nil {
				b.Features = []int{}
			}
			blocks[k] = b
		}
	}
	return blocks
}

// Groups returns, per sample group, the clients that hold its samples:
// clients whose sets of record ids are identical form one group. Groups
// are ordered by their first client, clients ascending.
func Groups(blocks []Block) [][]int {
	key := map[string]int{}
	var out [][]int
	for k := range blocks {
		ids := slices.Clone(blocks[k].IDs)
		slices.Sort(ids)
		kk := strings.Join(ids, "\x00")
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

// Summary returns one line per client: its sample group, samples (held
// out), features and stored entries.
func Summary(blocks []Block) string {
	group := make([]int, len(blocks))
	for g, ks := range Groups(blocks) {
		for _, k := range ks {
			group[k] = g
		}
	}
	var sb strings.Builder
	for k := range blocks {
		b := &blocks[k]
		held := 0
		for _, h := range b.Heldout {
			if h {
				held++
			}
		}
		nnz := 0
		if b.X != nil {
			nnz = b.X.NNZ()
		}
		fmt.Fprintf(&sb, "client %d: group %d, %d samples (%d held out), %d features, %d entries\n",
			k, group[k], b.N(), held, len(b.Features), nnz)
	}
	return sb.String()
}
