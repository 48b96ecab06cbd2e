package threshold

import (
	"math"

	"github.com/hyfed/hyfed/shared/seal"
)

// The noise budget. A chunk opens exactly while the noise e of its phase
// c0 + c1*s = m/t + e stays below Q/(2t) - 1/2 (about 2^62 at the
// threshold parameters: a 109-bit Q over a 46-bit t). Under a public key
// the noise of a fresh chunk carries u*e_pk + e1*s, which grows with the
// ring degree and the committee size; every switching share adds an
// encryption of zero under the target's key and its flooding noise.
//
// Distributions (sampling.go, party.go): secrets and u ternary of density
// 2/3; key noise (collective key shares, own public keys) Lattigo's Gaussian
// of sigma 3.2; encryption and switching noise centered binomial of sigma
// sqrt(10.5) = 3.24; flooding uniform on [-2^k, 2^k).

const (
	ternaryDensity = 2.0 / 3
	binomialVar    = 10.5
	// tailFactor: a sum of independent sub-Gaussian terms of total variance
	// v (Gaussians and uniforms are, with their variance as the proxy)
	// exceeds x in magnitude with probability at most 2 exp(-x^2/(2v)); at
	// x = tailFactor * sqrt(v) that is 2^-52 per coefficient, below 2^-40
	// for a chunk of 4096 coefficients.
	tailFactor = 8.5723 // sqrt(2 * 53 * ln 2)
)

func (f *Federation) keyVar() float64 {
	s := f.params.NoiseFreshSK()
	return s * s
}

// FreshNoiseStd is the standard deviation of the noise of one chunk sealed
// under the collective key of n members, u*e_pk + e0 + e1*s with e_pk the
// sum of n key noises and s the sum of n ternary secrets:
// sqrt(var_b + (2/3) N n (var_key + var_b)).
func (f *Federation) FreshNoiseStd() float64 {
	n, N := float64(len(f.ids)), float64(f.params.N())
	return math.Sqrt(binomialVar + ternaryDensity*N*n*(f.keyVar()+binomialVar))
}

// floodVar is the variance of the uniform flooding on [-2^k, 2^k).
func floodVar(k int) float64 {
	w := math.Ldexp(2, k)
	return (w*w - 1) / 12
}

// shareVar is the noise variance one switching share adds under the
// target's key s_P: u*e_P (own key noise) + flood + s_P*e1.
func (f *Federation) shareVar(flood int) float64 {
	N := float64(f.params.N())
	return ternaryDensity*N*(f.keyVar()+binomialVar) + floodVar(flood)
}

// NoiseStd is the standard deviation of the noise of a sum of `sums` chunks
// sealed under the collective key, switched to a participant's own key with
// t shares.
func (f *Federation) NoiseStd(sums int) float64 {
	fresh := f.FreshNoiseStd()
	return math.Sqrt(float64(sums)*fresh*fresh + float64(f.cfg.Threshold)*f.shareVar(f.flood))
}

// NoiseBound is the largest noise magnitude that still opens exactly.
func (f *Federation) NoiseBound() float64 {
	q, t := 1.0, float64(f.params.PlaintextModulus())
	for _, qi := range f.params.Q() {
		q *= float64(qi)
	}
	return (q-t)/(2*t) - 0.5
}

// budget is the largest noise variance that opens with failure probability
// below 2^-40 a chunk.
func (f *Federation) budget() float64 {
	b := f.NoiseBound() / tailFactor
	return b * b
}

// maxSums is MaxSums before rounding; 0 or less if not even one fits.
func (f *Federation) maxSums() float64 {
	fresh := f.FreshNoiseStd()
	return math.Floor((f.budget() - float64(f.cfg.Threshold)*f.shareVar(f.flood)) / (fresh * fresh))
}

// MaxSums returns how many chunks sealed under the collective key one
// opened chunk may sum while it opens exactly except with probability below
// 2^-40 (math.MaxInt if more than that). At the threshold parameters it is
// above 10^28 for every committee size MaxParties allows.
func (f *Federation) MaxSums() int {
	m := f.maxSums()
	switch {
	case m < 0:
		return 0
	case m >= math.MaxInt64:
		return math.MaxInt
	}
	return int(m)
}

// FailureLog2 returns log2 of the bound on the probability that a switched
// sum of `sums` fresh chunks fails to open exactly (any of its coefficients):
// N * 2 exp(-bound^2 / (2 v)), v its noise variance.
func (f *Federation) FailureLog2(sums int) float64 {
	sd := f.NoiseStd(sums)
	x := f.NoiseBound() / sd
	return math.Log2(float64(2*f.params.N())) - x*x/2/math.Ln2
}

// defaultFloodBits is the largest k whose flooding, over t shares, takes at
// most 1/16 of the noise variance budget (so sums keep 15/16 of it).
func (f *Federation) defaultFloodBits() int {
	t := float64(f.cfg.Threshold)
	k := MaxFloodBits
	for k > 1 && t*floodVar(k) > f.budget()/16 {
		k--
	}
	return k
}

// DefaultFloodBits returns the flooding a committee with threshold t gets
// when Config.FloodBits is 0: 57 bits at t = 2 down to 52 at t = 1024.
func DefaultFloodBits(t int) int {
	s, err := seal.ThresholdScheme()
	if err != nil {
		return 0
	}
	f := &Federation{s: s, params: s.Params(), cfg: Config{Threshold: t}}
	return f.defaultFloodBits()
}

// SmudgingLog2 returns log2 of a bound on the statistical distance between
// what the opener of a switched sum of `sums` fresh chunks sees and what it
// would see were the sum's own noise (which carries e1*s, the collective
// secret's imprint, and u*e_pk) replaced by an independent one: the flooding
// of one honest member's share, uniform on 2^(k+1) integers, hides a shift
// x of a coefficient within |x|/2^(k+1), so the chunk's N coefficients,
// each below tailFactor times the sum's noise sd except with probability
// 2^-40, add up to N * tailFactor * sd / 2^(k+1) (plus 2^-40). One honest
// share, not t: colluding members know their own flooding and subtract it.
func (f *Federation) SmudgingLog2(sums int) float64 {
	sd := math.Sqrt(float64(sums)) * f.FreshNoiseStd()
	return math.Log2(float64(f.params.N())*tailFactor*sd) - float64(f.flood+1)
}
