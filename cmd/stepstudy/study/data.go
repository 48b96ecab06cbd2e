// Package study is a study, not product code: a plaintext, in-process
// simulator of HyFDCA's dual step on hybrid partitions (K sample groups x Q
// feature holders), used to compare candidate steps by rounds to a
// relative loss (P-P*)/P*: the product's block step came from it. It models what each party knows: a group's
// holders know their own entries, the exact per-sample sums over holders
// (margins x_i.w, squared norms, x_i.u), the sum of their partial Grams of
// the picked samples (the true Gram only when holders hold whole features
// of the group's samples), and what the server announces (w, u, step
// sizes, prices). No encryption: float64 throughout.
// docs/results/2026-11-24-step-study.md has the question, the methods and
// the measured tables.
package study

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
)

// row is a sparse vector with global feature indexes.
type row struct {
	idx []int32
	val []float64
}

// holder is one client's part of its group's samples: parts[r] is its
// share of the r-th sample of the group (global feature indexes).
type holder struct {
	client int
	parts  []row
}

// group is one sample group: its training samples (positions in the
// problem's training order) and its holders.
type group struct {
	samples []int
	holders []holder
	// blocks is true when the holders hold disjoint feature sets, so that
	// the summed partial Grams are the true Gram.
	blocks bool
}

// Problem is a loaded data set, its partition and the reference optimum.
type Problem struct {
	Name    string
	M       int
	N       int // training samples
	Y       []float64
	Full    []row // full rows of the training samples
	Q       []float64
	Groups  []group
	Clients int
	Loss    loss.Loss
	Lambda  float64
	// BiasFeature is a feature with the same non-zero value BiasValue in
	// every sample (the images' bias, the synthetic data's constant), -1
	// if there is none. Its value is public, so its part of any inner
	// product is known to everyone.
	BiasFeature int
	BiasValue   float64
	PStar       float64
	// CentralPasses are the passes of central sequential SDCA to a relative
	// loss of 1e-1, 1e-2, 1e-3 (0: not within its limit).
	CentralPasses [3]int
	Dealt         bool
}

// Load reads the data, splits it and solves the central problem (cached in
// the user cache directory, keyed by data, loss and lambda). With sparse
// set, dense data is stored sparse first, so that grid:K,Q deals every
// sample's non-zeros to the Q holders (the hardest case for Gram sums).
func Load(data, part string, lossName string, lambda float64, sparse bool) (*Problem, error) {
	l, err := loss.Parse(lossName)
	if err != nil {
		return nil, err
	}
	d, err := dataset.Load(data, dataset.Options{})
	if err != nil {
		return nil, err
	}
	if sparse && !d.X.IsSparse() {
		m := dataset.NewSparseBuilder(d.M())
		m.Indices, m.Values = []int32{}, []float64{}
		for i := 0; i < d.N(); i++ {
			_, val := d.X.Row(i)
			r := sparseRow(nil, val, nil)
			m.AppendRow(r.idx, r.val)
		}
		d.X = m
	}
	spec, err := partition.Parse(part)
	if err != nil {
		return nil, err
	}
	blocks, err := spec.Split(d)
	if err != nil {
		return nil, err
	}
	p := &Problem{Name: data, M: d.M(), Loss: l, Lambda: lambda, Clients: len(blocks), BiasFeature: -1}
	p.Dealt = spec.Kind == partition.Grid && d.X.IsSparse() && spec.Q > 1
	pos := map[string]int{}
	for i := 0; i < d.N(); i++ {
		if d.Heldout[i] {
			continue
		}
		pos[d.IDs[i]] = p.N
		p.N++
		idx, val := d.X.Row(i)
		p.Full = append(p.Full, sparseRow(idx, val, nil))
		p.Y = append(p.Y, d.Y[i])
	}
	p.Q = make([]float64, p.N)
	for i, r := range p.Full {
		p.Q[i] = dot(r, r)
	}
	// The bias: a feature every training sample holds with one value.
	if last := p.M - 1; last >= 0 {
		v := math.NaN()
		ok := true
		for _, r := range p.Full {
			n := len(r.idx)
			if n == 0 || int(r.idx[n-1]) != last || (!math.IsNaN(v) && r.val[n-1] != v) {
				ok = false
				break
			}
			v = r.val[n-1]
		}
		if ok && v != 0 {
			p.BiasFeature, p.BiasValue = last, v
		}
	}
	for _, members := range partition.Groups(blocks) {
		b0 := &blocks[members[0]]
		g := group{blocks: !p.Dealt}
		// Training samples of the group, in block row order.
		var rows []int
		for r, id := range b0.IDs {
			if b0.Heldout[r] {
				continue
			}
			g.samples = append(g.samples, pos[id])
			rows = append(rows, r)
		}
		for _, c := range members {
			b := &blocks[c]
			if len(b.IDs) != len(b0.IDs) {
				return nil, fmt.Errorf("group of client %d: blocks of different sizes", c)
			}
			h := holder{client: c}
			feat := make([]int32, len(b.Features))
			for j, f := range b.Features {
				feat[j] = int32(f)
			}
			for _, r := range rows {
				if b.IDs[r] != b0.IDs[r] {
					return nil, fmt.Errorf("group of client %d: rows in different orders", c)
				}
				idx, val := b.X.Row(r)
				h.parts = append(h.parts, sparseRow(idx, val, feat))
			}
			g.holders = append(g.holders, h)
		}
		p.Groups = append(p.Groups, g)
	}
	if err := p.reference(data); err != nil {
		return nil, err
	}
	return p, nil
}

