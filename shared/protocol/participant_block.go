package protocol

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/hyfed/hyfed/shared/gram"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/solve"
	"github.com/hyfed/hyfed/shared/vec"
)

// biasColumn returns the block's column of the federation's bias feature
// (Config.BiasFeature), or -1 if there is none or the block does not hold it.
func (p *Participant) biasColumn() int {
	cfg := p.setup.Config
	if cfg.BiasValue == 0 {
		return -1
	}
	if j, ok := slices.BinarySearch(p.block.Features, cfg.BiasFeature); ok {
		return j
	}
	return -1
}

// checkBias refuses a block whose bias feature is not the declared
// constant: its part of the Grams would be wrong.
func (p *Participant) checkBias() error {
	j := p.biasColumn()
	if j < 0 {
		return nil
	}
	cfg := p.setup.Config
	for i := 0; i < p.block.N(); i++ {
		if v := p.block.X.At(i, j); v != 0 && v != cfg.BiasValue {
			return fmt.Errorf("participant: setup: sample %s holds %v in the bias feature %d, not the federation's %v", p.block.IDs[i], v, cfg.BiasFeature, cfg.BiasValue)
		}
	}
	return nil
}

// violates reports whether sample i's dual value is not optimal for the
// current margin (its projected dual gradient beyond a small tolerance):
// LIBLINEAR's shrinking rule, which every holder evaluates alike.
func (p *Participant) violates(i int) bool {
	y := p.block.Y[i]
	b := p.alpha[i] * y
	yz := y * p.ip[i]
	if p.loss.Name() == "hinge" {
		g := yz - 1 // the gradient in b of the dual, minimised
		const tol = 1e-6
		return (g < -tol && b < 1) || (g > tol && b > 0)
	}
	if b <= 0 || b >= 1 {
		return true
	}
	return math.Abs(math.Log((1-b)/b)-yz) > 1e-4
}

// onGram picks the samples of each updating group and seals the block's
// partial Gram of them in the group's chunks.
func (p *Participant) onGram(m Message) ([]Message, error) {
	p.pending, p.picks, p.gramAt, p.gammaMax = nil, map[int][]int{}, map[int]int{}, math.Inf(1)
	p.own = map[int][]float64{}
	p.limits = map[int][2]float64{}
	if len(m.GramAt) != len(m.Groups) {
		return nil, fmt.Errorf("participant: gram: %d groups but %d Gram positions", len(m.Groups), len(m.GramAt))
	}
	h := blockPicks(p.setup.Config)
	cl := p.key.Scheme().ChunkLen()
	buf := make([]float64, len(p.block.Features))
	bias := p.biasColumn()
	var slots, span []int
	var vals []float64
	for j, g := range m.Groups {
		if g < 0 || g >= len(p.groupTrain) || m.GramAt[j] < 0 || m.GramAt[j] > DefaultLimits.MaxChunks {
			return nil, fmt.Errorf("participant: gram: bad group %d at chunk %d", g, m.GramAt[j])
		}
		if _, dup := p.picks[g]; dup {
			return nil, fmt.Errorf("participant: gram: group %d twice", g)
		}
		var cand []int
		for _, i := range p.groupTrain[g] {
			if p.violates(i) {
				cand = append(cand, i)
			}
		}
		picks := append([]int(nil), pick(cand, h, p.secret.PickSeed(p.setup.GroupKeys[g], m.Round))...)
		p.picks[g], p.gramAt[g] = picks, m.GramAt[j]
		if p.sole[g] { // the group's Gram is this participant's own: kept, not sealed
			p.own[g] = nil
			if !p.onRows(g, picks) {
				p.own[g] = p.ownGram(picks, buf, bias)
			}
			continue
		}
		// The packed upper triangle, row by row, from the group's first chunk.
		slot := m.GramAt[j] * cl
		hs := gramPicks(p.setup.Config, len(p.groupTrain[g]))
		span = slices.Grow(span, hs*(hs+1)/2)
		for t := range hs * (hs + 1) / 2 {
			span = append(span, slot+t)
		}
		part := p.partialGram(picks, buf, bias)
		for t, v := range part {
			slots = append(slots, slot+t)
			vals = append(vals, v)
		}
	}
	v, err := seal.SealSlots(p.key, slots, vals, span)
	if err != nil {
		return nil, fmt.Errorf("participant: gram: %w", err)
	}
	return []Message{{Kind: KindGramPart, Round: m.Round, Sealed: v}}, nil
}

