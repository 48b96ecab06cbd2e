package study

import "math"

// momentum is the mom option (see Config.Method): after the round's step,
// an exact line search along the previous round's whole change of the dual
// values, restricted to the samples whose values are strictly inside their
// box now (a linear direction, so its primal part is one vector the
// holders' shares add up to). Hinge loss only: its conjugate is linear, so
// the search is closed-form.
func (s *sim) momentum(prev []float64) {
	p := s.p
	if p.Loss.Name() != "hinge" || prev == nil {
		return
	}
	d := make([]float64, p.N)
	lo, hi := math.Inf(-1), math.Inf(1)
	lin := 0.0
	any := false
	for i, a := range s.alpha {
		m := prev[i]
		if m == 0 {
			continue
		}
		y := p.Y[i]
		b := a * y
		if b <= 1e-12 || b >= 1-1e-12 {
			continue
		}
		d[i] = m
		any = true
		lin += m * y
		// b + t m y in [0, 1]
		my := m * y
		t0, t1 := -b/my, (1-b)/my
		lo, hi = math.Max(lo, math.Min(t0, t1)), math.Min(hi, math.Max(t0, t1))
	}
	if !any || lo > hi {
		return
	}
	u := make([]float64, p.M)
	for i, m := range d {
		if m != 0 {
			addTo(p.Full[i], m/s.lambdaN, u)
		}
	}
	uu, wu := sq(u), 0.0
	for j, v := range u {
		wu += s.w[j] * v
	}
	if uu == 0 {
		return
	}
	// D(t) = D + t (lin/N - lambda w.u) - lambda/2 t^2 uu
	t := (lin/float64(p.N) - p.Lambda*wu) / (p.Lambda * uu)
	t = math.Max(lo, math.Min(hi, t))
	if t == 0 {
		return
	}
	s.move(t, d, u, nil)
	s.momSteps = append(s.momSteps, t)
}

// move adds t times the dual change d (one entry per sample), its primal
// part u and its margins' change xu (nil: computed from u) to the state.
func (s *sim) move(t float64, d, u, xu []float64) {
	for i, v := range d {
		s.alpha[i] += t * v
	}
	for j, v := range u {
		s.w[j] += t * v
	}
	for i := range s.z {
		if xu != nil {
			s.z[i] += t * xu[i]
		} else {
			s.z[i] += t * dotDense(s.p.Full[i], u)
		}
	}
}

// momentumClipped is the momc option: the previous round's change as a
// projected path, a_i(t) = clip(a_i + t m_i) on every sample (values at a
// bound that the change pushes out stay), t >= 0 by golden-section search
// on the exact dual (an oracle: its primal part is not one vector).
func (s *sim) momentumClipped(prev []float64) {
	p := s.p
	if p.Loss.Name() != "hinge" || prev == nil {
		return
	}
	var idx []int
	for i, m := range prev {
		if m != 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	at := func(t float64) (float64, []float64, []float64) {
		da := make([]float64, len(idx))
		u := make([]float64, p.M)
		lin := 0.0
		for k, i := range idx {
			y := p.Y[i]
			b := math.Max(0, math.Min(1, (s.alpha[i]+t*prev[i])*y))
			da[k] = b*y - s.alpha[i]
			lin += da[k] * y
			if da[k] != 0 {
				addTo(p.Full[i], da[k]/s.lambdaN, u)
			}
		}
		wu := 0.0
		for j, v := range u {
			wu += s.w[j] * v
		}
		return lin/float64(p.N) - p.Lambda*wu - p.Lambda/2*sq(u), da, u
	}
	// Bracket: grow t while the gain grows.
	hi := 1.0
	g1, _, _ := at(hi)
	for k := 0; k < 20; k++ {
		g2, _, _ := at(2 * hi)
		if g2 <= g1 {
			break
		}
		hi, g1 = 2*hi, g2
	}
	hi *= 2
	a, b := 0.0, hi
	const phi = 0.6180339887498949
	for k := 0; k < 30; k++ {
		x1, x2 := b-phi*(b-a), a+phi*(b-a)
		f1, _, _ := at(x1)
		f2, _, _ := at(x2)
		if f1 < f2 {
			a = x1
		} else {
			b = x2
		}
	}
	t := (a + b) / 2
	g, da, u := at(t)
	if g <= 0 {
		return
	}
	full := make([]float64, p.N)
	for k, i := range idx {
		full[i] = da[k]
	}
	s.move(1, full, u, nil)
	s.momSteps = append(s.momSteps, t)
}

// momentumProjected is the momp option: the previous round's change m,
// projected once at a reach b0 (d_i = clip(a_i + b0 m_i) - a_i, values at
// a bound the change pushes out stay), then the exact line search along d
// over [0, 1] (every point feasible: the box is convex). d is a fixed
// vector, so its primal part is one vector the holders' shares add up to.
// b0 follows the steps taken: twice the last reach used.
func (s *sim) momentumProjected(prev []float64) {
	p := s.p
	if p.Loss.Name() != "hinge" || prev == nil {
		return
	}
	if s.momReach == 0 {
		s.momReach = 1
	}
	b0 := s.momReach
	d := make([]float64, p.N)
	u := make([]float64, p.M)
	lin := 0.0
	for i, m := range prev {
		if m == 0 {
			continue
		}
		y := p.Y[i]
		b := math.Max(0, math.Min(1, (s.alpha[i]+b0*m)*y))
		d[i] = b*y - s.alpha[i]
		if d[i] != 0 {
			lin += d[i] * y
			addTo(p.Full[i], d[i]/s.lambdaN, u)
		}
	}
	uu, wu := sq(u), 0.0
	for j, v := range u {
		wu += s.w[j] * v
	}
	if uu == 0 {
		return
	}
	t := math.Max(0, math.Min(1, (lin/float64(p.N)-p.Lambda*wu)/(p.Lambda*uu)))
	s.momReach = math.Max(1e-3, 2*t*b0)
	if t == 0 {
		return
	}
	xu := make([]float64, p.N)
	for i := range xu {
		xu[i] = dotDense(p.Full[i], u)
	}
	if s.m.mompp {
		// The primal-priced choice: the smallest primal among the
		// multiples of t that keep at least half of its dual gain.
		gain := func(v float64) float64 {
			return v*(lin/float64(p.N)-p.Lambda*wu) - p.Lambda/2*v*v*uu
		}
		primalAt := func(v float64) float64 {
			l := 0.0
			for i, z := range s.z {
				l += p.Loss.Value(z+v*xu[i], p.Y[i])
			}
			ww := 0.0
			for j, x := range s.w {
				ww += (x + v*u[j]) * (x + v*u[j])
			}
			return p.Lambda/2*ww + l/float64(p.N)
		}
		best, bp := 0.0, primalAt(0)
		for _, f := range []float64{0.0625, 0.125, 0.25, 0.5, 0.75, 1, 1.5, 2} {
			v := math.Min(1, f*t)
			if gain(v) < gain(t)/2 {
				continue
			}
			if pv := primalAt(v); pv < bp {
				best, bp = v, pv
			}
		}
		if best == 0 {
			return
		}
		t = best
	}
	s.move(t, d, u, xu)
	s.momSteps = append(s.momSteps, t*b0)
}
