package study

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/hyfed/hyfed/shared/gram"
)

// groupStep is one updating group's work in a round.
type groupStep struct {
	g     *group
	idx   []int     // the picks as problem sample indexes
	pos   []int     // the picks as positions in the group
	zz    []float64 // their margins
	a     []float64 // model Gram (H x H, row-major), sigma not applied
	d     []float64 // the group's direction (dual units)
	kappa float64
	gi    int       // group index
	corr  []float64 // per-pick margin corrections (cg option)
}

// round runs one round for the updating groups and returns the step size.
func (s *sim) round(upd []int, res *Result) float64 {
	if len(upd) == 0 {
		return 0
	}
	p := s.p
	ku := float64(len(upd))
	if s.m.s1 {
		ku = 1
	}
	if s.m.as && s.sigma > 0 {
		ku = math.Min(ku, s.sigma)
	}
	steps := make([]*groupStep, 0, len(upd))
	if s.m.ak && s.kappa == nil {
		s.kappa = make([]float64, len(p.Groups))
		for g := range s.kappa {
			s.kappa[g] = float64(len(p.Groups[g].holders))
		}
	}
	for _, g := range upd {
		gr := &p.Groups[g]
		st := &groupStep{g: gr, gi: g, pos: s.picks(gr), kappa: 1}
		for _, r := range st.pos {
			i := gr.samples[r]
			st.idx = append(st.idx, i)
			st.zz = append(st.zz, s.z[i])
		}
		st.d = make([]float64, len(st.idx))
		if len(st.idx) == 0 {
			continue
		}
		if s.m.needGram {
			bias := -1
			if s.m.biasPriced || s.m.pb {
				bias = p.BiasFeature
			}
			if s.m.oracle {
				st.a = s.trueGram(st.idx)
			} else {
				st.a = s.partialGram(gr, st.pos, bias)
			}
			if s.m.safeBound && !gr.blocks {
				st.kappa = float64(len(gr.holders))
			}
			if s.m.ak && !gr.blocks {
				st.kappa = s.kappa[g]
			}
			if s.m.pb && bias >= 0 && !s.m.biasPriced {
				// kappa scales the holders' part only: fold it in here.
				c2 := p.BiasValue * p.BiasValue
				for k := range st.a {
					st.a[k] = st.kappa*st.a[k] + c2
				}
				st.kappa = 1
			}
		}
		steps = append(steps, st)
		res.Updates += len(st.idx)
	}
	if s.m.joint && len(steps) > 1 {
		all := &groupStep{kappa: 1}
		for _, st := range steps {
			all.idx = append(all.idx, st.idx...)
			all.zz = append(all.zz, st.zz...)
		}
		all.a = s.trueGram(all.idx)
		all.d = make([]float64, len(all.idx))
		s.solveQP(all, 1, 0, 300)
		off := 0
		for _, st := range steps {
			copy(st.d, all.d[off:off+len(st.d)])
			off += len(st.d)
		}
		steps = []*groupStep{all}
	}
	switch {
	case s.m.joint:
	case s.m.core == "base":
		for _, st := range steps {
			for k, i := range st.idx {
				st.d[k] = p.Loss.Step(s.alpha[i], p.Y[i], st.zz[k], p.Q[i], s.lambdaN)
			}
		}
	case s.m.biasPriced && p.BiasFeature >= 0:
		s.biasPriced(steps, ku)
	case s.m.ms:
		km := float64(len(upd))
		for _, st := range steps {
			orig := st.a
			if s.m.split > 0 {
				st.a = gram.Split(orig, len(st.idx), s.m.split, ku*st.kappa, km*st.kappa)
			} else if s.m.msTop != 0 {
				st.a = eigenSplit(orig, len(st.idx), s.m.msTop, ku*st.kappa, km*st.kappa)
			} else {
				st.a = meanSplit(orig, len(st.idx), ku*st.kappa, km*st.kappa)
			}
			s.solveQP(st, 1, 0, 300)
			st.a = orig
		}
		s.model = func(st *groupStep) float64 { return ku * st.kappa }
	default:
		for _, st := range steps {
			s.solveQP(st, ku*st.kappa, 0, 300)
		}
		s.model = func(st *groupStep) float64 { return ku * st.kappa }
	}
	if s.m.co && p.BiasFeature >= 0 {
		s.coarse(steps)
		s.trips++
	}
	if s.m.fam && p.BiasFeature >= 0 {
		s.family(steps, ku)
	}
	if s.m.cg > 0 {
		s.refine(steps, ku)
	}
	if s.m.ak {
		s.measureKappa(steps)
	}
	// The combined direction: u = X^T d / (lambda N), per feature over holders.
	u := make([]float64, p.M)
	for _, st := range steps {
		for k, i := range st.idx {
			if st.d[k] != 0 {
				addTo(p.Full[i], st.d[k]/s.lambdaN, u)
			}
		}
	}
	if s.m.as && len(steps) > 1 {
		// The server's coupling measure from the per-group directions.
		sum := 0.0
		ug := make([]float64, p.M)
		for _, st := range steps {
			for j := range ug {
				ug[j] = 0
			}
			for k, i := range st.idx {
				if st.d[k] != 0 {
					addTo(p.Full[i], st.d[k], ug)
				}
			}
			sum += dotVec(ug, ug)
		}
		if sum > 0 {
			ratio := dotVec(u, u) * s.lambdaN * s.lambdaN / sum
			s.sigma = math.Max(1, math.Min(float64(len(steps)), ratio))
		}
	}
	// x_i.u for every sample: one sealed sum per group (today's round has it).
	v := make([]float64, p.N)
	for i := range v {
		v[i] = dotDense(p.Full[i], u)
	}
	gamma := 1.0
	if s.m.ls {
		gamma = s.stepSize(steps, u, v)
	}
	if gamma == 0 {
		return 0
	}
	for _, st := range steps {
		for k, i := range st.idx {
			s.alpha[i] += gamma * st.d[k]
			// Keep b = alpha y in [0, 1] against rounding.
			b := s.alpha[i] * p.Y[i]
			if b < 0 {
				s.alpha[i] = 0
			} else if b > 1 {
				s.alpha[i] = p.Y[i]
			}
		}
	}
	for j := range s.w {
		s.w[j] += gamma * u[j]
	}
	for i := range s.z {
		s.z[i] += gamma * v[i]
	}
	if s.m.co2 && p.BiasFeature >= 0 && len(steps) > 1 {
		s.coarseStage(steps)
		s.trips += 2
	}
	return gamma
}