// partialGram returns the packed upper triangle, row by row, of the picks'
// Gram on the participant's features, without the bias's part (public:
// every holder adds it alike); buf is scratch of the block's width.
func (p *Participant) partialGram(picks []int, buf []float64, bias int) []float64 {
	x := p.block.X
	out := make([]float64, 0, len(picks)*(len(picks)+1)/2)
	for a, i := range picks {
		clear(buf)
		x.AddRowTo(i, 1, buf)
		if bias >= 0 {
			buf[bias] = 0
		}
		for _, k := range picks[a:] {
			out = append(out, x.Dot(k, buf))
		}
	}
	return out
}

// ownGram is the partial Gram of a group the participant holds alone,
// quantized: what a sealed sum of it would open to.
func (p *Participant) ownGram(picks []int, buf []float64, bias int) []float64 {
	out := p.partialGram(picks, buf, bias)
	quantize(out)
	return out
}

// onGramSum opens each updating group's summed Gram and solves the group's
// subproblem. Under SolveOnce (the client is the group's solver) it seals
// the directions it found, quantized, for the server to hand to all of the
// group's holders (onDirection); otherwise it answers as onDirection does,
// with them.
func (p *Participant) onGramSum(m Message) ([]Message, error) {
	if len(m.Kappa) != len(m.Groups) {
		return nil, fmt.Errorf("participant: gram-sum: %d groups but %d kappas", len(m.Groups), len(m.Kappa))
	}
	if !(m.Sigma >= 1) {
		return nil, fmt.Errorf("participant: gram-sum: sigma %v below 1", m.Sigma)
	}
	shared := p.setup.Config.SharedDirections.Count()
	if shared > 0 && !(m.SigmaShared >= m.Sigma) {
		return nil, fmt.Errorf("participant: gram-sum: shared directions' scale %v below sigma %v", m.SigmaShared, m.Sigma)
	}
	once := p.setup.Config.SolveOnce()
	cl := p.key.Scheme().ChunkLen()
	d := make([]float64, p.block.N())
	var dCent []float64
	if m.Centered {
		dCent = make([]float64, p.block.N())
	}
	var solved []int // the samples whose directions this client sends (SolveOnce)
	for j, g := range m.Groups {
		picks, ok := p.picks[g]
		if !ok {
			return nil, fmt.Errorf("participant: gram-sum for group %d, which was not asked for its Gram this round", g)
		}
		kappa := m.Kappa[j]
		if !(kappa >= 1) {
			return nil, fmt.Errorf("participant: gram-sum: kappa %v below 1", kappa)
		}
		h := len(picks)
		if h == 0 {
			continue
		}
		packed, own := p.own[g]
		if own && packed == nil { // held alone, solved on its rows
			if kappa != 1 {
				return nil, fmt.Errorf("participant: gram-sum: kappa %v for group %d, which this participant holds alone", kappa, g)
			}
			delta, cent := p.solveRows(picks, m.Sigma, m.SigmaShared, m.Centered, once)
			for r, i := range picks {
				d[i] = delta[r]
				if m.Centered {
					dCent[i] = cent[r]
				}
			}
			solved = append(solved, picks...)
			continue
		}
		if !own {
			base := p.gramAt[g] * cl
			slots := make([]int, h*(h+1)/2)
			for t := range slots {
				slots[t] = base + t
			}
			var err error
			if packed, err = seal.OpenSlots(p.key, m.Sealed, slots); err != nil {
				return nil, fmt.Errorf("participant: gram-sum: group %d: %w", g, err)
			}
		}
		a := make([]float64, h*h)
		b2 := p.setup.Config.BiasValue * p.setup.Config.BiasValue
		t := 0
		for r := 0; r < h; r++ {
			for s := r; s < h; s++ {
				v := kappa*packed[t] + b2
				a[r*h+s], a[s*h+r] = v, v
				t++
			}
		}
		sub := p.sub(picks)
		var delta []float64
		if shared > 0 {
			delta = solve.Group(sub, solve.NewGram(gram.Split(a, h, shared, m.Sigma, m.SigmaShared), h), 1, nil, nil)
		} else {
			delta = solve.Group(sub, solve.NewGram(a, h), m.Sigma, nil, nil)
		}
		if once {
			quantize(delta) // what the other holders get
		}
		for r, i := range picks {
			d[i] = delta[r]
		}
		if m.Centered {
			// The second direction, from where the first leads (its
			// dual values, and the margins its own change of w gives
			// them: the other groups' moves are the server's to price,
			// not sigma''s), against the Gram of the picks less their
			// mean row (group steps).
			zoff := make([]float64, h)
			for r := range h {
				zoff[r] = vec.Dot(a[r*h:(r+1)*h], delta) / p.lambdaN
			}
			solve.CenterGram(a, h)
			cent := solve.Group(sub, solve.NewGram(a, h), m.Sigma, delta, zoff)
			if once {
				quantize(cent)
			}
			for r, i := range picks {
				dCent[i] = cent[r]
			}
		}
		solved = append(solved, picks...)
	}
	if !once {
		return p.blockDirection(m.Round, m.Groups, d, dCent, p.reportSet(m.Report))
	}
	p.kept = &keptSolve{round: m.Round, groups: map[int]bool{}, d: d, cent: dCent}
	for _, g := range m.Groups {
		p.kept.groups[g] = true
	}
	out := Message{Kind: KindSolved, Round: m.Round}
	slots := make([]int, len(solved))
	vals := make([]float64, len(solved))
	for x, i := range solved {
		slots[x], vals[x] = p.setup.Slots[i], d[i]
	}
	var err error
	if out.Sealed, err = seal.SealSlots(p.key, slots, vals, p.setup.Slots); err != nil {
		return nil, fmt.Errorf("participant: solved: %w", err)
	}
	if m.Centered {
		for x, i := range solved {
			vals[x] = dCent[i]
		}
		if out.Alpha, err = seal.SealSlots(p.key, slots, vals, p.setup.Slots); err != nil {
			return nil, fmt.Errorf("participant: solved: %w", err)
		}
	}
	return []Message{out}, nil
}

