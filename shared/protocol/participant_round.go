package protocol

import (
	"fmt"
	"math"

	"github.com/hyfed/hyfed/shared/seal"
)

// primal returns hat_w_k = sum over training samples of alpha_n x_{k,n}.
func (p *Participant) primal() []float64 {
	hw := make([]float64, len(p.block.Features))
	for _, i := range p.train {
		p.block.X.AddRowTo(i, p.alpha[i], hw)
	}
	return hw
}

func (p *Participant) onRefresh(m Message) ([]Message, error) {
	a, err := seal.OpenSlots(p.key, m.Sealed, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: refresh: %w", err)
	}
	for i := range a {
		if p.block.Heldout[i] {
			a[i] = 0
		}
	}
	p.alpha, p.pending, p.hw = a, nil, nil
	cfg := p.setup.Config
	switch {
	case !cfg.SealPrimal:
		return []Message{{Kind: KindPrimal, Round: m.Round, HatW: p.primal()}}, nil
	case cfg.synced():
		// The server's w already holds this client's share (see the
		// coordinator's refresh): acknowledge only.
		return []Message{{Kind: KindPrimal, Round: m.Round}}, nil
	}
	v, err := p.sealFeatures(p.primal())
	if err != nil {
		return nil, fmt.Errorf("participant: primal: %w", err)
	}
	return []Message{{Kind: KindPrimal, Round: m.Round, Sealed: v}}, nil
}

// featureSpan is the span of a vector in the feature layout: every feature
// (the participants' shares of a chunk are summed, and each holds others).
func (p *Participant) featureSpan() []int { return seal.Span(p.block.NumFeatures) }

// sealFeatures seals v/(lambda N), a vector on the block's features, in the
// feature layout (slot = global feature index): the client's share of w or
// of the round's direction u, for the server to add up (SealPrimal).
func (p *Participant) sealFeatures(v []float64) (seal.Vec, error) {
	s := make([]float64, len(v))
	for j, x := range v {
		s[j] = x / p.lambdaN
	}
	return seal.SealSlots(p.key, p.block.Features, s, p.featureSpan())
}

// directionPart keeps the round's direction d (per local sample) and
// returns the block's share of dw = X^T d (sealed per feature under
// SealPrimal) with the conjugate change of the reported groups.
func (p *Participant) directionPart(round int, d []float64, report []bool) (Message, error) {
	dw, dconj := p.dirShare(d, nil, report)
	for i := range d {
		if p.block.Heldout[i] {
			d[i] = 0
		}
	}
	p.pending = d
	if p.setup.Config.SealPrimal {
		v, err := p.sealFeatures(dw)
		if err != nil {
			return Message{}, fmt.Errorf("participant: direction: %w", err)
		}
		return Message{Kind: KindDirPart, Round: round, Sealed: v, DConj: dconj}, nil
	}
	return Message{Kind: KindDirPart, Round: round, DW: dw, DConj: dconj}, nil
}

func (p *Participant) onWeights(m Message) ([]Message, error) {
	switch {
	case m.Follow && (len(m.W) != 0 || m.Full):
		return nil, fmt.Errorf("participant: weights: w to follow and %d values", len(m.W))
	case m.Follow && m.Applied && len(p.u) != len(p.block.Features):
		return nil, fmt.Errorf("participant: weights: a step to follow without this round's trial direction")
	case !m.Follow && len(m.W) != len(p.block.Features):
		return nil, fmt.Errorf("participant: weights: %d values for %d features", len(m.W), len(p.block.Features))
	}
	if m.Applied {
		for i := range p.pending {
			// The very numbers the group's reporter sealed for the
			// server's copy (onApply): both copies stay equal.
			q := p.increment(i, m.Gamma)
			p.alpha[i] += q
			if p.hw != nil && q != 0 {
				p.block.X.AddRowTo(i, q, p.hw)
			}
		}
		// w moved whether or not this client's samples did (a client with
		// no updating group has no direction but must still follow w).
		for i, t := range p.trial {
			p.ip[i] += m.Gamma * t
			p.ipErr[i] += m.Gamma * p.roundingBound(i)
		}
	}
	p.pending, p.trial = nil, nil
	switch {
	case !m.Follow:
		copy(p.w, m.W)
	case m.Applied:
		stepW(p.w, p.u, m.Gamma) // as the server moves its w
	}
	if !m.Full {
		return nil, nil
	}
	p.hw = nil // afresh with the inner products, against drift
	ips := make([]float64, p.block.N())
	for i := range ips {
		ips[i] = p.block.X.Dot(i, p.w)
	}
	v, err := seal.SealSlots(p.key, p.setup.Slots, ips, nil)
	if err != nil {
		return nil, fmt.Errorf("participant: inner products: %w", err)
	}
	return []Message{{Kind: KindIPPart, Round: m.Round, Sealed: v}}, nil
}

