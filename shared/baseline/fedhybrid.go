// FedHybrid (the FedHybrid paper: Niu, Wei, "A Hybrid Primal-Dual Algorithm Framework
// for Federated Optimization", Algorithm 1) for horizontal partitions and
// smooth losses. Every participant holds all features of some samples and
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
// fedHybridSeal), the server adds the sealed vectors without a key, and a
// participant opens the sum and divides by mu n; the server sees x_0 (the
// model), never one participant's vector.

package baseline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// FedHybridOptions configure RunFedHybrid. Zero values select the defaults
// noted; negative or non-finite values are errors.
type FedHybridOptions struct {
	// Loss is "logistic" (default) or "squared_hinge", max(0, 1 - y z)^2.
	// Newton-type updates need a Hessian: the logistic loss is twice
	// continuously differentiable (Assumption 2.1 of the paper); the
	// squared hinge only once, and Newton-type participants use its
	// generalized Hessian 2 [y z < 1] (it converges in the tests, but the
	// paper's analysis does not cover it). The hinge is refused.
	Loss string
	// Lambda is the L2 regularization of P(w); > 0 makes every f_i strongly
	// convex, the case of the paper's Theorem 4.1 (linear rate).
	Lambda float64
	// Rounds is the number of rounds (iterations k of Algorithm 1), > 0.
	Rounds int
	// Mode picks the update types when Newton is nil: "newton" (default,
	// J2 = all), "gradient" (J1 = all) or "mixed" (even-numbered
	// participants Newton-type, odd-numbered gradient-type).
	Mode string
	// Newton, if set, has one entry per participant: true puts it in J2
	// (Newton-type), false in J1 (gradient-type). It overrides Mode. A
	// Newton-type participant forms and factors an M x M matrix every
	// round: fine for hundreds of features, not for tens of thousands.
	Newton []bool
	// A and B are the personal primal and dual step sizes a_i, b_i: empty
	// for the defaults, one value for every participant, or one each.
	// Defaults, with L_i a bound on the largest eigenvalue of hess f_i:
	// Newton-type a_i = 1, b_i = mu/(L_i + mu); gradient-type
	// a_i = 1/(L_i + mu), b_i = mu/2. (Theorem 4.1's bounds (4.2) are far
	// smaller and converge far slower; these were tuned on the tests'
	// problems and scalar quadratics. The paper tuned by grid search.)
	A, B []float64
	// Mu is the penalty of the augmented Lagrangian (2.1), > 0; 0 picks
	// sqrt(mean_i m_i * mean_i L_i), m_i = lambda N_i/N the strong convexity
	// of f_i (mean_i L_i / 10 when Lambda is 0): a penalty between the
	// flattest and the steepest curvature, as for ADMM.
	Mu float64
	// Fraction is the probability that a participant is active in a round
	// (0 means 1). The paper has no partial participation; here an inactive
	// participant skips lines 4-11 (x_i, lambda_i unchanged) and the server
	// adds its last sealed vector again, which is (3.8) with
	// x_i^{k+1} = x_i^k, lambda_i^{k+1} = lambda_i^k. A round with no
	// active participant leaves x_0 unchanged. Caveat: in a round with one
	// active participant the change of x_0 is the change of that
	// participant's mu x_i - lambda_i over mu n.
	Fraction float64
	// Seed draws participation and derives the federation secret (and so
	// the homomorphic key).
	Seed int64
	// Scheme seals the consensus sums: "bgv" (default) or "plaintext".
	Scheme string
}

// FedHybridRound is what RunFedHybrid records after every round.
type FedHybridRound struct {
	Round int
	// Primal is P(x_0) = lambda/2 ||x_0||^2 + (1/N) sum_n l(y_n, x_n.x_0)
	// over the training samples of the whole data set (docs/design.md section 1), on the
	// consensus variable after the round.
	Primal float64
	// TrainAcc and HeldAcc are the accuracies of x_0 on the training and
	// held-out samples (HeldAcc = TrainAcc when nothing is held out, as
	// central.Objectives does).
	TrainAcc, HeldAcc float64
	// Active is the number of participants that updated in the round.
	Active int
	// Seconds is the wall time since training started (after the setup:
	// keys, default step sizes), metrics excluded.
	Seconds float64
	// W is the consensus variable x_0^{k+1} after the round (a copy).
	W []float64
}