// quantize rounds v in place to the fixed-point grid of sealed values.
func quantize(v []float64) {
	for i, x := range v {
		v[i] = seal.Quantize(x)
	}
}

// onBlockDirection (SolveOnce): the directions the groups' solvers found,
// sealed, on the client's samples. It answers as the solver would have.
func (p *Participant) onBlockDirection(m Message) ([]Message, error) {
	kept := p.kept
	p.kept = nil
	if kept != nil && (kept.round != m.Round || (m.Centered && kept.cent == nil)) {
		kept = nil
	}
	skip := kept.chunks(p)
	sealed, alpha := withoutChunks(m.Sealed, skip), withoutChunks(m.Alpha, skip)
	d, err := seal.OpenSlots(p.key, sealed, p.setup.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: direction: %w", err)
	}
	var dCent []float64
	if m.Centered {
		if dCent, err = seal.OpenSlots(p.key, alpha, p.setup.Slots); err != nil {
			return nil, fmt.Errorf("participant: direction: %w", err)
		}
	} else if len(m.Alpha) > 0 {
		return nil, fmt.Errorf("participant: direction: a centered direction in a round without group steps")
	}
	kept.fill(p, d, dCent)
	for _, g := range m.Groups {
		if _, ok := p.picks[g]; !ok {
			return nil, fmt.Errorf("participant: direction for group %d, which was not asked for its Gram this round", g)
		}
	}
	// Only the picks move: the rest of a group's slots must open to zero.
	picked := make([]bool, p.block.N())
	for _, g := range m.Groups {
		for _, i := range p.picks[g] {
			picked[i] = true
		}
	}
	for i := range d {
		if !picked[i] && (d[i] != 0 || (dCent != nil && dCent[i] != 0)) {
			return nil, fmt.Errorf("participant: direction: sample %s moves but was not picked", p.block.IDs[i])
		}
	}
	return p.blockDirection(m.Round, m.Groups, d, dCent, p.reportSet(m.Report))
}

