package study

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// Config is one simulated run.
type Config struct {
	Fraction float64 // each client is active with this probability per round
	Rounds   int
	Seed     uint64
	// IIC sets H = ceil(IIC * N / clients) picks per group, as the product.
	IIC float64
	// Method is a core step and options joined by '+':
	//   base    parallel SDCA steps against the round's w (no Gram)
	//   bx      block QP with the summed partial Grams (exact only for
	//           feature blocks), CoCoA+ sigma' = updating groups
	//   safe    block QP with kappa x summed partial Grams, kappa = 1 for
	//           feature blocks and the number of holders for dealt
	//           non-zeros (a safe upper bound of the true Gram)
	//   oracle  block QP with the true Gram of the picks, whoever holds
	//           the entries (not computable by the holders for dealt
	//           non-zeros: an upper reference)
	//   joint   one QP over all updating groups' picks with their true
	//           joint Gram, cross-group terms included (no party can
	//           compute it: the reference for what cross-group coupling
	//           costs)
	//   bp      safe, with the public bias feature's part of the Gram
	//           taken out and coupled across groups exactly by a price
	//           the server finds (a scalar root search)
	// options:
	//   sh      pick the H samples among optimality violators
	//   gp      pick the H samples with the largest duality-gap terms
	//           l(z_i) + l*(-a_i) + a_i z_i (every holder knows them: the
	//           margins and dual values of its group)
	//   gs      pick H samples at random with probability proportional to
	//           their gap terms
	//   ls      exact dual line search along the combined direction
	//   pp      primal-priced step (the product's rule: smallest primal
	//           among candidates keeping half the best dual gain)
	//   pb      the public bias feature's part of the Gram entered
	//           exactly (its value is public: c^2 for every pair), the
	//           rest from the partial Grams (times kappa for safe)
	//   fam     besides its own direction, every group solves its model
	//           without the bias part at six fixed bias prices (margin
	//           shifts +-1e-3, 1e-2, 1e-1); the server combines all
	//           groups' candidates by the exact K x 7 QP in their primal
	//           directions (U^T U), non-negative weights summing to at
	//           most 1 per group (a lower bound of the dual gain for
	//           logistic, exact for hinge)
	//   co      coarse correction across groups: every group adds a
	//           "bias transfer" direction E (the solution of
	//           A_pix E = 1 on its free picks: the cheapest way, in its
	//           model, to move its bias mass); the server solves the
	//           exact 2K-dim QP in the coefficients of the groups' own
	//           directions (>= 0) and their E's (any sign) from U^T U,
	//           every group clips the combination to its box, then the
	//           line search (one more trip: the candidates' dw shares)
	//   co2     a second, coarse stage after the step: every updated
	//           group computes E = A_pix^-1 1 on its free picks (A_pix:
	//           its model Gram without the public bias part) and the
	//           interval of coefficients that keeps them in the box; the
	//           server maximises the exact dual over the K coefficients
	//           (a box QP from U_E^T U_E and per-group scalars) and
	//           applies it: two more trips (the E's dw shares and scalars
	//           up; x.u_E for the margins)
	//   ak      (dealt non-zeros) adaptive kappa: each group's kappa for
	//           the next round is its last direction's measured ratio
	//           ||X^T d||^2 / sum_k ||X_k^T d||^2 (bias part left out),
	//           clamped to [1, Q]: both norms are known without a trip
	//           (the group's primal direction and its holders' dw shares)
	//   s1      sigma' = 1 instead of the number of updating groups (each
	//           group solves as if alone; the line search scales)
	//   as      adaptive sigma': the server measures, each round, the
	//           groups' coupling ||sum_g u_g||^2 / sum_g ||u_g||^2 from the
	//           per-group primal directions it sees anyway, and sends it
	//           (clamped to [1, updating groups]) as the next round's sigma'
	//   ms      mean split: each group's model prices the direction of its
	//           picks' mean row (computable from the Gram: G1) at the
	//           number of updating groups (every group moves it alike)
	//           and the rest at sigma' (1 with s1, adaptive with as)
	//   mseN    ms with the picks' top N principal directions (exact
	//           eigenvectors, gonum) instead of the mean row; msa: all
	//           with an eigenvalue above the mean
	//   spN     the product's form of mseN: gram.Split with r = N (its
	//           leading subspace found by subspace iteration)
	//   cgN     N extra projected-gradient iterations on each group's QP
	//           with exact Gram-vector products (2 trips each)
	//   mom     dual momentum (hinge): after the round's step, the exact
	//           line search along the previous round's whole change of
	//           the dual values, on the samples strictly inside their box
	//           (momentum.go)
	//   momc    the same along the clipped path clip(a + t m), t by a
	//           golden-section search on the exact dual (an oracle: its
	//           primal part is not one vector)
	//   momp    the change projected once at a reach b0 (twice the last
	//           reach used), then the exact line search over [0, 1]
	//   mompp   momp with the primal-priced choice among multiples
	//   momr    momp with a restart: no momentum after a round whose
	//           duality gap grew
	Method string
	// Trace, if set, is called after every round.
	Trace func(r int, primalRel, dualRel float64)
}

