package curious

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// Reconstruction is what an attack recovered of one client's block: rows in
// the order of the client's hello (the order the server knows its samples
// in), columns the client's features.
type Reconstruction struct {
	Attack     string // "ip" or "dual"
	Client     int
	Pseudonyms []string // the server's name for each row (nil if the hello was missed)
	Slots      []int    // layout slot of each row
	Features   []int    // global feature index of each column (nil if the hello was missed)
	// X is the estimate; nil if the attack had nothing to go on.
	X *mat.Dense
	// Target marks the rows the attack aims at: every sample for the
	// inner-product attack, the training samples for the dual attack
	// (held-out samples never get a dual value). Rows the equations do not
	// determine are left at zero, the guess of a server that learned nothing.
	Target []bool
	// Rounds is the number of distinct rounds that gave equations, Equations
	// the number of equations per unknown row (IP) or column (dual), Unknowns
	// the length of that unknown and Rank how many of its directions the
	// equations determine: the attack is complete when Rank reaches the
	// rank of the data (at most Unknowns).
	Rounds, Equations, Unknowns, Rank int
	// Unreadable counts the sealed vectors from or to this client the
	// attacker could not open (all of them under BGV).
	Unreadable int
}

// rankTol is the relative singular value below which a direction of the
// stacked vectors counts as absent: well above float64 rounding (measured
// 1e-16 relative) and the drift between the w a participant moves itself
// and the one the server sent (a direction at 1e-11 made one MNIST run's
// error 2.3 instead of 0.026), below the faintest real direction (a pixel
// set in one MNIST digit: 3e-9 relative).
const rankTol = 1e-10

// sealedNoise is the standard deviation of the rounding of a sealed value to
// the fixed-point grid (uniform over one step of 2^-FracBits): the only
// noise in the inner products the attack reads.
var sealedNoise = math.Ldexp(1, -seal.FracBits) / math.Sqrt(12)

// ReconstructIP runs the inner-product attack on client k with the rounds up
// to upTo (all if upTo <= 0): every pair (v, x_{k,n}.v) is one equation in
// the row x_{k,n}, and all rows share the vectors, so one least-squares
// factorization of the stacked vectors V solves V x_{k,n} = b_n for all n.
func (o *Observer) ReconstructIP(client, upTo int) (*Reconstruction, error) {
	v, ps, err := o.snapshot(client, upTo, false)
	if err != nil {
		return nil, err
	}
	n, m := len(v.slots), len(v.features)
	if len(ps) > 0 {
		m = len(ps[0].in) // the vectors live on the client's features
	}
	r := newReconstruction("ip", client, v, m)
	for i := range r.Target {
		r.Target[i] = true
	}
	r.Unknowns = m
	if len(ps) == 0 || m == 0 {
		return r, nil
	}
	a := mat.NewDense(len(ps), m, nil)
	b := mat.NewDense(len(ps), n, nil)
	for t, p := range ps {
		if len(p.in) != m || len(p.out) != n {
			return nil, fmt.Errorf("curious: client %d round %d: %d-vector and %d inner products for %d features and %d samples", client, p.round, len(p.in), len(p.out), m, n)
		}
		a.SetRow(t, p.in)
		b.SetRow(t, p.out)
	}
	xt, rank, err := leastSquares(a, b, sealedNoise) // m x n: the rows as columns
	if err != nil {
		return nil, fmt.Errorf("curious: client %d: %w", client, err)
	}
	r.X.CloneFrom(xt.T())
	r.Rank, r.Equations, r.Rounds = rank, len(ps), countRounds(ps)
	return r, nil
}

// ReconstructDual runs the dual attack on client k with the rounds up to
// upTo (all if upTo <= 0): every pair (alpha, hat_w_k) or (d, dw_k) is one
// equation X_k^T c = h per feature in the unknown column of X_k over the
// training samples, solved by least squares on the stacked pairs,
// C X_train = H. It needs at least as many rounds as the client has
// training samples, and every sample's dual value must have moved in enough
// of them.
func (o *Observer) ReconstructDual(client, upTo int) (*Reconstruction, error) {
	v, ps, err := o.snapshot(client, upTo, true)
	if err != nil {
		return nil, err
	}
	n, m := len(v.slots), len(v.features)
	if len(ps) > 0 {
		m = len(ps[0].out)
	}
	r := newReconstruction("dual", client, v, m)
	// The unknowns are the training samples' rows: held-out samples never
	// get a dual value. Without the hello the server cannot tell them
	// apart; their dual values stay zero, so least squares leaves them zero.
	var train []int
	for i := range n {
		if len(v.heldout) != n || !v.heldout[i] {
			r.Target[i] = true
			train = append(train, i)
		}
	}
	r.Unknowns = len(train)
	if len(ps) == 0 || len(train) == 0 || m == 0 {
		return r, nil
	}
	a := mat.NewDense(len(ps), len(train), nil)
	b := mat.NewDense(len(ps), m, nil)
	for t, p := range ps {
		if len(p.in) != n || len(p.out) != m {
			return nil, fmt.Errorf("curious: client %d round %d: %d dual values and %d-vector for %d samples and %d features", client, p.round, len(p.in), len(p.out), n, m)
		}
		for j, i := range train {
			a.Set(t, j, p.in[i])
		}
		b.SetRow(t, p.out)
	}
	// d and dw are exact: the client computes dw from the very d opened.
	x, rank, err := leastSquares(a, b, 0) // len(train) x m
	if err != nil {
		return nil, fmt.Errorf("curious: client %d: %w", client, err)
	}
	for j, i := range train {
		r.X.SetRow(i, x.RawRowView(j))
	}
	r.Rank, r.Equations, r.Rounds = rank, len(ps), countRounds(ps)
	return r, nil
}

