package curious

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
)

// CoHolder plays the co-holder leak (docs/privacy.md, "Threshold keys"): a
// participant A that shares a sample group with other holders opens, every
// round, the full inner products x_n.u of its samples with the round's
// primal direction u (it must: it prices the candidate steps with them).
// Subtracting its own part x_{A,n}.u_A leaves the other holders' part, one
// number per sample and round. The server knows u on every feature (it
// sends each holder its part), so A with the server has one linear equation
// a round in the other holders' features of each of its samples; no key,
// threshold or not, stands in the way, since A is entitled to the sums.
//
// It watches a run from the server's side of the transport with A's key and
// A's block: the trial direction sent to each holder (KindTrial: A's own
// part is its rows times its direction) and the sum A is sent back (KindIP
// with a grid), which A's key opens.
type CoHolder struct {
	mu     sync.Mutex
	key    seal.Key // opens what A opens
	a      int
	block  *partition.Block // A's
	others []int            // the other holders of A's group, in the order of the unknown's columns
	slots  []int            // A's samples' slots (its setup)
	u      map[int]map[int][]float64
	own    []float64
	eqs    []coEquation
}

// coEquation is one round's: the other holders' directions, concatenated,
// and per sample of A the other holders' part of x_n.u.
type coEquation struct {
	round int
	u     []float64
	rest  []float64
}

// NewCoHolder watches participant a, whose key is key (nil: SetKey gives
// it later) and whose block is block, and the other holders of its sample
// group (participant indexes).
func NewCoHolder(key seal.Key, a int, block *partition.Block, others []int) *CoHolder {
	return &CoHolder{key: key, a: a, block: block, others: slices.Clone(others), u: map[int]map[int][]float64{}}
}

// Observe takes one message between the server and a participant (the
// signature of protocol.Memory.Observe and experiment.Options.Observe).
// Sealed values are opened at once: the server reuses chunks when it adds.
func (h *CoHolder) Observe(toServer bool, client int, m *protocol.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !toServer && client == h.a && m.Kind == protocol.KindSetup && m.Setup != nil:
		h.slots = slices.Clone(m.Setup.Slots)
	case !toServer && m.Kind == protocol.KindTrial && slices.Contains(h.others, client):
		if h.u[m.Round] == nil {
			h.u[m.Round] = map[int][]float64{}
		}
		h.u[m.Round][client] = slices.Clone(m.W)
	case !toServer && client == h.a && m.Kind == protocol.KindTrial:
		// A's part, as A computes it (before sealing rounds it).
		h.own = make([]float64, h.block.N())
		for i := range h.own {
			h.own[i] = h.block.X.Dot(i, m.W)
		}
	case !toServer && client == h.a && m.Kind == protocol.KindIP && m.Grid != nil:
		sum := h.open(m.Sealed)
		us := h.u[m.Round]
		if sum == nil || h.own == nil || len(us) != len(h.others) {
			return // a round the other holders sat out: no equation
		}
		e := coEquation{round: m.Round, rest: make([]float64, len(sum))}
		for _, k := range h.others {
			e.u = append(e.u, us[k]...)
		}
		for i := range sum {
			e.rest[i] = sum[i] - h.own[i]
		}
		h.eqs = append(h.eqs, e)
		h.own = nil
		delete(h.u, m.Round)
	}
}

// SetKey gives the watcher A's key, for a key A makes during the run (its
// own key of a threshold key): nothing is opened before.
func (h *CoHolder) SetKey(key seal.Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.key = key
}

// HasKey reports whether the watcher has A's key.
func (h *CoHolder) HasKey() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.key != nil
}

// open opens v at A's slots (zeros for an empty vector: a zero direction).
func (h *CoHolder) open(v seal.Vec) []float64 {
	if h.slots == nil || h.key == nil {
		return nil
	}
	vals, err := seal.OpenSlots(h.key, v, h.slots)
	if err != nil {
		return nil
	}
	return vals
}

// Rounds returns the rounds that gave equations, in order.
func (h *CoHolder) Rounds() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]int, len(h.eqs))
	for i, e := range h.eqs {
		out[i] = e.round
	}
	return out
}

// Reconstruct solves the equations of the first n rounds that gave any
// (all if n <= 0) for the other holders' features of every sample of A, by
// least squares (the pseudo-inverse on the directions the rounds span). It
// returns the estimate (A's samples in its block's order x the other
// holders' features, concatenated in the order of others) and the rank the
// rounds' directions reach.
func (h *CoHolder) Reconstruct(n int) (*mat.Dense, int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	eqs := h.eqs
	if n > 0 && n < len(eqs) {
		eqs = eqs[:n]
	}
	if len(eqs) == 0 {
		return nil, 0, fmt.Errorf("curious: co-holder %d: no equations", h.a)
	}
	cols, rows := len(eqs[0].u), len(eqs[0].rest)
	a := mat.NewDense(len(eqs), cols, nil)
	b := mat.NewDense(len(eqs), rows, nil)
	for t, e := range eqs {
		if len(e.u) != cols || len(e.rest) != rows {
			return nil, 0, fmt.Errorf("curious: co-holder %d: round %d has %d features and %d samples, want %d and %d", h.a, e.round, len(e.u), len(e.rest), cols, rows)
		}
		a.SetRow(t, e.u)
		b.SetRow(t, e.rest)
	}
	// Each holder's part is rounded to the fixed-point grid when sealed.
	x, rank, err := leastSquares(a, b, sealedNoise*math.Sqrt(float64(len(h.others)+1)))
	if err != nil {
		return nil, 0, fmt.Errorf("curious: co-holder %d: %w", h.a, err)
	}
	var out mat.Dense
	out.CloneFrom(x.T())
	return &out, rank, nil
}