// partialGram returns the sum over the group's holders of their partial
// Grams of the picks (one secure sum), leaving out the feature bias (-1:
// none).
func (s *sim) partialGram(gr *group, pos []int, bias int) []float64 {
	h := len(pos)
	a := make([]float64, h*h)
	buf := s.buf
	for _, hd := range gr.holders {
		for x := 0; x < h; x++ {
			rx := hd.parts[pos[x]]
			for k, j := range rx.idx {
				if int(j) != bias {
					buf[j] = rx.val[k]
				}
			}
			for y := x; y < h; y++ {
				v := dotDense(hd.parts[pos[y]], buf)
				a[x*h+y] += v
				if y != x {
					a[y*h+x] += v
				}
			}
			for _, j := range rx.idx {
				buf[j] = 0
			}
		}
	}
	return a
}

// solveQP maximises, by coordinate ascent from st.d, the group's model
// sum_i -l*(-(a_i+d_i)) - d.(zz+shift) - sigma/(2 lambda N) d^T A d (all
// times 1/N), i.e. sequential SDCA on the picks against the model Gram.
func (s *sim) solveQP(st *groupStep, sigma, shift float64, passes int) {
	p := s.p
	h := len(st.idx)
	ad := make([]float64, h)
	for x := 0; x < h; x++ {
		if st.d[x] == 0 {
			continue
		}
		row := st.a[x*h : (x+1)*h]
		for y, v := range row {
			ad[y] += st.d[x] * v
		}
	}
	for pass := 0; pass < passes; pass++ {
		maxd := 0.0
		for c := 0; c < h; c++ {
			x := c
			if pass%2 == 1 {
				x = h - 1 - c
			}
			i := st.idx[x]
			q := sigma * st.a[x*h+x]
			if q <= 0 {
				q = 1e-12
			}
			zi := st.zz[x] + shift + sigma*ad[x]/s.lambdaN
			if st.corr != nil {
				zi += st.corr[x]
			}
			dl := p.Loss.Step(s.alpha[i]+st.d[x], p.Y[i], zi, q, s.lambdaN)
			if dl == 0 {
				continue
			}
			st.d[x] += dl
			row := st.a[x*h : (x+1)*h]
			for y, v := range row {
				ad[y] += dl * v
			}
			maxd = math.Max(maxd, math.Abs(dl))
		}
		if maxd < 1e-8 {
			break
		}
	}
}