// fedHybridLoss is a smooth per-sample loss with first and second
// derivatives in the margin input z = x.w.
type fedHybridLoss int

const (
	fedHybridLogistic fedHybridLoss = iota
	fedHybridSquaredHinge
)

func fedHybridParseLoss(name string) (fedHybridLoss, error) {
	switch name {
	case "logistic", "":
		return fedHybridLogistic, nil
	case "squared_hinge":
		return fedHybridSquaredHinge, nil
	case "hinge":
		return 0, errors.New("Loss \"hinge\" is not smooth (no gradient or Hessian everywhere): want logistic or squared_hinge")
	}
	return 0, fmt.Errorf("Loss %q: want logistic or squared_hinge", name)
}

func (l fedHybridLoss) String() string {
	if l == fedHybridSquaredHinge {
		return "squared_hinge"
	}
	return "logistic"
}

// value returns l(y, z): log(1 + exp(-y z)) or max(0, 1 - y z)^2.
func (l fedHybridLoss) value(z, y float64) float64 {
	if l == fedHybridSquaredHinge {
		h := math.Max(0, 1-y*z)
		return h * h
	}
	return loss.Logistic{}.Value(z, y) // the same P(w) as HyFDCA reports
}

// deriv returns dl/dz: -y sigma(-y z), or -2 y max(0, 1 - y z).
func (l fedHybridLoss) deriv(z, y float64) float64 {
	if l == fedHybridSquaredHinge {
		return -2 * y * math.Max(0, 1-y*z)
	}
	return -y * fedHybridSigmoid(-y*z)
}

// second returns d2l/dz2: sigma(y z) sigma(-y z) (y^2 = 1), or 2 [y z < 1]
// (the generalized Hessian of the squared hinge at its kink: 0).
func (l fedHybridLoss) second(z, y float64) float64 {
	if l == fedHybridSquaredHinge {
		if y*z < 1 {
			return 2
		}
		return 0
	}
	s := fedHybridSigmoid(y * z)
	return s * (1 - s)
}

// maxSecond bounds second(): 1/4 for the logistic loss, 2 for the squared
// hinge.
func (l fedHybridLoss) maxSecond() float64 {
	if l == fedHybridSquaredHinge {
		return 2
	}
	return 0.25
}