// increment returns what a step gamma adds to sample i's dual value:
// Quantize(gamma d_i), cut back where it would leave the feasible set
// (a y in [0, 1]). The direction is a sum of the holders' quantised
// shares, so it can overshoot a bound by the rounding (hinge steps clip
// to the bound: half of them ended 2^-28 beyond it); a dual value
// outside the set has no finite conjugate. 0, y and the dual values lie
// on the grid, so the cut increment does too, and every holder computes
// the same one from the same numbers.
func (p *Participant) increment(i int, gamma float64) float64 {
	q := seal.Quantize(gamma * p.pending[i])
	a, y := p.alpha[i], p.block.Y[i]
	switch b := (a + q) * y; {
	case b > 1:
		return y - a
	case b < 0:
		return -a
	}
	return q
}

// roundingBound is the most by which a sealed sum over sample i's holders
// can differ from the exact sum: each holder's share is rounded to the
// grid, by at most half a unit.
func (p *Participant) roundingBound(i int) float64 {
	return float64(p.setup.Holders[i]) * 0.5 / (1 << seal.FracBits)
}

// onApply seals the dual update increment(n, gamma) of the training samples
// of the groups this participant reports, for the server's sealed copy of
// the dual values.
func (p *Participant) onApply(m Message) ([]Message, error) {
	if p.pending == nil {
		return nil, fmt.Errorf("participant: apply for round %d without a direction", m.Round)
	}
	limit := 1.0
	if p.setup.Config.Step == StepBlock {
		// The server's step is at most the smallest of the groups'
		// limits, this client's among them (the slack: the division
		// that found it).
		limit = p.gammaMax * (1 + 1e-12)
	}
	if math.IsNaN(m.Gamma) || m.Gamma <= 0 || m.Gamma > limit {
		return nil, fmt.Errorf("participant: apply: step %v outside (0, %v]", m.Gamma, limit)
	}
	report := p.reportSet(m.Report)
	var slots []int
	var vals []float64
	for _, i := range p.train {
		if d := p.pending[i]; d != 0 && report[p.setup.Group[i]] {
			slots = append(slots, p.setup.Slots[i])
			vals = append(vals, p.increment(i, m.Gamma))
		}
	}
	v, err := seal.SealSlots(p.key, slots, vals, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: apply: %w", err)
	}
	return []Message{{Kind: KindApplied, Round: m.Round, Sealed: v}}, nil
}

// onTrial seals x_{k,n}.u_k for the round's primal direction u, so that
// the label holders can price candidate steps.
func (p *Participant) onTrial(m Message) ([]Message, error) {
	if len(m.W) != len(p.block.Features) {
		return nil, fmt.Errorf("participant: trial: %d values for %d features", len(m.W), len(p.block.Features))
	}
	if err := p.scaleGroups(m); err != nil {
		return nil, err
	}
	reply := Message{Kind: KindIPPart, Round: m.Round, Sealed: seal.Vec{}}
	p.u = append(p.u[:0], m.W...)
	zero := true
	for _, u := range m.W {
		zero = zero && u == 0
	}
	if zero {
		return []Message{reply}, nil
	}
	ts := make([]float64, p.block.N())
	for i := range ts {
		ts[i] = p.block.X.Dot(i, m.W)
	}
	v, err := seal.SealSlots(p.key, p.setup.Slots, ts, nil)
	if err != nil {
		return nil, fmt.Errorf("participant: trial: %w", err)
	}
	reply.Sealed = v
	return []Message{reply}, nil
}