// biasPriced solves the groups' models with the public bias part of the
// Gram coupled exactly across groups: every group solves its model without
// the bias part and with its margins shifted by a price mu; the server finds
// the mu at which mu = c^2 s(mu)/(lambda N), s = the sum of all groups'
// dual changes (the bias share of dw, which it sees per holder anyway).
// Each evaluation after the first is one more trip of K scalars.
func (s *sim) biasPriced(steps []*groupStep, ku float64) {
	c2 := s.p.BiasValue * s.p.BiasValue
	eval := func(mu float64) float64 {
		sum := 0.0
		for _, st := range steps {
			s.solveQP(st, ku*st.kappa, mu, 300)
			for _, v := range st.d {
				sum += v
			}
		}
		return mu - c2*sum/s.lambdaN
	}
	f0 := eval(0)
	if f0 == 0 {
		return
	}
	// f is increasing in mu; f(0) = -c^2 s0/(lambda N) brackets the root
	// in [0, -f0] (or [-f0, 0]).
	lo, hi := 0.0, -f0
	flo := f0
	fhi := eval(hi)
	s.trips++
	if lo > hi {
		lo, hi, flo, fhi = hi, lo, fhi, flo
	}
	side := 0
	for it := 0; it < 30; it++ {
		if fhi == flo {
			break
		}
		mu := (lo*fhi - hi*flo) / (fhi - flo) // regula falsi (Illinois)
		f := eval(mu)
		s.trips++
		if math.Abs(f) <= 1e-6*math.Abs(f0) || hi-lo <= 1e-12*math.Max(1, math.Abs(hi)) {
			return
		}
		if f < 0 {
			lo, flo = mu, f
			if side == -1 {
				fhi /= 2
			}
			side = -1
		} else {
			hi, fhi = mu, f
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
}

// stepSize returns the step along the combined direction: the exact dual
// maximiser on the feasible segment, or (pp) the product's primal-priced
// choice among candidates.
func (s *sim) stepSize(steps []*groupStep, u, v []float64) float64 {
	p := s.p
	n := float64(p.N)
	wu, uu := 0.0, 0.0
	for j := range u {
		wu += s.w[j] * u[j]
		uu += u[j] * u[j]
	}
	gmax := math.Inf(1)
	for _, st := range steps {
		for k, i := range st.idx {
			db := st.d[k] * p.Y[i]
			b := s.alpha[i] * p.Y[i]
			if db > 0 {
				gmax = math.Min(gmax, (1-b)/db)
			} else if db < 0 {
				gmax = math.Min(gmax, b/(-db))
			}
		}
	}
	if uu == 0 {
		return 0
	}
	gmax = math.Min(gmax, 1e6)
	// gain(gamma) = conj change / N - lambda gamma w.u - lambda/2 gamma^2 u.u
	gain := func(g float64) float64 {
		c := 0.0
		for _, st := range steps {
			for k, i := range st.idx {
				c += p.Loss.Conj(s.alpha[i]+g*st.d[k], p.Y[i]) - p.Loss.Conj(s.alpha[i], p.Y[i])
			}
		}
		return c/n - p.Lambda*g*wu - p.Lambda/2*g*g*uu
	}
	var best float64
	if p.Loss.Name() == "hinge" {
		lin := 0.0
		for _, st := range steps {
			for k, i := range st.idx {
				lin += st.d[k] * p.Y[i]
			}
		}
		best = math.Max(0, math.Min(gmax, (lin/n-p.Lambda*wu)/(p.Lambda*uu)))
	} else {
		// Concave: bisect its derivative (the product prices a grid).
		deriv := func(g float64) float64 {
			c := 0.0
			for _, st := range steps {
				for k, i := range st.idx {
					b := (s.alpha[i] + g*st.d[k]) * p.Y[i]
					b = math.Min(math.Max(b, 1e-300), 1-1e-16)
					c += st.d[k] * p.Y[i] * math.Log((1-b)/b)
				}
			}
			return c/n - p.Lambda*wu - p.Lambda*g*uu
		}
		lo, hi := 0.0, gmax
		if deriv(lo) <= 0 {
			return 0
		}
		if deriv(hi) >= 0 {
			best = hi
		} else {
			for it := 0; it < 60; it++ {
				mid := (lo + hi) / 2
				if deriv(mid) > 0 {
					lo = mid
				} else {
					hi = mid
				}
			}
			best = (lo + hi) / 2
		}
	}
	if !s.m.pp || best == 0 {
		return best
	}
	gBest := gain(best)
	top := math.Min(gmax, 2*best)
	pick, pval := best, s.primalAt(best, u, v)
	for j := 1; j <= 8; j++ {
		g := top * float64(j) / 8
		if gain(g) < gBest/2 {
			continue
		}
		if pv := s.primalAt(g, u, v); pv < pval {
			pick, pval = g, pv
		}
	}
	return pick
}

// primalAt is P(w + g u) from the margins and x.u (exact sums).
func (s *sim) primalAt(g float64, u, v []float64) float64 {
	p := s.p
	l := 0.0
	for i := 0; i < p.N; i++ {
		l += p.Loss.Value(s.z[i]+g*v[i], p.Y[i])
	}
	ww := 0.0
	for j := range u {
		x := s.w[j] + g*u[j]
		ww += x * x
	}
	return p.Lambda/2*ww + l/float64(p.N)
}

// refine runs s.m.cg majorise-minimise corrections on every group's model:
// the exact Gram-vector product G d of the group's picks is a sum over its
// holders (each sends its block's share of X^T d, the server adds them per
// feature and returns v; each seals x_i.v for the picks, the group opens
// the sums): two trips. The model is re-solved with its margins corrected
// by sigma (G d - A d)/(lambda N), so that a fixed point solves the exact
// group problem; with the safe bound A >= G every pass raises the exact
// group objective.
func (s *sim) refine(steps []*groupStep, ku float64) {
	if s.model == nil {
		return
	}
	p := s.p
	v := make([]float64, p.M)
	for it := 0; it < s.m.cg; it++ {
		for _, st := range steps {
			h := len(st.idx)
			for j := range v {
				v[j] = 0
			}
			for k, i := range st.idx {
				if st.d[k] != 0 {
					addTo(p.Full[i], st.d[k], v)
				}
			}
			sm := s.model(st)
			if st.corr == nil {
				st.corr = make([]float64, h)
			}
			for x := 0; x < h; x++ {
				ad := 0.0
				row := st.a[x*h : (x+1)*h]
				for y, a := range row {
					ad += a * st.d[y]
				}
				gd := dotDense(p.Full[st.idx[x]], v)
				st.corr[x] = (ku*gd - sm*ad) / s.lambdaN
			}
			s.solveQP(st, sm, 0, 300)
		}
		s.trips += 2
	}
	for _, st := range steps {
		st.corr = nil
	}
}

// trueGram is the Gram of the picks from their full rows (oracle).
func (s *sim) trueGram(idx []int) []float64 {
	h := len(idx)
	a := make([]float64, h*h)
	for x := 0; x < h; x++ {
		rx := s.p.Full[idx[x]]
		for k, j := range rx.idx {
			s.buf[j] = rx.val[k]
		}
		for y := x; y < h; y++ {
			v := dotDense(s.p.Full[idx[y]], s.buf)
			a[x*h+y], a[y*h+x] = v, v
		}
		for _, j := range rx.idx {
			s.buf[j] = 0
		}
	}
	return a
}

// measureKappa sets each dealt group's next kappa from its direction:
// ||X^T d||^2 over sum_k ||X_k^T d||^2, the bias part left out of both.
func (s *sim) measureKappa(steps []*groupStep) {
	p := s.p
	v := make([]float64, p.M)
	for _, st := range steps {
		if st.g.blocks {
			continue
		}
		for j := range v {
			v[j] = 0
		}
		for k, i := range st.idx {
			addTo(p.Full[i], st.d[k], v)
		}
		if p.BiasFeature >= 0 {
			v[p.BiasFeature] = 0
		}
		full := dotVec(v, v)
		part := 0.0
		for _, hd := range st.g.holders {
			for j := range v {
				v[j] = 0
			}
			for k, r := range st.pos {
				addTo(hd.parts[r], st.d[k], v)
			}
			if p.BiasFeature >= 0 {
				v[p.BiasFeature] = 0
			}
			part += dotVec(v, v)
		}
		if part > 0 {
			s.kappa[st.gi] = math.Min(float64(len(st.g.holders)), math.Max(1, full/part))
		}
	}
}

// meanSplit returns sr A + (sm - sr) g g^T / (1^T g), g = A 1: the model
// Gram with the direction of the picks' mean row priced at sm and the rest
// at sr (ms option). With X the picks' rows, X^T d's component along their
// mean row m = X^T 1 / h is (A 1).d / sqrt(1^T A 1).
func meanSplit(a []float64, h int, sr, sm float64) []float64 {
	g := make([]float64, h)
	t := 0.0
	for x := 0; x < h; x++ {
		for y := 0; y < h; y++ {
			g[x] += a[x*h+y]
		}
		t += g[x]
	}
	out := make([]float64, h*h)
	for x := 0; x < h; x++ {
		for y := 0; y < h; y++ {
			out[x*h+y] = sr * a[x*h+y]
			if t > 0 {
				out[x*h+y] += (sm - sr) * g[x] * g[y] / t
			}
		}
	}
	return out
}

// eigenSplit is meanSplit with the picks' top r principal directions (the
// Gram's top eigenpairs) priced at sm instead of the mean row (mseN).
func eigenSplit(a []float64, h, r int, sr, sm float64) []float64 {
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(h, append([]float64(nil), a...)), true) {
		return meanSplit(a, h, sr, sm)
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	out := make([]float64, h*h)
	for k := range out {
		out[k] = sr * a[k]
	}
	mean := 0.0
	for _, l := range vals {
		mean += l / float64(h)
	}
	for j := h - 1; j >= 0 && (r < 0 || j >= h-r); j-- { // ascending order
		l := vals[j]
		if l <= 0 || r < 0 && l <= mean {
			break
		}
		for x := 0; x < h; x++ {
			vx := vecs.At(x, j)
			for y := 0; y < h; y++ {
				out[x*h+y] += (sm - sr) * l * vx * vecs.At(y, j)
			}
		}
	}
	return out
}