// keptSolve is what a group's solver sealed (SolveOnce): the direction
// message brings the same chunks back, and they open to these values bit
// for bit (the solver quantized them as sealing does), so the solver keeps
// them instead of opening its own chunks: two openings a round per solver.
type keptSolve struct {
	round   int
	groups  map[int]bool // local groups solved
	d, cent []float64    // per local sample, quantized (cent: nil without group steps)
}

// chunks returns the layout chunks of the kept groups (nil when nothing
// is kept). A chunk holds one group's samples (seal.PadLayout).
func (k *keptSolve) chunks(p *Participant) map[int]bool {
	if k == nil {
		return nil
	}
	cl := p.key.Scheme().ChunkLen()
	out := map[int]bool{}
	for i, s := range p.setup.Slots {
		if k.groups[p.setup.Group[i]] {
			out[s/cl] = true
		}
	}
	return out
}

// withoutChunks returns v less the given chunks (v itself when there are
// none to leave out).
func withoutChunks(v seal.Vec, skip map[int]bool) seal.Vec {
	if len(skip) == 0 || len(v) == 0 {
		return v
	}
	out := maps.Clone(v)
	for ci := range skip {
		delete(out, ci)
	}
	return out
}

// fill sets the kept groups' samples of d and dCent (opened without their
// chunks) to the kept values.
func (k *keptSolve) fill(p *Participant, d, dCent []float64) {
	if k == nil {
		return
	}
	for i := range d {
		if k.groups[p.setup.Group[i]] {
			d[i] = k.d[i] + 0 // + 0: BGV opens a -0 as 0
			if dCent != nil {
				dCent[i] = k.cent[i] + 0
			}
		}
	}
}

// blockDirection answers a block step's direction: the groups' directions
// d (and dCent under group steps) per local sample, nonzero on the picks
// only. It keeps each group's step limits (the largest step that keeps
// its picks' dual values feasible, along d, and along dCent from d) and
// returns the block's share of dw with the reported groups' limits.
func (p *Participant) blockDirection(round int, groups []int, d, dCent []float64, report []bool) ([]Message, error) {
	p.gammaMax = math.Inf(1)
	gmax, gCent := math.Inf(1), math.Inf(1)
	p.centered = nil
	for _, g := range groups {
		picks := p.picks[g]
		p.limits[g] = [2]float64{math.Inf(1), math.Inf(1)}
		if len(picks) == 0 {
			continue
		}
		delta := make([]float64, len(picks))
		for r, i := range picks {
			delta[r] = d[i]
		}
		limit := p.stepLimit(picks, delta)
		p.gammaMax = math.Min(p.gammaMax, limit)
		p.limits[g] = [2]float64{limit, math.Inf(1)}
		if report[g] {
			gmax = math.Min(gmax, limit)
		}
		if dCent != nil {
			cent := make([]float64, len(picks))
			for r, i := range picks {
				cent[r] = dCent[i]
			}
			climit := p.stepLimitFrom(picks, cent, delta)
			p.limits[g] = [2]float64{limit, climit}
			if report[g] {
				gCent = math.Min(gCent, climit)
			}
		}
	}
	out, err := p.directionPart(round, d, report)
	if err != nil {
		return nil, err
	}
	if !math.IsInf(gmax, 1) {
		out.GammaMax = math.Min(gmax, maxBlockStep)
	}
	if dCent != nil {
		out.DWCentered, out.DConjCentered = p.dirShare(dCent, d, report)
		out.GammaMaxCentered = math.Min(gCent, maxBlockStep)
		for i := range dCent {
			if p.block.Heldout[i] {
				dCent[i] = 0
			}
		}
		p.centered = dCent
	}
	return []Message{out}, nil
}

