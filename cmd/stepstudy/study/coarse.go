package study

import "math"

// coarse is the co option (see Config.Method).
func (s *sim) coarse(steps []*groupStep) {
	p := s.p
	c2 := p.BiasValue * p.BiasValue
	type cand struct {
		g   int
		d   []float64
		u   []float64
		l   float64 // linear dual-term slope (hinge: exact; logistic: tangent)
		pos bool    // coefficient must be >= 0
	}
	var cs []cand
	for g, st := range steps {
		h := len(st.idx)
		// Free picks at the group's own solution.
		var free []int
		for k, i := range st.idx {
			b := (s.alpha[i] + st.d[k]) * p.Y[i]
			if b > 1e-9 && b < 1-1e-9 {
				free = append(free, k)
			}
		}
		e := make([]float64, h)
		if n := len(free); n > 0 {
			a := make([]float64, n*n)
			tr := 0.0
			for x, kx := range free {
				for y, ky := range free {
					a[x*n+y] = st.a[kx*h+ky] - c2
				}
				tr += a[x*n+x]
			}
			for x := 0; x < n; x++ {
				a[x*n+x] += 1e-8 * tr / float64(n)
			}
			rhs := make([]float64, n)
			for x := range rhs {
				rhs[x] = 1
			}
			if sol := cholSolve(a, rhs, n); sol != nil {
				for x, k := range free {
					e[k] = sol[x]
				}
			}
		}
		for j, d := range [][]float64{st.d, e} {
			c := cand{g: g, d: d, u: make([]float64, p.M), pos: j == 0}
			for k, i := range st.idx {
				if d[k] == 0 {
					continue
				}
				addTo(p.Full[i], d[k]/s.lambdaN, c.u)
				if j == 0 {
					c.l += p.Loss.Conj(s.alpha[i]+d[k], p.Y[i]) - p.Loss.Conj(s.alpha[i], p.Y[i])
				} else {
					c.l += d[k] * s.conjSlope(i, st.d[k])
				}
			}
			c.l /= float64(p.N)
			cs = append(cs, c)
		}
	}
	n := len(cs)
	b := make([]float64, n)
	q := make([]float64, n*n)
	tr := 0.0
	for j := range cs {
		b[j] = cs[j].l - p.Lambda*dotVec(s.w, cs[j].u)
		for k := j; k < n; k++ {
			v := p.Lambda * dotVec(cs[j].u, cs[k].u)
			q[j*n+k], q[k*n+j] = v, v
		}
		tr += q[j*n+j]
	}
	if tr == 0 {
		return
	}
	for j := 0; j < n; j++ {
		q[j*n+j] += 1e-9 * tr
	}
	// The own directions start at 1 (today's combination), E's at 0.
	c := make([]float64, n)
	for j := range cs {
		if cs[j].pos {
			c[j] = 1
		}
	}
	y := append([]float64(nil), c...)
	prev := make([]float64, n)
	t := 1.0
	for it := 0; it < 5000; it++ {
		copy(prev, c)
		for j := 0; j < n; j++ {
			g := b[j]
			for k := 0; k < n; k++ {
				g -= q[j*n+k] * y[k]
			}
			c[j] = y[j] + g/tr
			if cs[j].pos && c[j] < 0 {
				c[j] = 0
			}
		}
		nt := (1 + math.Sqrt(1+4*t*t)) / 2
		for j := range y {
			y[j] = c[j] + (t-1)/nt*(c[j]-prev[j])
		}
		t = nt
	}
	for g, st := range steps {
		for k := range st.d {
			v := 0.0
			for j := range cs {
				if cs[j].g == g {
					v += c[j] * cs[j].d[k]
				}
			}
			// Clip to the box: b + v y in [0, 1].
			i := st.idx[k]
			y := p.Y[i]
			nb := math.Min(1, math.Max(0, s.alpha[i]*y+v*y))
			st.d[k] = nb*y - s.alpha[i]
		}
	}
}

// conjSlope is the derivative of -l*(-a) at a = alpha_i + d (per unit of
// alpha): y for the hinge, y log((1-b)/b) for the logistic loss.
func (s *sim) conjSlope(i int, d float64) float64 {
	y := s.p.Y[i]
	if s.p.Loss.Name() == "hinge" {
		return y
	}
	b := math.Min(math.Max((s.alpha[i]+d)*y, 1e-12), 1-1e-12)
	return y * math.Log((1-b)/b)
}