// fedHybridSigmoid is 1/(1+exp(-t)) without overflow for large |t|.
func fedHybridSigmoid(t float64) float64 {
	if t >= 0 {
		return 1 / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return e / (1 + e)
}

// fedHybridSumRange bounds the magnitude of a sum of sealed values that BGV
// carries exactly (seal/bgv.go: |sum| < t/2^(FracBits+1) = 2^17).
const fedHybridSumRange = 1 << 17

// fedHybridBound is the magnitude each of n participants' sealed values may
// have: at most half its share of the exactly carried range, so that the
// sum of n can never wrap.
func fedHybridBound(n int) float64 {
	return math.Min(seal.MaxAbs, fedHybridSumRange/float64(2*max(n, 1)))
}

// fedHybridLimb is the weight of the low limb of a sealed value (below).
const fedHybridLimb = 1 << seal.FracBits

// fedHybridParticipant is participant i: its data, its state (x_i,
// lambda_i), its update type and step sizes, and its own key.
type fedHybridParticipant struct {
	index  int
	newton bool    // i in J2
	a, b   float64 // personal step sizes a_i, b_i
	mu     float64
	loss   fedHybridLoss
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
	key    seal.Key
	// Newton-type scratch: D_i = hess f_i + mu I, its factorization.
	hess *mat.SymDense
	chol mat.Cholesky
}

// newFedHybridParticipant builds participant index from its block's
// training rows, at x_i = lambda_i = 0, with L_i estimated; setSteps then
// fixes mu and the step sizes.
func newFedHybridParticipant(b *partition.Block, index int, newton bool, l fedHybridLoss, lambda, nTotal float64) *fedHybridParticipant {
	x, y := fedHybridTrainRows(b)
	p := &fedHybridParticipant{
		index: index, newton: newton, loss: l, lambda: lambda, nTotal: nTotal,
		x: make([]float64, b.NumFeatures), lam: make([]float64, b.NumFeatures), X: x, y: y,
	}
	p.smooth = l.maxSecond()*fedHybridTopEigen(x)/nTotal + p.regShare()
	return p
}

// setSteps sets mu and the step sizes a_i, b_i (0: the defaults of
// FedHybridOptions.A and B).
func (p *fedHybridParticipant) setSteps(mu, a, b float64) {
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
func (p *fedHybridParticipant) regShare() float64 {
	return p.lambda * float64(p.X.Rows) / p.nTotal
}

// gradient returns grad f_i(w) = (1/N) sum_n l'(x_n.w) x_n + lambda (N_i/N) w.
func (p *fedHybridParticipant) gradient(w []float64) []float64 {
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

// fedHybridBatch is the number of dense rows scaled at a time for the
// Hessian's rank-k updates.
const fedHybridBatch = 128

// newtonMatrix sets p.hess to D_i = hess f_i(w) + mu I, where
// hess f_i(w) = (1/N) sum_n d2l/dz2(x_n.w) x_n x_n^T + lambda (N_i/N) I.
func (p *fedHybridParticipant) newtonMatrix(w []float64) {
	m := len(w)
	if p.hess == nil {
		p.hess = mat.NewSymDense(m, nil)
	}
	raw := p.hess.RawSymmetric() // upper triangle
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
		buf := make([]float64, fedHybridBatch*m)
		for start := 0; start < p.X.Rows; start += fedHybridBatch {
			rows := min(fedHybridBatch, p.X.Rows-start)
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
func (p *fedHybridParticipant) step(x0 []float64) error {
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
	if !p.chol.Factorize(p.hess) {
		// hess f_i is positive semidefinite and mu > 0, so only rounding
		// on a wildly scaled problem can get here.
		return fmt.Errorf("participant %d: hess f_i + mu I is not positive definite", p.index)
	}
	var dir mat.VecDense
	if err := p.chol.SolveVecTo(&dir, mat.NewVecDense(len(g), g)); err != nil {
		return fmt.Errorf("participant %d: Newton system: %w", p.index, err)
	}
	diff := make([]float64, len(p.x))
	for j := range diff {
		diff[j] = x0[j] - p.x[j]
	}
	var ddiff mat.VecDense
	ddiff.MulVec(p.hess, mat.NewVecDense(len(diff), diff))
	for j := range p.x {
		p.x[j] -= p.a * dir.AtVec(j)     // line 9
		p.lam[j] += p.b * ddiff.AtVec(j) // line 10, with D_i(x_i^k) and x_0^k - x_i^k
	}
	return nil
}

// contribution is participant i's summand of the consensus update (3.8),
// mu x_i - lambda_i.
func (p *fedHybridParticipant) contribution() []float64 {
	v := make([]float64, len(p.x))
	for j := range v {
		v[j] = p.mu*p.x[j] - p.lam[j]
	}
	return v
}

// fedHybridSeal seals v in two limbs: slot j carries hi = v_j on the
// fixed-point grid 2^-28, slot M+j the remainder times 2^28, itself on the
// grid. Sums of both limbs are exact, so the opened sum is v's sum to
// 2^-56 rather than 2^-28: without it x_0 could not get closer to the
// optimum than ~1e-9 (the linear-rate test goes to 1e-10). The server only
// ever sees the sealed limbs. bound is the magnitude each value may have so
// that the sum of every participant's values stays in the range the
// scheme carries exactly.
func fedHybridSeal(k seal.Key, v []float64, bound float64) (seal.Vec, error) {
	m := len(v)
	slots := make([]int, 2*m)
	vals := make([]float64, 2*m)
	for j, x := range v {
		if !(math.Abs(x) <= bound) {
			return nil, fmt.Errorf("mu x_i - lambda_i = %g at feature %d is beyond ±%g, what the sealed sum of every participant's value carries exactly (diverging? smaller step sizes A, B help; else a smaller Mu or scaled features)", x, j, bound)
		}
		hi := seal.Quantize(x)
		slots[j], vals[j] = j, hi
		slots[m+j], vals[m+j] = m+j, (x-hi)*fedHybridLimb // |.| <= 1/2, exact
	}
	sv, err := seal.SealSlots(k, slots, vals)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return sv, nil
}

// fedHybridOpen opens a sum of fedHybridSeal vectors of m values.
func fedHybridOpen(k seal.Key, sum seal.Vec, m int) ([]float64, error) {
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
		out[j] = vals[j] + vals[m+j]/fedHybridLimb
	}
	return out, nil
}

// fedHybridTopEigen estimates the largest eigenvalue of X^T X by power
// iteration (a lower bound that is close after a few dozen steps; it only
// sets default step sizes and mu).
func fedHybridTopEigen(x *dataset.Matrix) float64 {
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

// fedHybridSteps expands A or B: empty (defaults, nil), one for all, or one
// each; every value must be positive and finite.
func fedHybridSteps(field string, vals []float64, n int) ([]float64, error) {
	if len(vals) != 0 && len(vals) != 1 && len(vals) != n {
		return nil, fmt.Errorf("%s has %d values: want none (defaults), 1 or one per participant (%d)", field, len(vals), n)
	}
	for i, v := range vals {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s[%d] = %v: step sizes must be positive and finite", field, i, v)
		}
	}
	if len(vals) == 0 {
		return nil, nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = vals[min(i, len(vals)-1)]
	}
	return out, nil
}

// fedHybridTypes returns J2 membership per participant.
func fedHybridTypes(o FedHybridOptions, n int) ([]bool, error) {
	if o.Newton != nil {
		if len(o.Newton) != n {
			return nil, fmt.Errorf("Newton has %d entries for %d participants", len(o.Newton), n)
		}
		return append([]bool(nil), o.Newton...), nil
	}
	out := make([]bool, n)
	for i := range out {
		switch o.Mode {
		case "newton", "":
			out[i] = true
		case "gradient":
		case "mixed":
			out[i] = i%2 == 0
		default:
			return nil, fmt.Errorf("Mode %q: want newton, gradient or mixed", o.Mode)
		}
	}
	return out, nil
}

// fedHybridCheckData refuses anything but a horizontal partition of d.
func fedHybridCheckData(d *dataset.Dataset, blocks []partition.Block) error {
	if d == nil {
		return errors.New("no data set")
	}
	if err := d.Validate(); err != nil {
		return err
	}
	if len(blocks) == 0 {
		return errors.New("no blocks: want one per participant")
	}
	m := d.M()
	for k := range blocks {
		b := &blocks[k]
		if err := b.Validate(); err != nil {
			return fmt.Errorf("participant %d: %w", k, err)
		}
		if b.NumFeatures != m || len(b.Features) != m {
			return fmt.Errorf("participant %d holds %d of %d features: FedHybrid needs a horizontal partition (every participant holds all features of its samples)", k, len(b.Features), m)
		}
	}
	if err := partition.Check(d, blocks); err != nil {
		return fmt.Errorf("blocks do not partition %s: %w", d.Name, err)
	}
	if d.NumTrain() == 0 {
		return fmt.Errorf("data set %s has no training samples", d.Name)
	}
	return nil
}

// fedHybridTrainRows returns the block's training rows and labels.
func fedHybridTrainRows(b *partition.Block) (*dataset.Matrix, []float64) {
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

// fedHybridObjectives evaluates P(w) on the training samples of d and the
// accuracies (a correct sample has y x.w > 0).
func fedHybridObjectives(d *dataset.Dataset, l fedHybridLoss, lambda float64, w []float64) (primal, trainAcc, heldAcc float64) {
	var lsum float64
	var nTrain, okTrain, nHeld, okHeld int
	for i := 0; i < d.N(); i++ {
		z := d.X.Dot(i, w)
		ok := z*d.Y[i] > 0
		if d.Heldout[i] {
			nHeld++
			if ok {
				okHeld++
			}
			continue
		}
		nTrain++
		if ok {
			okTrain++
		}
		lsum += l.value(z, d.Y[i])
	}
	ww := 0.0
	for _, v := range w {
		ww += v * v
	}
	primal = lambda/2*ww + lsum/float64(max(nTrain, 1))
	trainAcc = float64(okTrain) / float64(max(nTrain, 1))
	heldAcc = trainAcc
	if nHeld > 0 {
		heldAcc = float64(okHeld) / float64(nHeld)
	}
	return primal, trainAcc, heldAcc
}

// fedHybridSetup validates everything and builds the participants with
// their step sizes and keys.
func fedHybridSetup(d *dataset.Dataset, blocks []partition.Block, o FedHybridOptions) ([]*fedHybridParticipant, seal.Scheme, error) {
	l, err := fedHybridParseLoss(o.Loss)
	if err != nil {
		return nil, nil, err
	}
	if !(o.Lambda >= 0) || math.IsInf(o.Lambda, 0) {
		return nil, nil, fmt.Errorf("Lambda = %v: want a finite value >= 0", o.Lambda)
	}
	if o.Rounds <= 0 {
		return nil, nil, fmt.Errorf("Rounds = %d: want at least 1", o.Rounds)
	}
	if !(o.Mu >= 0) || math.IsInf(o.Mu, 0) {
		return nil, nil, fmt.Errorf("Mu = %v: want a finite value > 0 (or 0 for the default)", o.Mu)
	}
	if !(o.Fraction >= 0 && o.Fraction <= 1) {
		return nil, nil, fmt.Errorf("Fraction = %v: want a probability in (0, 1] (or 0 for 1)", o.Fraction)
	}
	if err := fedHybridCheckData(d, blocks); err != nil {
		return nil, nil, err
	}
	n := len(blocks)
	newton, err := fedHybridTypes(o, n)
	if err != nil {
		return nil, nil, err
	}
	as, err := fedHybridSteps("A", o.A, n)
	if err != nil {
		return nil, nil, err
	}
	bs, err := fedHybridSteps("B", o.B, n)
	if err != nil {
		return nil, nil, err
	}
	scheme, err := seal.ByName(o.Scheme)
	if err != nil {
		return nil, nil, fmt.Errorf("Scheme: %w", err)
	}

	nTotal := float64(d.NumTrain())
	ps := make([]*fedHybridParticipant, n)
	var meanReg, meanSmooth float64
	for i := range blocks {
		p := newFedHybridParticipant(&blocks[i], i, newton[i], l, o.Lambda, nTotal)
		meanReg += p.regShare() / float64(n)
		meanSmooth += p.smooth / float64(n)
		ps[i] = p
	}
	mu := o.Mu
	if mu == 0 {
		mu = math.Sqrt(meanReg * meanSmooth)
		if meanReg == 0 {
			mu = meanSmooth / 10
		}
		if !(mu > 0) {
			return nil, nil, errors.New("Mu: no default for data without curvature (all training rows zero): set Mu")
		}
	}
	sec := secret.FromSeed(o.Seed)
	for i, p := range ps {
		var a, b float64
		if as != nil {
			a = as[i]
		}
		if bs != nil {
			b = bs[i]
		}
		p.setSteps(mu, a, b)
		// One key object per participant: keys are not safe for
		// concurrent use, and participants step in parallel.
		if p.key, err = seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose)); err != nil {
			return nil, nil, fmt.Errorf("participant %d: key: %w", i, err)
		}
	}
	return ps, scheme, nil
}

// RunFedHybrid runs Algorithm 1 of the FedHybrid paper on a horizontal partition of
// d (one block per participant) for o.Rounds rounds from x_0 = x_i =
// lambda_i = 0 and returns the metrics of every round. On cancellation it
// returns the rounds done and ctx's error.
func RunFedHybrid(ctx context.Context, d *dataset.Dataset, blocks []partition.Block, o FedHybridOptions) ([]FedHybridRound, error) {
	ps, scheme, err := fedHybridSetup(d, blocks, o)
	if err != nil {
		return nil, fmt.Errorf("fedhybrid: %w", err)
	}
	n, l := len(ps), ps[0].loss
	fraction := o.Fraction
	if fraction == 0 {
		fraction = 1
	}
	bound := fedHybridBound(n)
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xfed4b))
	start := time.Now()

	// Round 0: every participant seals its initial mu x_i^0 - lambda_i^0,
	// so that the server holds a vector of each for rounds it sits out.
	last := make([]seal.Vec, n)
	for i, p := range ps {
		if last[i], err = fedHybridSeal(p.key, p.contribution(), bound); err != nil {
			return nil, fmt.Errorf("fedhybrid: participant %d: %w", i, err)
		}
	}
	x0, err := fedHybridConsensus(scheme, ps[0], last)
	if err != nil {
		return nil, fmt.Errorf("fedhybrid: %w", err)
	}

	var out []FedHybridRound
	var metricSecs float64
	active := make([]bool, n)
	errs := make([]error, n)
	for round := 1; round <= o.Rounds; round++ {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("fedhybrid: round %d: %w", round, err)
		}
		// One draw per participant in index order, as the HyFDCA
		// coordinator does, so a seed fixes participation.
		opener, count := -1, 0
		for i := range active {
			active[i] = fraction >= 1 || rng.Float64() < fraction
			if active[i] {
				count++
				if opener < 0 {
					opener = i
				}
			}
		}
		// Lines 3-11: x_0^k goes to the active participants, which update
		// and seal in parallel (each with its own key).
		var wg sync.WaitGroup
		for i, p := range ps {
			if !active[i] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.step(x0)
				if errs[i] == nil {
					var v seal.Vec
					if v, errs[i] = fedHybridSeal(p.key, p.contribution(), bound); errs[i] == nil {
						last[i] = v
					}
				}
			}()
		}
		wg.Wait()
		for i, e := range errs {
			if e != nil {
				return out, fmt.Errorf("fedhybrid: round %d: participant %d: %w", round, i, e)
			}
		}
		// Line 12, on sealed vectors: a round without participants
		// changes nothing.
		if opener >= 0 {
			if x0, err = fedHybridConsensus(scheme, ps[opener], last); err != nil {
				return out, fmt.Errorf("fedhybrid: round %d: %w", round, err)
			}
		}
		t := time.Now()
		primal, trainAcc, heldAcc := fedHybridObjectives(d, l, o.Lambda, x0)
		metricSecs += time.Since(t).Seconds()
		out = append(out, FedHybridRound{
			Round: round, Primal: primal, TrainAcc: trainAcc, HeldAcc: heldAcc, Active: count,
			Seconds: time.Since(start).Seconds() - metricSecs, W: append([]float64(nil), x0...),
		})
	}
	return out, nil
}

// fedHybridConsensus is line 12 / (3.8): the server adds the participants'
// sealed mu x_i - lambda_i without a key (AddInto leaves the stored
// vectors intact for rounds their owners sit out); participant opener
// opens the sum and divides by mu n, after opening, and x_0 is what the
// server then sends out.
func fedHybridConsensus(scheme seal.Scheme, opener *fedHybridParticipant, last []seal.Vec) ([]float64, error) {
	sum := seal.Vec{}
	for i, v := range last {
		if err := seal.AddInto(scheme, sum, v); err != nil {
			return nil, fmt.Errorf("server: add participant %d: %w", i, err)
		}
	}
	s, err := fedHybridOpen(opener.key, sum, len(opener.x))
	if err != nil {
		return nil, fmt.Errorf("participant %d: %w", opener.index, err)
	}
	scale := opener.mu * float64(len(last))
	for j := range s {
		s[j] /= scale
	}
	return s, nil
}
