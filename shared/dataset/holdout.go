package dataset

import "hash/fnv"

// HoldoutByID reports whether the sample with this record id is held out
// when a fraction frac is: a hash of the id, so that every holder of the
// sample decides alike without talking to the others.
func HoldoutByID(id string, frac float64) bool {
	if frac <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	// FNV's high bits mix poorly for short, similar ids: finish with
	// MurmurHash3's fmix64.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11)/float64(1<<53) < frac
}

func applyHoldout(d *Dataset, frac float64) {
	d.Heldout = make([]bool, len(d.IDs))
	for i, id := range d.IDs {
		d.Heldout[i] = HoldoutByID(id, frac)
	}
}

// builtinHoldout is Options.Holdout with the default of the built-in data
// sets that have no split of their own.
func builtinHoldout(opt Options) float64 {
	if opt.Holdout == 0 {
		return defaultHoldout
	}
	return opt.Holdout
}