// Result summarises a run.
type Result struct {
	First   [3]int     // first round with relative loss <= 1e-1, 1e-2, 1e-3 (0: never)
	At      [3]float64 // relative loss after 100, 300, 1000 rounds (NaN: run shorter)
	Last    float64
	Best    float64
	TailMax float64 // max relative loss over the last tenth of rounds
	TailMin float64
	// BestTail is the best-so-far model's relative loss at the start of
	// the last tenth (its max over the tail; its min is Best).
	BestTail  float64
	DualRel   float64 // (P* - D)/P* at the end
	DualDecr  int     // rounds in which the dual fell (beyond 1e-12 relative)
	Seconds   float64
	H         int
	Updates   int     // sample updates in all
	TripsMean float64 // extra sequential trips per round beyond today's
	Gamma     float64 // mean step size applied
	// Avg is the same for the averaged model: w and the margins averaged
	// over rounds with polynomial-decay weights (eta = 3), which the server
	// (w) and the holders (their margins) can keep without communication.
	Avg struct {
		First            [3]int
		At               [3]float64
		Last, Best       float64
		TailMax, TailMin float64
	}
}

type method struct {
	core            string
	sh, ls, pp, pb  bool
	fam, co, co2    bool
	gp, gs, ak, s1  bool
	as, mom, momc   bool
	ms              bool
	msTop           int
	split           int
	momp, mompp     bool
	momr            bool
	cg              int
	biasPriced      bool
	safeBound       bool
	needGram        bool
	partialGramOnly bool
	oracle, joint   bool
}

func parseMethod(s string) (method, error) {
	var m method
	parts := strings.Split(s, "+")
	m.core = parts[0]
	switch m.core {
	case "base":
	case "bx":
		m.needGram, m.partialGramOnly = true, true
	case "safe":
		m.needGram, m.safeBound = true, true
	case "oracle":
		m.needGram, m.oracle = true, true
	case "joint":
		m.needGram, m.oracle, m.joint = true, true, true
	case "bp":
		m.needGram, m.safeBound, m.biasPriced = true, true, true
	default:
		return m, fmt.Errorf("method %q: unknown core %q", s, m.core)
	}
	for _, o := range parts[1:] {
		switch {
		case o == "sh":
			m.sh = true
		case o == "as":
			m.as = true
		case o == "ms":
			m.ms = true
		case strings.HasPrefix(o, "sp"):
			if _, err := fmt.Sscanf(o, "sp%d", &m.split); err != nil || m.split < 1 {
				return m, fmt.Errorf("method %q: bad %q", s, o)
			}
			m.ms = true
		case o == "msa":
			m.ms, m.msTop = true, -1
		case strings.HasPrefix(o, "mse"):
			if _, err := fmt.Sscanf(o, "mse%d", &m.msTop); err != nil || m.msTop < 1 {
				return m, fmt.Errorf("method %q: bad %q", s, o)
			}
			m.ms = true
		case o == "mom":
			m.mom = true
		case o == "momc":
			m.momc = true
		case o == "momp":
			m.momp = true
		case o == "momr":
			m.momp, m.momr = true, true
		case o == "mompp":
			m.momp, m.mompp = true, true
		case o == "s1":
			m.s1 = true
		case o == "ak":
			m.ak = true
		case o == "gp":
			m.gp = true
		case o == "gs":
			m.gs = true
		case o == "co2":
			m.co2, m.pb = true, true
		case o == "co":
			m.co, m.pb = true, true
		case o == "fam":
			m.fam, m.pb = true, true
		case o == "pb":
			m.pb = true
		case o == "ls":
			m.ls = true
		case o == "pp":
			m.pp, m.ls = true, true
		case strings.HasPrefix(o, "cg"):
			if _, err := fmt.Sscanf(o, "cg%d", &m.cg); err != nil || m.cg < 1 {
				return m, fmt.Errorf("method %q: bad %q", s, o)
			}
		default:
			return m, fmt.Errorf("method %q: unknown option %q", s, o)
		}
	}
	return m, nil
}