// cholSolve solves a x = r for symmetric positive definite a (n x n, row
// major, overwritten); nil if a is not positive definite.
func cholSolve(a, r []float64, n int) []float64 {
	for j := 0; j < n; j++ {
		d := a[j*n+j]
		for k := 0; k < j; k++ {
			d -= a[j*n+k] * a[j*n+k]
		}
		if d <= 0 {
			return nil
		}
		d = math.Sqrt(d)
		a[j*n+j] = d
		for i := j + 1; i < n; i++ {
			v := a[i*n+j]
			for k := 0; k < j; k++ {
				v -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = v / d
		}
	}
	x := append([]float64(nil), r...)
	for i := 0; i < n; i++ {
		for k := 0; k < i; k++ {
			x[i] -= a[i*n+k] * x[k]
		}
		x[i] /= a[i*n+i]
	}
	for i := n - 1; i >= 0; i-- {
		for k := i + 1; k < n; k++ {
			x[i] -= a[k*n+i] * x[k]
		}
		x[i] /= a[i*n+i]
	}
	return x
}

// coarseStage is the co2 option (see Config.Method), run after the step
// has been applied.
func (s *sim) coarseStage(steps []*groupStep) {
	p := s.p
	c2 := p.BiasValue * p.BiasValue
	k := len(steps)
	es := make([][]float64, k)
	us := make([][]float64, k)
	lo := make([]float64, k)
	hi := make([]float64, k)
	lin := make([]float64, k)
	for g, st := range steps {
		h := len(st.idx)
		var free []int
		for x, i := range st.idx {
			b := s.alpha[i] * p.Y[i]
			if b > 1e-9 && b < 1-1e-9 {
				free = append(free, x)
			}
		}
		e := make([]float64, h)
		es[g], us[g] = e, make([]float64, p.M)
		n := len(free)
		if n == 0 {
			continue
		}
		a := make([]float64, n*n)
		tr := 0.0
		for x, kx := range free {
			for y, ky := range free {
				a[x*n+y] = st.a[kx*h+ky] - c2
			}
			tr += a[x*n+x]
		}
		for x := 0; x < n; x++ {
			a[x*n+x] += 1e-6 * tr / float64(n)
		}
		rhs := make([]float64, n)
		for x := range rhs {
			rhs[x] = 1
		}
		sol := cholSolve(a, rhs, n)
		if sol == nil {
			continue
		}
		lo[g], hi[g] = math.Inf(-1), math.Inf(1)
		for x, kx := range free {
			i := st.idx[kx]
			e[kx] = sol[x]
			eb := sol[x] * p.Y[i] // change of b per unit coefficient
			b := s.alpha[i] * p.Y[i]
			if eb > 0 {
				hi[g] = math.Min(hi[g], (1-b)/eb)
				lo[g] = math.Max(lo[g], -b/eb)
			} else if eb < 0 {
				hi[g] = math.Min(hi[g], b/(-eb))
				lo[g] = math.Max(lo[g], (1-b)/eb)
			}
			addTo(p.Full[i], sol[x]/s.lambdaN, us[g])
			lin[g] += sol[x] * s.conjSlope(i, 0)
		}
		lin[g] /= float64(p.N)
	}
	// Exact box QP over the K coefficients: coordinate ascent (hinge: the
	// dual is exactly quadratic in them; logistic: the tangent model, with
	// the exact gain checked below).
	b := make([]float64, k)
	q := make([]float64, k*k)
	for g := range steps {
		b[g] = lin[g] - p.Lambda*dotVec(s.w, us[g])
		for h := range steps {
			q[g*k+h] = p.Lambda * dotVec(us[g], us[h])
		}
	}
	c := make([]float64, k)
	for it := 0; it < 500; it++ {
		for g := range steps {
			if q[g*k+g] <= 0 {
				continue
			}
			r := b[g]
			for h := range steps {
				if h != g {
					r -= q[g*k+h] * c[h]
				}
			}
			c[g] = math.Min(hi[g], math.Max(lo[g], r/q[g*k+g]))
		}
	}
	// Exact gain, halved until positive (the product prices candidates).
	apply := func(scale float64) float64 {
		gain := 0.0
		for g, st := range steps {
			for x, i := range st.idx {
				if es[g][x] != 0 {
					gain += p.Loss.Conj(s.alpha[i]+scale*c[g]*es[g][x], p.Y[i]) - p.Loss.Conj(s.alpha[i], p.Y[i])
				}
			}
		}
		gain /= float64(p.N)
		du := make([]float64, p.M)
		for g := range steps {
			for j := range du {
				du[j] += scale * c[g] * us[g][j]
			}
		}
		return gain - p.Lambda*dotVec(s.w, du) - p.Lambda/2*dotVec(du, du)
	}
	scale := 1.0
	for ; scale > 1e-6 && apply(scale) <= 0; scale /= 2 {
	}
	if scale <= 1e-6 {
		return
	}
	du := make([]float64, p.M)
	for g, st := range steps {
		for x, i := range st.idx {
			s.alpha[i] += scale * c[g] * es[g][x]
			bb := s.alpha[i] * p.Y[i]
			if bb < 0 {
				s.alpha[i] = 0
			} else if bb > 1 {
				s.alpha[i] = p.Y[i]
			}
		}
		for j := range du {
			du[j] += scale * c[g] * us[g][j]
		}
	}
	for j := range s.w {
		s.w[j] += du[j]
	}
	for i := range s.z {
		s.z[i] += dotDense(p.Full[i], du)
	}
}