// onIP opens summed inner products. Without a grid they are x_n.w; with a
// grid they are x_n.u and the reply prices every candidate step gamma:
// loss, conjugate and accuracy sums at x_n.w + gamma x_n.u and a_n + gamma d_n.
func (p *Participant) onIP(m Message) ([]Message, error) {
	vals, err := seal.OpenSlots(p.key, m.Sealed, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: inner products: %w", err)
	}
	if m.Alpha != nil {
		a, err := seal.OpenSlots(p.key, m.Alpha, p.setup.Slots)
		if err != nil {
			return nil, fmt.Errorf("participant: dual values: %w", err)
		}
		for i := range a {
			if p.block.Heldout[i] {
				a[i] = 0
			}
		}
		p.alpha, p.hw = a, nil
	}
	grid := m.Grid
	var t []float64
	if grid == nil {
		p.ip = vals
		p.ipErr = make([]float64, len(vals))
		for i := range vals {
			p.ipErr[i] = p.roundingBound(i)
		}
		grid = []float64{0}
	} else {
		t = vals
		p.trial = vals
	}
	r := Message{Kind: KindMetrics, Round: m.Round}
	r.GridLoss = make([]float64, len(grid))
	r.GridConj = make([]float64, len(grid))
	r.GridTrainOK = make([]int, len(grid))
	r.GridHeldOK = make([]int, len(grid))
	// Each reported or checked group's loss and conjugate sums, apart
	// (group-major rows of r.Group* and r.Check*).
	type row struct {
		check bool
		j     int
	}
	rows := map[int]row{}
	for j, g := range m.Report {
		rows[g] = row{false, j}
	}
	for j, g := range m.Check {
		if _, dup := rows[g]; dup {
			return nil, fmt.Errorf("participant: ip: group %d to report and to check", g)
		}
		rows[g] = row{true, j}
	}
	nr, nc := len(m.Report)*len(grid), len(m.Check)*len(grid)
	r.GroupLoss, r.GroupConj, r.CheckLoss, r.CheckConj = make([]float64, nr), make([]float64, nr), make([]float64, nc), make([]float64, nc)
	for i := range p.ip {
		rw, priced := rows[p.setup.Group[i]]
		if !priced || p.isExcluded(i) {
			continue
		}
		loss, conj := r.GroupLoss, r.GroupConj
		if rw.check {
			loss, conj = r.CheckLoss, r.CheckConj
		}
		loss, conj = loss[rw.j*len(grid):], conj[rw.j*len(grid):]
		y := p.block.Y[i]
		held := p.block.Heldout[i]
		switch {
		case rw.check:
		case held:
			r.HeldN++
		default:
			r.TrainN++
		}
		for gi, g := range grid {
			z := p.ip[i]
			if t != nil {
				z += g * t[i]
			}
			if ok := z*y > 0; ok && !rw.check && held {
				r.GridHeldOK[gi]++
			} else if ok && !rw.check {
				r.GridTrainOK[gi]++
			}
			if held {
				continue
			}
			// The loss at the exact margin is at most the loss at the
			// margin moved against the label by the rounding bound (both
			// losses fall as y z grows): a primal that is never below
			// P(w), so never below P*. (Accuracy keeps the margin as
			// opened: the bound has no sign to give.)
			e := p.ipErr[i]
			if t != nil {
				e += g * p.roundingBound(i)
			}
			l := p.loss.Value(z-y*e, y)
			a := p.alpha[i]
			if p.pending != nil && p.pending[i] != 0 {
				a += p.increment(i, g) // what the step would add
			}
			cj := p.loss.Conj(a, y)
			loss[gi] += l
			conj[gi] += cj
			if !rw.check {
				r.GridLoss[gi] += l
				r.GridConj[gi] += cj
			}
		}
	}
	r.GridWDot = p.wDots(grid, t != nil)
	for gi := range grid {
		if math.IsNaN(r.GridLoss[gi]) || math.IsNaN(r.GridConj[gi]) || math.IsNaN(r.GridWDot[gi]) {
			return nil, fmt.Errorf("participant: metrics are not finite")
		}
	}
	return []Message{r}, nil
}

// wDots returns, per candidate step g, this block's part of w_g . w(a_g)
// (Message.GridWDot): with hw the block's sum_n a_n x_{k,n} and the
// candidate adding q_n = increment(n, g) to a_n, it is
// (w + g u).hw + sum_n q_n x_{k,n}.(w + g u), over lambda N.
// Every client sends it, so the coordinator's dual is that of the dual
// values every party will hold, not of its own w: w moves by g u, the dual
// values by their quantised steps, and the two part by the rounding.
func (p *Participant) wDots(grid []float64, trial bool) []float64 {
	if p.hw == nil {
		p.hw = p.primal()
	}
	var u []float64
	if trial && len(p.u) == len(p.w) {
		u = p.u
	}
	wh, uh := 0.0, 0.0
	for j, h := range p.hw {
		wh += p.w[j] * h
		if u != nil {
			uh += u[j] * h
		}
	}
	type moved struct {
		i      int
		xw, xu float64
	}
	var ms []moved
	if p.pending != nil {
		for _, i := range p.train {
			if p.pending[i] != 0 {
				m := moved{i: i, xw: p.block.X.Dot(i, p.w)}
				if u != nil {
					m.xu = p.block.X.Dot(i, u)
				}
				ms = append(ms, m)
			}
		}
	}
	out := make([]float64, len(grid))
	for gi, g := range grid {
		if u == nil {
			g = 0 // no direction: the metrics of w itself
		}
		s := wh + g*uh
		for _, m := range ms {
			if q := p.increment(m.i, g); q != 0 {
				s += q * (m.xw + g*m.xu)
			}
		}
		out[gi] = s / p.lambdaN
	}
	return out
}

func (p *Participant) reportSet(groups []int) []bool {
	out := make([]bool, len(p.setup.GroupKeys))
	for _, g := range groups {
		if g >= 0 && g < len(out) {
			out[g] = true
		}
	}
	return out
}