// sparseRow converts a matrix row (dense when idx is nil) to a sparse row,
// mapping local columns through feat (nil: identity) and dropping zeros.
func sparseRow(idx []int32, val []float64, feat []int32) row {
	var r row
	for k, v := range val {
		if v == 0 {
			continue
		}
		j := int32(k)
		if idx != nil {
			j = idx[k]
		}
		if feat != nil {
			j = feat[j]
		}
		r.idx = append(r.idx, j)
		r.val = append(r.val, v)
	}
	return r
}

func dot(a, b row) float64 {
	s := 0.0
	i, j := 0, 0
	for i < len(a.idx) && j < len(b.idx) {
		switch {
		case a.idx[i] < b.idx[j]:
			i++
		case a.idx[i] > b.idx[j]:
			j++
		default:
			s += a.val[i] * b.val[j]
			i++
			j++
		}
	}
	return s
}

func dotDense(r row, w []float64) float64 {
	s := 0.0
	for k, j := range r.idx {
		s += r.val[k] * w[j]
	}
	return s
}

func addTo(r row, a float64, w []float64) {
	for k, j := range r.idx {
		w[j] += a * r.val[k]
	}
}

type refCache struct {
	PStar  float64 `json:"pstar"`
	Passes [3]int  `json:"passes"`
}

// reference computes P* with the repository's central solver and the
// passes plain sequential SDCA (random order, no shrinking) needs to bring
// the best primal so far to 1e-1, 1e-2, 1e-3.
func (p *Problem) reference(data string) error {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "hyfed-stepstudy")
	key := strings.NewReplacer("/", "_", ":", "_", ",", "_").Replace(fmt.Sprintf("%s-%s-%g.json", data, p.Loss.Name(), p.Lambda))
	file := filepath.Join(dir, key)
	var c refCache
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &c) == nil && c.PStar > 0 {
		p.PStar, p.CentralPasses = c.PStar, c.Passes
		return nil
	}
	d, err := dataset.Load(data, dataset.Options{})
	if err != nil {
		return err
	}
	res, err := central.Solve(context.Background(), d, central.Config{Lambda: p.Lambda, Loss: p.Loss, Tol: 1e-9, MaxEpochs: 5000, Seed: 1})
	if err != nil {
		return err
	}
	c.PStar = res.Primal
	p.PStar = c.PStar
	c.Passes = p.sequentialPasses(400)
	p.PStar, p.CentralPasses = c.PStar, c.Passes
	if os.MkdirAll(dir, 0o755) == nil {
		b, _ := json.Marshal(c)
		_ = os.WriteFile(file, b, 0o644)
	}
	return nil
}

// sequentialPasses runs plain sequential SDCA on the pooled training data
// for at most max passes and returns the first pass at which the best
// primal so far is within 1e-1, 1e-2, 1e-3 of P* (0: not reached).
func (p *Problem) sequentialPasses(max int) [3]int {
	var out [3]int
	w := make([]float64, p.M)
	alpha := make([]float64, p.N)
	lambdaN := p.Lambda * float64(p.N)
	order := make([]int, p.N)
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(7, 7))
	best := math.Inf(1)
	for pass := 1; pass <= max && out[2] == 0; pass++ {
		rng.Shuffle(p.N, func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			d := p.Loss.Step(alpha[i], p.Y[i], dotDense(p.Full[i], w), p.Q[i], lambdaN)
			if d != 0 {
				alpha[i] += d
				addTo(p.Full[i], d/lambdaN, w)
			}
		}
		best = math.Min(best, p.primal(w, nil))
		for t, target := range []float64{1e-1, 1e-2, 1e-3} {
			if out[t] == 0 && (best-p.PStar)/p.PStar <= target {
				out[t] = pass
			}
		}
	}
	return out
}
