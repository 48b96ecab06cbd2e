// Package fedhybrid holds what a participant of FedHybrid computes (the
// FedHybrid paper: Niu, Wei, "A Hybrid Primal-Dual Algorithm Framework for
// Federated Optimization", Algorithm 1), for horizontal partitions and the
// logistic loss; package protocol runs the rounds (the coordinator adds
// the sealed summands, a participant opens the sum). Every participant holds all features of some samples and
// keeps a local primal copy x_i and a dual lambda_i of the consensus
// constraint x_0 = x_i; the server keeps the consensus variable x_0.
//
// Problem (1.1)/(1.2) of the paper with the objective of docs/design.md section 1:
//
//	min_w f(w) = sum_i f_i(w),
//	f_i(w) = (1/N) sum_{n in I_i, training} l(y_n, x_n.w) + (lambda/2)(N_i/N) ||w||^2,
//
// N the federation's training samples and N_i participant i's, so that
// sum_i f_i = P(w), the primal HyFDCA minimizes. Augmented Lagrangian (2.1):
//
//	L(x, lambda) = sum_i [ f_i(x_i) + lambda_i.(x_0 - x_i) + (mu/2) ||x_0 - x_i||^2 ]
//
// (row i of W x is x_0 - x_i), whose gradient in x_i is
//
//	grad_i = grad f_i(x_i) - lambda_i + mu (x_i - x_0)                    (bracket of lines 5, 9)
//
// One round k of Algorithm 1, with x_0^k sent to the participants (line 3):
//
//	gradient-type (J1, lines 5-6, from (3.1)/(3.7) with D_i = I):
//	  x_i^{k+1}      = x_i^k - a_i grad_i
//	  lambda_i^{k+1} = lambda_i^k + b_i (x_0^k - x_i^k)
//	Newton-type (J2, lines 9-10, from (3.6)/(3.7) with D_i = hess f_i(x_i^k) + mu I):
//	  x_i^{k+1}      = x_i^k - a_i D_i^{-1} grad_i
//	  lambda_i^{k+1} = lambda_i^k + b_i D_i (x_0^k - x_i^k)
//	consensus (line 12, (3.8), the server's step a_0 = 1/(mu n) of (3.7)):
//	  x_0^{k+1} = (1/(mu n)) sum_i (mu x_i^{k+1} - lambda_i^{k+1})
//
// Both dual updates use x_i^k and x_0^k, before the primal update, as (3.7)
// does (lambda^{k+1} = lambda^k + B D^k W x^k).
//
// Privacy: the consensus sum is the only thing that leaves a participant.
// Each seals its mu x_i - lambda_i (package seal; two slots a feature, see
// Node.Seal), the server adds the sealed vectors without a key, and a
// participant opens the sum and divides by mu n; the server sees x_0 (the
// model), never one participant's vector.

package fedhybrid

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// logisticLoss is FedHybrid's loss, log(1 + exp(-y z)), with its first
// and second derivatives in the margin z = x.w: Newton-type steps need a
// loss that is twice continuously differentiable (the paper's Assumption
// 2.1), which the hinge loss is not.
type logisticLoss struct{}

// value returns l(y, z), as loss.Logistic does (the same P(w) HyFDCA reports).
func (logisticLoss) value(z, y float64) float64 { return loss.Logistic{}.Value(z, y) }

// deriv returns dl/dz = -y sigma(-y z).
func (logisticLoss) deriv(z, y float64) float64 { return -y * sigmoid(-y*z) }

// second returns d2l/dz2 = sigma(y z) sigma(-y z) (y^2 = 1).
func (logisticLoss) second(z, y float64) float64 {
	s := sigmoid(y * z)
	return s * (1 - s)
}

// maxSecond bounds second().
func (logisticLoss) maxSecond() float64 { return 0.25 }

