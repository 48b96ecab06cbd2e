package threshold

import "math"

// The noise budget. A chunk opens exactly while the noise e of its phase
// c0 + c1*s = m/t + e stays below q/(2t) - 1/2 (8191.5 at hyfed's
// parameters: a 60-bit q and a 46-bit t leave 13 bits). Under a secret key
// a fresh chunk has noise of standard deviation 3.24, so 10^5 of them add up
// safely; under a public key the noise carries u*e_pk + e1*s, which grows
// with the ring degree and the committee size, and every switching share
// adds an encryption of zero under the target's key plus its flooding.

// FreshNoiseStd is the standard deviation of the noise of one chunk sealed
// under the collective key of n members: u*e_pk + e0 + e1*s with u and
// each s_i ternary (density 2/3), e_pk the sum of n Gaussians of sigma:
// sigma^2 (1 + 2 * (2/3) N n).
func (f *Federation) FreshNoiseStd() float64 {
	return publicKeyNoise(f.params.N(), f.params.NoiseFreshSK(), len(f.ids))
}

func publicKeyNoise(n int, sigma float64, keys int) float64 {
	return sigma * math.Sqrt(1+4.0/3*float64(n)*float64(keys))
}

// NoiseStd is the standard deviation of the noise of a sum of `sums` chunks
// sealed under the collective key, switched to a participant's own key with
// t shares: sums fresh noises, plus per share an encryption of zero under a
// one-party key and the flooding noise.
func (f *Federation) NoiseStd(sums int) float64 {
	fresh := f.FreshNoiseStd()
	zero := publicKeyNoise(f.params.N(), f.params.NoiseFreshSK(), 1)
	v := float64(sums)*fresh*fresh + float64(f.cfg.Threshold)*(zero*zero+f.flood*f.flood)
	return math.Sqrt(v)
}

// NoiseBound is the largest noise magnitude that still opens exactly.
func (f *Federation) NoiseBound() float64 {
	q, t := float64(f.params.Q()[0]), float64(f.params.PlaintextModulus())
	for _, qi := range f.params.Q()[1:] {
		q *= float64(qi)
	}
	return (q-t)/(2*t) - 0.5
}

// failureSigmas is how many standard deviations of noise the bound must
// allow for a chunk of 4096 coefficients to fail to open with probability
// below 2^-40 (a Gaussian tail of 2^-52 per coefficient).
const failureSigmas = 7.94

// MaxSums returns how many chunks sealed under the collective key one
// opened chunk may sum while it opens exactly except with probability below
// 2^-40; 0 if not even one. The protocol must open (or re-seal) sums before
// they reach it.
func (f *Federation) MaxSums() int {
	b := f.NoiseBound() / failureSigmas
	fresh := f.FreshNoiseStd()
	zero := publicKeyNoise(f.params.N(), f.params.NoiseFreshSK(), 1)
	rest := b*b - float64(f.cfg.Threshold)*(zero*zero+f.flood*f.flood)
	if rest < fresh*fresh {
		return 0
	}
	return int(rest / (fresh * fresh))
}