// sim is the state of a run.
type sim struct {
	p       *Problem
	m       method
	rng     *rand.Rand
	alpha   []float64
	w       []float64
	z       []float64 // exact margins x_i.w (the groups' holders know their own)
	lambdaN float64
	h       int
	buf     []float64
	trips   int
	// model is the curvature factor the groups' solves used (cg option).
	model func(*groupStep) float64
	// sigma is the adaptive sigma' (as option; 0: not yet measured).
	sigma float64
	// kappa is each group's adaptive kappa (ak option).
	kappa []float64
	// momSteps are the mom option's steps, one per round it moved.
	momSteps []float64
	momReach float64 // the momp option's reach
	momSkip  bool    // the momr option: no momentum this round
	prevGap  float64
}

// Run simulates cfg on p.
func Run(p *Problem, cfg Config) (*Result, error) {
	m, err := parseMethod(cfg.Method)
	if err != nil {
		return nil, err
	}
	if cfg.IIC <= 0 {
		cfg.IIC = 0.2
	}
	s := &sim{p: p, m: m, rng: rand.New(rand.NewPCG(cfg.Seed, 0x57e9)),
		alpha: make([]float64, p.N), w: make([]float64, p.M), z: make([]float64, p.N),
		lambdaN: p.Lambda * float64(p.N), buf: make([]float64, p.M)}
	s.h = int(math.Ceil(cfg.IIC * float64(p.N) / float64(p.Clients)))
	res := &Result{H: s.h, At: [3]float64{math.NaN(), math.NaN(), math.NaN()}, Best: math.Inf(1)}
	start := time.Now()
	dual := s.dual()
	rels := make([]float64, 0, cfg.Rounds)
	arels := make([]float64, 0, cfg.Rounds)
	wbar := make([]float64, p.M)
	zbar := make([]float64, p.N)
	res.Avg.At = [3]float64{math.NaN(), math.NaN(), math.NaN()}
	res.Avg.Best = math.Inf(1)
	gsum := 0.0
	var change []float64
	if m.mom || m.momc || m.momp {
		change = make([]float64, p.N)
	}
	for r := 1; r <= cfg.Rounds; r++ {
		// Who takes part: a group updates when any of its holders is active;
		// its inactive holders answer the cheap requests.
		var upd []int
		for g, gr := range p.Groups {
			for _, h := range gr.holders {
				_ = h
				if cfg.Fraction >= 1 || s.rng.Float64() < cfg.Fraction {
					upd = append(upd, g)
					break
				}
			}
		}
		// (The loop above stops drawing at the first active holder: the
		// group's participation probability is 1-(1-f)^Q either way.)
		before := slices.Clone(s.alpha)
		gamma := s.round(upd, res)
		if s.m.mom || s.m.momc || s.m.momp {
			if s.momSkip {
				s.momSkip = false
			} else if s.m.momp {
				s.momentumProjected(change)
			} else if s.m.momc {
				s.momentumClipped(change)
			} else {
				s.momentum(change)
			}
			for i := range change {
				change[i] = s.alpha[i] - before[i]
			}
		}
		gsum += gamma
		nd := s.dual()
		if nd < dual-1e-12*math.Abs(dual) {
			res.DualDecr++
		}
		dual = nd
		pr := (s.primal() - p.PStar) / p.PStar
		if s.m.momr {
			// Restart: a round whose duality gap grew takes no momentum next.
			if g := s.primal() - nd; r > 1 && g > s.prevGap {
				s.momSkip = true
				s.momReach = 0
			} else {
				s.prevGap = g
			}
			if s.momSkip {
				s.prevGap = s.primal() - nd
			}
		}
		rels = append(rels, pr)
		res.Best = math.Min(res.Best, pr)
		for t, target := range []float64{1e-1, 1e-2, 1e-3} {
			if res.First[t] == 0 && pr <= target {
				res.First[t] = r
			}
		}
		for t, at := range []int{100, 300, 1000} {
			if r == at {
				res.At[t] = pr
			}
		}
		const eta = 3.0
		rho := (eta + 1) / (float64(r) + eta)
		for j := range wbar {
			wbar[j] += rho * (s.w[j] - wbar[j])
		}
		for i := range zbar {
			zbar[i] += rho * (s.z[i] - zbar[i])
		}
		ar := (p.primal(wbar, zbar) - p.PStar) / p.PStar
		arels = append(arels, ar)
		res.Avg.Best = math.Min(res.Avg.Best, ar)
		for t, target := range []float64{1e-1, 1e-2, 1e-3} {
			if res.Avg.First[t] == 0 && ar <= target {
				res.Avg.First[t] = r
			}
		}
		for t, at := range []int{100, 300, 1000} {
			if r == at {
				res.Avg.At[t] = ar
			}
		}
		if cfg.Trace != nil {
			cfg.Trace(r, pr, (p.PStar-dual)/p.PStar)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if n := len(rels); n > 0 {
		res.Last = rels[n-1]
		res.TailMax, res.TailMin = math.Inf(-1), math.Inf(1)
		for _, v := range rels[n-max(1, n/10):] {
			res.TailMax = math.Max(res.TailMax, v)
			res.TailMin = math.Min(res.TailMin, v)
		}
		res.BestTail = math.Inf(1)
		for _, v := range rels[:n-max(1, n/10)+1] {
			res.BestTail = math.Min(res.BestTail, v)
		}
		res.Gamma = gsum / float64(n)
		res.Avg.Last = arels[n-1]
		res.Avg.TailMax, res.Avg.TailMin = math.Inf(-1), math.Inf(1)
		for _, v := range arels[n-max(1, n/10):] {
			res.Avg.TailMax = math.Max(res.Avg.TailMax, v)
			res.Avg.TailMin = math.Min(res.Avg.TailMin, v)
		}
		res.TripsMean = float64(s.trips) / float64(n)
	}
	res.DualRel = (p.PStar - dual) / p.PStar
	return res, nil
}

func (s *sim) dual() float64 {
	c := 0.0
	for i, a := range s.alpha {
		c += s.p.Loss.Conj(a, s.p.Y[i])
	}
	return c/float64(s.p.N) - s.p.Lambda/2*sq(s.w)
}

// primal evaluates P at the current w from the exact margins.
func (s *sim) primal() float64 { return s.p.primal(s.w, s.z) }

func (p *Problem) primal(w, z []float64) float64 {
	l := 0.0
	for i := 0; i < p.N; i++ {
		zi := 0.0
		if z != nil {
			zi = z[i]
		} else {
			zi = dotDense(p.Full[i], w)
		}
		l += p.Loss.Value(zi, p.Y[i])
	}
	return p.Lambda/2*sq(w) + l/float64(p.N)
}

func sq(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}

// picks returns the positions (within the group) of the H samples the
// group's holders pick this round. All holders draw the same (a shared
// seed); violator picks use the margins every holder knows.
func (s *sim) picks(g *group) []int {
	n := len(g.samples)
	if s.m.gp || s.m.gs {
		return s.gapPicks(g)
	}
	cand := make([]int, 0, n)
	if s.m.sh {
		for r, i := range g.samples {
			if s.violates(i) {
				cand = append(cand, r)
			}
		}
	} else {
		for r := range g.samples {
			cand = append(cand, r)
		}
	}
	h := min(s.h, len(cand))
	for k := 0; k < h; k++ {
		j := k + s.rng.IntN(len(cand)-k)
		cand[k], cand[j] = cand[j], cand[k]
	}
	return cand[:h]
}

// violates says whether sample i's dual coordinate is not optimal for the
// current w (projected dual gradient beyond a small tolerance).
func (s *sim) violates(i int) bool {
	y := s.p.Y[i]
	b := s.alpha[i] * y
	yz := y * s.z[i]
	if s.p.Loss.Name() == "hinge" {
		g := yz - 1 // gradient of the minimised dual in b
		const tol = 1e-6
		return (g < -tol && b < 1) || (g > tol && b > 0)
	}
	if b <= 0 || b >= 1 {
		return true
	}
	return math.Abs(math.Log((1-b)/b)-yz) > 1e-4
}

// gapPicks returns the group's H picks by their duality-gap terms.
func (s *sim) gapPicks(g *group) []int {
	p := s.p
	n := len(g.samples)
	gap := make([]float64, n)
	var pos []int
	for r, i := range g.samples {
		a := s.alpha[i]
		gap[r] = p.Loss.Value(s.z[i], p.Y[i]) - p.Loss.Conj(a, p.Y[i]) + a*s.z[i]
		if gap[r] > 1e-12 {
			pos = append(pos, r)
		}
	}
	h := min(s.h, len(pos))
	if s.m.gp {
		sort.Slice(pos, func(a, b int) bool { return gap[pos[a]] > gap[pos[b]] })
		return pos[:h]
	}
	// Weighted sampling without replacement (exponential keys).
	key := make(map[int]float64, len(pos))
	for _, r := range pos {
		key[r] = -math.Log(1-s.rng.Float64()) / gap[r]
	}
	sort.Slice(pos, func(a, b int) bool { return key[pos[a]] < key[pos[b]] })
	return pos[:h]
}