// stepLimit is the largest step along the picks' changes delta that keeps
// their dual values feasible (a y in [0, 1]).
func (p *Participant) stepLimit(picks []int, delta []float64) float64 {
	return p.stepLimitFrom(picks, delta, nil)
}

// stepLimitFrom is stepLimit from the dual values moved by base (per
// pick; nil: none).
func (p *Participant) stepLimitFrom(picks []int, delta, base []float64) float64 {
	limit := math.Inf(1)
	for r, i := range picks {
		y := p.block.Y[i]
		a := p.alpha[i]
		if base != nil {
			a += base[r]
		}
		db, b := delta[r]*y, a*y
		switch {
		case db > 0:
			limit = math.Min(limit, (1-b)/db)
		case db < 0:
			limit = math.Min(limit, b/(-db))
		}
	}
	return limit
}

// dirShare is the block's share of dw = X^T d and the conjugate change of
// the reported groups along d from the dual values moved by base (per
// sample; nil: the dual values as held), nothing kept.
func (p *Participant) dirShare(d, base []float64, report []bool) ([]float64, float64) {
	dw := make([]float64, len(p.block.Features))
	dconj := 0.0
	for _, i := range p.train {
		if d[i] == 0 {
			continue
		}
		p.block.X.AddRowTo(i, d[i], dw)
		if report[p.setup.Group[i]] {
			y, a := p.block.Y[i], p.alpha[i]
			if base != nil {
				a += base[i]
			}
			dconj += p.loss.Conj(a+d[i], y) - p.loss.Conj(a, y)
		}
	}
	return dw, dconj
}

// sub is group's subproblem at the picks, for solve.Group.
func (p *Participant) sub(picks []int) solve.Sub {
	s := solve.Sub{Loss: p.loss, LambdaN: p.lambdaN, Y: make([]float64, len(picks)), Alpha: make([]float64, len(picks)), Z: make([]float64, len(picks))}
	for x, i := range picks {
		s.Y[x], s.Alpha[x], s.Z[x] = p.block.Y[i], p.alpha[i], p.ip[i]
	}
	return s
}

// scaleGroups applies a trial message's group weights: the participant's
// direction on each named group's samples becomes x times its direction
// plus x' times its centered one, and the step the direction allows follows.
func (p *Participant) scaleGroups(m Message) error {
	if len(m.GroupScale) == 0 {
		return nil
	}
	if len(m.GroupScale) != len(m.Groups) || len(m.GroupCentered) != len(m.Groups) || p.pending == nil || p.centered == nil {
		return fmt.Errorf("participant: trial: %d+%d group weights for %d groups (directions held: %v, %v)",
			len(m.GroupScale), len(m.GroupCentered), len(m.Groups), p.pending != nil, p.centered != nil)
	}
	for j, g := range m.Groups {
		xa, xb := m.GroupScale[j], m.GroupCentered[j]
		if _, ok := p.limits[g]; !ok || !(xa >= 0) || !(xb >= 0) || g < 0 || g >= len(p.groupTrain) {
			return fmt.Errorf("participant: trial: weights %v, %v for group %d, which has no direction this round", xa, xb, g)
		}
		for _, i := range p.groupTrain[g] {
			u, v := xa*p.pending[i], xb*p.centered[i]
			p.pending[i] = u + v
			if math.Abs(u+v) <= 1e-12*(math.Abs(u)+math.Abs(v)) {
				// The two cancel (a pick that the first direction
				// moves off a bound and the second back onto it, at a
				// vertex of the server's triangle): what is left is
				// rounding, which could point out of the box.
				p.pending[i] = 0
			}
		}
	}
	p.centered = nil
	p.gammaMax = math.Inf(1)
	for _, i := range p.train {
		if d := p.pending[i]; d != 0 {
			y := p.block.Y[i]
			db, b := d*y, p.alpha[i]*y
			switch {
			case db > 0:
				p.gammaMax = math.Min(p.gammaMax, (1-b)/db)
			case db < 0:
				p.gammaMax = math.Min(p.gammaMax, b/(-db))
			}
		}
	}
	return nil
}
