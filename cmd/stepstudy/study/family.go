package study

import (
	"math"
	"sort"
)

// familyPrices are the bias prices (margin shifts) of the extra candidate
// directions of the fam option.
var familyPrices = []float64{-1e-1, -1e-2, -1e-3, 1e-3, 1e-2, 1e-1}

// family replaces every group's direction by the server's best combination
// of candidates: the group's own direction and its responses to fixed bias
// prices with the bias part left out of its model. The server knows every
// candidate's primal direction (the holders' dw shares, plaintext as today)
// and each group's dual-term change per candidate (a scalar), so it prices
// every combination exactly (hinge) or from below (logistic, by concavity).
func (s *sim) family(steps []*groupStep, ku float64) {
	p := s.p
	c2 := p.BiasValue * p.BiasValue
	type cand struct {
		g int
		d []float64
		u []float64
		l float64
	}
	var cs []cand
	for g, st := range steps {
		dirs := [][]float64{append([]float64(nil), st.d...)}
		// The model without the bias part: st.a holds kappa*pixel + c2.
		pix := &groupStep{g: st.g, idx: st.idx, pos: st.pos, zz: st.zz, a: make([]float64, len(st.a)), kappa: 1}
		for k, v := range st.a {
			pix.a[k] = v - c2
		}
		for _, mu := range familyPrices {
			pix.d = make([]float64, len(st.idx))
			s.solveQP(pix, ku, mu, 300)
			dirs = append(dirs, pix.d)
		}
		for _, d := range dirs {
			c := cand{g: g, d: d, u: make([]float64, p.M)}
			for k, i := range st.idx {
				if d[k] != 0 {
					addTo(p.Full[i], d[k]/s.lambdaN, c.u)
					c.l += p.Loss.Conj(s.alpha[i]+d[k], p.Y[i]) - p.Loss.Conj(s.alpha[i], p.Y[i])
				}
			}
			c.l /= float64(p.N)
			cs = append(cs, c)
		}
	}
	n := len(cs)
	// gain(c) = b.c - 1/2 c^T Q c with b_j = l_j - lambda w.u_j and
	// Q = lambda U^T U.
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
	// Accelerated projected gradient on {c >= 0, sum per group <= 1}.
	c := make([]float64, n)
	c[0] = 0
	for j := range cs {
		if j%(len(familyPrices)+1) == 0 {
			c[j] = 0 // start at 0
		}
	}
	y := append([]float64(nil), c...)
	prev := append([]float64(nil), c...)
	t := 1.0
	grad := make([]float64, n)
	for it := 0; it < 3000; it++ {
		for j := 0; j < n; j++ {
			g := b[j]
			for k := 0; k < n; k++ {
				g -= q[j*n+k] * y[k]
			}
			grad[j] = g
		}
		copy(prev, c)
		for j := range c {
			c[j] = y[j] + grad[j]/tr
		}
		for g := range steps {
			var idx []int
			for j := range cs {
				if cs[j].g == g {
					idx = append(idx, j)
				}
			}
			projectCapped(c, idx)
		}
		nt := (1 + math.Sqrt(1+4*t*t)) / 2
		for j := range y {
			y[j] = c[j] + (t-1)/nt*(c[j]-prev[j])
		}
		t = nt
	}
	for g, st := range steps {
		for k := range st.d {
			st.d[k] = 0
		}
		for j := range cs {
			if cs[j].g == g && c[j] != 0 {
				for k, v := range cs[j].d {
					st.d[k] += c[j] * v
				}
			}
		}
	}
}

// projectCapped projects c[idx] onto {x >= 0, sum x <= 1}.
func projectCapped(c []float64, idx []int) {
	sum := 0.0
	for _, j := range idx {
		if c[j] < 0 {
			c[j] = 0
		}
		sum += c[j]
	}
	if sum <= 1 {
		return
	}
	// Euclidean projection onto the simplex of the original values.
	v := make([]float64, len(idx))
	for k, j := range idx {
		v[k] = c[j]
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(v)))
	cum, theta := 0.0, 0.0
	for k, x := range v {
		cum += x
		if th := (cum - 1) / float64(k+1); x-th > 0 {
			theta = th
		}
	}
	for _, j := range idx {
		c[j] = math.Max(0, c[j]-theta)
	}
}

func dotVec(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