func newReconstruction(attack string, client int, v view, m int) *Reconstruction {
	n := len(v.slots)
	r := &Reconstruction{Attack: attack, Client: client, Pseudonyms: v.pseudonyms, Slots: v.slots, Features: v.features,
		Target: make([]bool, n), Unreadable: v.unreadable}
	if n > 0 && m > 0 {
		r.X = mat.NewDense(n, m, nil)
	}
	return r
}

func countRounds(ps []pair) int {
	seen := map[int]bool{}
	for _, p := range ps {
		seen[p.round] = true
	}
	return len(seen)
}

// leastSquares returns the minimum-norm least-squares solution X of A X = B
// and the numerical rank of A, from a thin SVD: X = V S^+ U^T B. Directions
// of A with no equations (a pixel that is zero in every sample, a sample
// the dual never moved) come out zero instead of blowing up.
//
// noise is the standard deviation of the rounding in B. Along a faint
// direction (singular value s) it becomes noise/s in every column of X: a
// pixel set in a single digit gives s ~ 1e-8, so the rounding would put
// errors of 0.1 into all 10,000 rows. A coefficient within four standard
// deviations of zero is taken as zero (hard thresholding): the one row that
// has the pixel keeps it, the others lose only noise.
func leastSquares(a, b *mat.Dense, noise float64) (*mat.Dense, int, error) {
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return nil, 0, errors.New("least squares: SVD did not converge")
	}
	s := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	rank := 0
	for _, x := range s {
		if x > rankTol*s[0] {
			rank++
		}
	}
	if rank == 0 {
		_, q := b.Dims()
		_, p := a.Dims()
		return mat.NewDense(p, q, nil), 0, nil
	}
	ur := u.Slice(0, u.RawMatrix().Rows, 0, rank)
	vr := v.Slice(0, v.RawMatrix().Rows, 0, rank)
	var c mat.Dense
	c.Mul(ur.T(), b) // rank x q
	for i := 0; i < rank; i++ {
		row := c.RawRowView(i)
		floor := 4 * noise / s[i]
		for j := range row {
			row[j] /= s[i]
			if math.Abs(row[j]) < floor {
				row[j] = 0
			}
		}
	}
	var x mat.Dense
	x.Mul(vr, &c)
	return &x, rank, nil
}

// Rows selects the rows an error is measured over.
type Rows int

const (
	// AllRows: every row the attack aims at.
	AllRows Rows = iota
	// TrainingRows: only training samples. Training touches nothing but
	// their span: a pixel set only in held-out digits never enters a
	// vector the server sends, so no attack on the transcript can recover
	// it (MNIST quadrants:1, client 0: one digit, 97% of the error left).
	TrainingRows
)

// RelativeError returns ||X_hat - X||_F / ||X||_F over the rows the attack
// aims at (the dual attack: the block's training samples), against the
// client's true block (rows in the block's order, which is the order of its
// hello and setup). Rows the attack did not determine count with their full
// norm; an attack with nothing to go on has error 1, that of guessing zeros.
func RelativeError(r *Reconstruction, truth *partition.Block, rows Rows) (float64, error) {
	if len(r.Slots) != truth.N() {
		return 0, fmt.Errorf("curious: reconstruction has %d rows, the block %d", len(r.Slots), truth.N())
	}
	if r.X == nil {
		return 1, nil
	}
	n, cols := r.X.Dims()
	if len(truth.Features) != cols {
		return 0, fmt.Errorf("curious: reconstruction has %d columns, the block %d", cols, len(truth.Features))
	}
	for j, f := range r.Features {
		if truth.Features[j] != f {
			return 0, fmt.Errorf("curious: column %d is feature %d, the block's is %d", j, f, truth.Features[j])
		}
	}
	var diff, norm float64
	for i := 0; i < n; i++ {
		if !r.Target[i] || ((r.Attack == "dual" || rows == TrainingRows) && truth.Heldout[i]) {
			continue
		}
		for j := 0; j < cols; j++ {
			x := truth.X.At(i, j)
			d := r.X.At(i, j) - x
			diff += d * d
			norm += x * x
		}
	}
	if norm == 0 {
		return 0, errors.New("curious: the target rows of the block are all zero")
	}
	return math.Sqrt(diff / norm), nil
}