// sigmoid is 1/(1+exp(-t)) without overflow for large |t|.
func sigmoid(t float64) float64 {
	if t >= 0 {
		return 1 / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return e / (1 + e)
}

// sumRange bounds the magnitude of a sum of sealed values that BGV
// carries exactly (seal/bgv.go: |sum| < t/2^(FracBits+1) = 2^17).
const sumRange = 1 << 17

// bound is the magnitude each of n participants' sealed values may
// have: at most half its share of the exactly carried range, so that the
// sum of n can never wrap.
func bound(n int) float64 {
	return math.Min(seal.MaxAbs, sumRange/float64(2*max(n, 1)))
}

// limb is the weight of the low limb of a sealed value (below).
const limb = 1 << seal.FracBits

// Node is participant i: its data, its state (x_i,
// lambda_i), its update type and step sizes, and its own key.
type Node struct {
	index  int
	newton bool    // i in J2
	a, b   float64 // personal step sizes a_i, b_i
	mu     float64
	loss   logisticLoss
	// lambda, nTotal: regularization and the federation's training count N.
	lambda float64
	nTotal float64
	x, lam []float64 // x_i, lambda_i
	// X, y: the block's training rows (all M features each).
	X *dataset.Matrix
	y []float64
	// smooth is L_i, a bound on the largest eigenvalue of hess f_i (for
	// default step sizes).
	smooth float64
	// Newton-type scratch: D_i = hess f_i + mu I (upper triangle) and its
	// Cholesky factor U (D_i = U^T U, upper triangle).
	hess blas64.Symmetric
	chol []float64
}

// newNode builds participant index from its block's
// training rows, at x_i = lambda_i = 0, with L_i estimated; setSteps then
// fixes mu and the step sizes.
func newNode(b *partition.Block, index int, newton bool, lambda, nTotal float64) *Node {
	var l logisticLoss
	x, y := trainRows(b)
	p := &Node{
		index: index, newton: newton, loss: l, lambda: lambda, nTotal: nTotal,
		x: make([]float64, b.NumFeatures), lam: make([]float64, b.NumFeatures), X: x, y: y,
	}
	p.smooth = l.maxSecond()*topEigen(x)/nTotal + p.regShare()
	return p
}

// setSteps sets mu and the step sizes a_i, b_i (0: the defaults of
// NewNode).
func (p *Node) setSteps(mu, a, b float64) {
	p.mu = mu
	switch {
	case a > 0:
		p.a = a
	case p.newton:
		p.a = 1
	default:
		p.a = 1 / (p.smooth + mu)
	}
	switch {
	case b > 0:
		p.b = b
	case p.newton:
		p.b = mu / (p.smooth + mu)
	default:
		p.b = mu / 2
	}
}

// regShare is the strong convexity m_i = lambda N_i/N of f_i.
func (p *Node) regShare() float64 {
	return p.lambda * float64(p.X.Rows) / p.nTotal
}

// gradient returns grad f_i(w) = (1/N) sum_n l'(x_n.w) x_n + lambda (N_i/N) w.
func (p *Node) gradient(w []float64) []float64 {
	g := make([]float64, len(w))
	for r := 0; r < p.X.Rows; r++ {
		p.X.AddRowTo(r, p.loss.deriv(p.X.Dot(r, w), p.y[r])/p.nTotal, g)
	}
	reg := p.regShare()
	for j := range g {
		g[j] += reg * w[j]
	}
	return g
}

// batch is the number of dense rows scaled at a time for the
// Hessian's rank-k updates.
const batch = 128

// newtonMatrix sets p.hess to D_i = hess f_i(w) + mu I, where
// hess f_i(w) = (1/N) sum_n d2l/dz2(x_n.w) x_n x_n^T + lambda (N_i/N) I.
func (p *Node) newtonMatrix(w []float64) {
	m := len(w)
	if p.hess.Data == nil {
		p.hess = blas64.Symmetric{N: m, Stride: m, Uplo: blas.Upper, Data: make([]float64, m*m)}
	}
	raw := p.hess
	clear(raw.Data)
	if p.X.IsSparse() {
		// Only the products of a row's stored entries contribute; columns
		// are ascending, so j1 <= j2 lands in the upper triangle.
		for r := 0; r < p.X.Rows; r++ {
			c := p.loss.second(p.X.Dot(r, w), p.y[r]) / p.nTotal
			if c == 0 {
				continue
			}
			idx, val := p.X.Row(r)
			for k1, j1 := range idx {
				row := raw.Data[int(j1)*raw.Stride:]
				cv := c * val[k1]
				for k2 := k1; k2 < len(idx); k2++ {
					row[idx[k2]] += cv * val[k2]
				}
			}
		}
	} else {
		// Dense rows: H += B^T B with B the rows scaled by sqrt(l''/N), a
		// batch at a time (BLAS syrk).
		buf := make([]float64, batch*m)
		for start := 0; start < p.X.Rows; start += batch {
			rows := min(batch, p.X.Rows-start)
			for r := 0; r < rows; r++ {
				_, val := p.X.Row(start + r)
				s := math.Sqrt(p.loss.second(p.X.Dot(start+r, w), p.y[start+r]) / p.nTotal)
				dst := buf[r*m : (r+1)*m]
				for j, v := range val {
					dst[j] = s * v
				}
			}
			b := blas64.General{Rows: rows, Cols: m, Stride: m, Data: buf[:rows*m]}
			blas64.Syrk(blas.Trans, 1, b, 1, raw)
		}
	}
	diag := p.regShare() + p.mu
	for j := 0; j < m; j++ {
		raw.Data[j*raw.Stride+j] += diag
	}
}

// step runs participant i's part of round k of Algorithm 1 given
// x_0 = x_0^k: lines 5-6 if it is gradient-type, lines 9-10 if Newton-type.
func (p *Node) step(x0 []float64) error {
	// grad_i = grad f_i(x_i^k) - lambda_i^k + mu (x_i^k - x_0^k)
	g := p.gradient(p.x)
	for j := range g {
		g[j] += -p.lam[j] + p.mu*(p.x[j]-x0[j])
	}
	if !p.newton {
		for j := range p.x {
			// line 6 first: it uses x_i^k.
			p.lam[j] += p.b * (x0[j] - p.x[j])
			p.x[j] -= p.a * g[j] // line 5
		}
		return nil
	}
	p.newtonMatrix(p.x)
	dir, err := p.newtonSolve(g)
	if err != nil {
		return fmt.Errorf("participant %d: %w", p.index, err)
	}
	diff := make([]float64, len(p.x))
	for j := range diff {
		diff[j] = x0[j] - p.x[j]
	}
	ddiff := make([]float64, len(diff))
	blas64.Symv(1, p.hess, blas64.Vector{N: len(diff), Inc: 1, Data: diff}, 0, blas64.Vector{N: len(ddiff), Inc: 1, Data: ddiff})
	for j := range p.x {
		p.x[j] -= p.a * dir[j]     // line 9
		p.lam[j] += p.b * ddiff[j] // line 10, with D_i(x_i^k) and x_0^k - x_i^k
	}
	return nil
}

// newtonSolve returns D_i^-1 g by D_i's Cholesky factorization, with the
// routines and the condition check of gonum's mat.Cholesky (Factorize,
// SolveVecTo), so with its very numbers, called on LAPACK directly: the
// mat package's types would bring all of their methods, and much of
// LAPACK, into the browser's participant (about 1.6 MB of its code).
func (p *Node) newtonSolve(g []float64) ([]float64, error) {
	var impl lapackgonum.Implementation
	n := p.hess.N
	if len(p.chol) != n*n {
		p.chol = make([]float64, n*n)
	}
	for i := 0; i < n; i++ { // the upper triangle is all Potrf reads
		copy(p.chol[i*n+i:(i+1)*n], p.hess.Data[i*p.hess.Stride+i:i*p.hess.Stride+n])
	}
	work := make([]float64, 3*n)
	norm := impl.Dlansy(lapack.MaxRowSum, blas.Upper, n, p.chol, n, work)
	if !impl.Dpotrf(blas.Upper, n, p.chol, n) {
		// hess f_i is positive semidefinite and mu > 0, so only rounding
		// on a wildly scaled problem can get here.
		return nil, fmt.Errorf("hess f_i + mu I is not positive definite")
	}
	cond := 1 / impl.Dpocon(blas.Upper, n, p.chol, n, norm, work, make([]int, n))
	dir := append([]float64(nil), g...)
	impl.Dpotrs(blas.Upper, n, 1, p.chol, n, dir, 1)
	if cond > maxCondition {
		return nil, fmt.Errorf("Newton system: hess f_i + mu I is singular or nearly so (condition number %.4e)", cond)
	}
	return dir, nil
}

// maxCondition is gonum's mat.ConditionTolerance: a Newton system worse
// conditioned than this is refused, as mat.Cholesky.SolveVecTo refuses it.
const maxCondition = 1e16

// contribution is participant i's summand of the consensus update (3.8),
// mu x_i - lambda_i.
func (p *Node) contribution() []float64 {
	v := make([]float64, len(p.x))
	for j := range v {
		v[j] = p.mu*p.x[j] - p.lam[j]
	}
	return v
}

// sealSummand seals v in two limbs: slot j carries hi = v_j on the
// fixed-point grid 2^-28, slot M+j the remainder times 2^28, itself on the
// grid. Sums of both limbs are exact, so the opened sum is v's sum to
// 2^-56 rather than 2^-28: without it x_0 could not get closer to the
// optimum than ~1e-9 (the linear-rate test goes to 1e-10). The server only
// ever sees the sealed limbs. bound is the magnitude each value may have so
// that the sum of every participant's values stays in the range the
// scheme carries exactly.
func sealSummand(k seal.Key, v []float64, bound float64) (seal.Vec, error) {
	m := len(v)
	slots := make([]int, 2*m)
	vals := make([]float64, 2*m)
	for j, x := range v {
		if !(math.Abs(x) <= bound) {
			return nil, fmt.Errorf("mu x_i - lambda_i = %g at feature %d is beyond ±%g, what the sealed sum of every participant's value carries exactly (diverging? smaller step sizes A, B help; else a smaller Mu or scaled features)", x, j, bound)
		}
		hi := seal.Quantize(x)
		slots[j], vals[j] = j, hi
		slots[m+j], vals[m+j] = m+j, (x-hi)*limb // |.| <= 1/2, exact
	}
	sv, err := seal.SealSlots(k, slots, vals, nil)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return sv, nil
}

// Open opens a sum of sealSummand vectors of m values.
func Open(k seal.Key, sum seal.Vec, m int) ([]float64, error) {
	slots := make([]int, 2*m)
	for j := range slots {
		slots[j] = j
	}
	vals, err := seal.OpenSlots(k, sum, slots)
	if err != nil {
		return nil, fmt.Errorf("open the consensus sum: %w", err)
	}
	out := make([]float64, m)
	for j := range out {
		out[j] = vals[j] + vals[m+j]/limb
	}
	return out, nil
}

// topEigen estimates the largest eigenvalue of X^T X by power
// iteration (a lower bound that is close after a few dozen steps; it only
// sets default step sizes and mu).
func topEigen(x *dataset.Matrix) float64 {
	m := x.Cols
	v := make([]float64, m)
	for j := range v {
		v[j] = 1 / math.Sqrt(float64(m))
	}
	est := 0.0
	for it := 0; it < 50; it++ {
		u := make([]float64, m)
		for r := 0; r < x.Rows; r++ {
			x.AddRowTo(r, x.Dot(r, v), u)
		}
		norm := 0.0
		for _, e := range u {
			norm += e * e
		}
		norm = math.Sqrt(norm)
		if norm == 0 {
			return 0
		}
		if math.Abs(norm-est) <= 1e-6*norm {
			return norm
		}
		est = norm
		for j := range v {
			v[j] = u[j] / norm
		}
	}
	return est
}

// trainRows returns the block's training rows and labels.
func trainRows(b *partition.Block) (*dataset.Matrix, []float64) {
	var rows []int
	var y []float64
	for r, h := range b.Heldout {
		if !h {
			rows = append(rows, r)
			y = append(y, b.Y[r])
		}
	}
	return b.X.SelectRows(rows), y
}

// Name is FedHybrid's name among a federation's algorithms
// (protocol.Config.Algo).
const Name = "fedhybrid"

// Modes lists the update types a federation can give its participants:
// all Newton-type (the default), all gradient-type, or mixed (even-numbered
// participants Newton-type, odd-numbered gradient-type).
var Modes = []string{"newton", "gradient", "mixed"}

// Newton reports whether participant index is Newton-type (in J2) under
// mode; "" is newton.
func Newton(mode string, index int) (bool, error) {
	switch mode {
	case "newton", "":
		return true, nil
	case "gradient":
		return false, nil
	case "mixed":
		return index%2 == 0, nil
	}
	return false, fmt.Errorf("fedhybrid: mode %q: want newton, gradient or mixed", mode)
}

// NewNode starts participant index at x_i = lambda_i = 0 on its block,
// which must hold every feature (a horizontal partition). numTrain is the
// federation's training count N, mu the penalty (> 0), a and b the step
// sizes a_i and b_i, 0 for the defaults: with L_i a bound on the largest
// eigenvalue of hess f_i, Newton-type a_i = 1, b_i = mu/(L_i + mu);
// gradient-type a_i = 1/(L_i + mu), b_i = mu/2 (Theorem 4.1's bounds (4.2)
// are far smaller and converge far slower; these were tuned on small
// problems and scalar quadratics, the paper tuned by grid search). A
// Newton-type participant forms and factors an M x M matrix every round:
// fine for hundreds of features, not for tens of thousands.
func NewNode(b *partition.Block, index, numTrain int, lambda, mu float64, mode string, a, bStep float64) (*Node, error) {
	if len(b.Features) != b.NumFeatures {
		return nil, fmt.Errorf("fedhybrid: the block holds %d of %d features: FedHybrid needs a horizontal partition (every participant holds all features of its samples)", len(b.Features), b.NumFeatures)
	}
	if !(mu > 0) || math.IsInf(mu, 0) || numTrain < 1 {
		return nil, fmt.Errorf("fedhybrid: mu %v (want a finite value > 0), %d training samples", mu, numTrain)
	}
	newton, err := Newton(mode, index)
	if err != nil {
		return nil, err
	}
	p := newNode(b, index, newton, lambda, float64(numTrain))
	p.setSteps(mu, a, bStep)
	return p, nil
}

// Step runs the participant's part of a round from the consensus x0 (lines
// 4-11 of Algorithm 1).
func (p *Node) Step(x0 []float64) error {
	if len(x0) != len(p.x) {
		return fmt.Errorf("fedhybrid: consensus of %d values for %d features", len(x0), len(p.x))
	}
	return p.step(x0)
}

// Seal seals the participant's summand mu x_i - lambda_i of the consensus
// (two limbs a feature), within the range that the sum over all
// participants carries exactly.
func (p *Node) Seal(k seal.Key, participants int) (seal.Vec, error) {
	v, err := sealSummand(k, p.contribution(), bound(participants))
	if err != nil {
		return nil, fmt.Errorf("fedhybrid: participant %d: %w", p.index, err)
	}
	return v, nil
}

// DefaultMu is the penalty for blocks (a horizontal partition of numTrain
// training samples) when none is given: sqrt(mean_i m_i * mean_i L_i), m_i =
// lambda N_i/N the strong convexity of f_i and L_i its smoothness (mean_i
// L_i / 10 when lambda is 0): a penalty between the flattest and the
// steepest curvature, as for ADMM. It needs every block's data, so only a
// run that holds them all (hyfed experiment, hyfed compare) can use it; a
// federation is given its mu.
func DefaultMu(blocks []partition.Block, lambda float64, numTrain int) (float64, error) {
	if len(blocks) == 0 || numTrain < 1 {
		return 0, fmt.Errorf("fedhybrid: no default mu for %d blocks of %d training samples", len(blocks), numTrain)
	}
	var meanReg, meanSmooth float64
	n := float64(len(blocks))
	for i := range blocks {
		p := newNode(&blocks[i], i, true, lambda, float64(numTrain))
		meanReg += p.regShare() / n
		meanSmooth += p.smooth / n
	}
	mu := math.Sqrt(meanReg * meanSmooth)
	if meanReg == 0 {
		mu = meanSmooth / 10
	}
	if !(mu > 0) {
		return 0, fmt.Errorf("fedhybrid: no default mu for data without curvature (all training rows zero): give mu")
	}
	return mu, nil
}
