package partition

import (
	"fmt"
	"slices"

	"github.com/hyfed/hyfed/shared/dataset"
)

// holder is one block row that holds a sample.
type holder struct{ client, row int }

// Check proves that the blocks hold every (sample, feature) entry of d
// exactly once, with the data set's values, labels and held-out flags, and
// nothing else. For dense data every (sample, feature) pair is an entry,
// zeros too: the blocks holding a sample must have disjoint features that
// together make all M. For sparse data the entries are the non-zero values:
// blocks may share feature indexes (grid on sparse data does), but each
// non-zero value must be held by one block, and no block may hold a
// non-zero value the data set does not have. Messages name the record id
// and the 1-based feature number.
//
// Memory stays O(M + total block rows), not O(N*M): a sample at a time is
// checked with per-feature scratch arrays stamped by the sample's number.
func Check(d *dataset.Dataset, blocks []Block) error {
	if d.X == nil || len(d.Y) != d.N() || len(d.IDs) != d.N() || len(d.Heldout) != d.N() {
		return fmt.Errorf("check: data set %s is malformed", d.Name)
	}
	n, m := d.N(), d.M()
	row := make(map[string]int, n)
	for i, id := range d.IDs {
		if j, dup := row[id]; dup {
			return fmt.Errorf("check: data set %s uses record id %q for samples %d and %d", d.Name, id, j, i)
		}
		row[id] = i
	}

	// Index the holders of every sample, CSR-style (one allocation rather
	// than N small slices).
	start := make([]int, n+2)
	for k := range blocks {
		b := &blocks[k]
		if err := b.Validate(); err != nil {
			return fmt.Errorf("client %d: %w", k, err)
		}
		if b.NumFeatures != m {
			return fmt.Errorf("client %d: block of %d features in all, %s has %d", k, b.NumFeatures, d.Name, m)
		}
		for r, id := range b.IDs {
			i, ok := row[id]
			if !ok {
				return fmt.Errorf("client %d: sample %q is not in %s", k, id, d.Name)
			}
			if b.Y[r] != d.Y[i] {
				return fmt.Errorf("client %d: sample %q has label %v, %s has %v", k, id, b.Y[r], d.Name, d.Y[i])
			}
			if b.Heldout[r] != d.Heldout[i] {
				return fmt.Errorf("client %d: sample %q has held-out flag %v, %s has %v", k, id, b.Heldout[r], d.Name, d.Heldout[i])
			}
			start[i+2]++
		}
	}
	for i := 2; i < len(start); i++ {
		start[i] += start[i-1]
	}
	holders := make([]holder, start[n+1])
	for k := range blocks {
		for r, id := range blocks[k].IDs {
			i := row[id]
			holders[start[i+1]] = holder{k, r}
			start[i+1]++
		}
	}
	// Now the holders of sample i are holders[start[i]:start[i+1]], in
	// client order.

	// Scratch per feature, valid where stamp[j] == i+1.
	stamp := make([]int32, m)
	owner := make([]int32, m) // dense: client holding (i, j)
	pos := make([]int32, m)   // sparse: position of feature j in row i of d
	var held []int32          // sparse: held[t] = client+1 holding entry t of row i
	var dense []float64       // a sparse block row scattered over its features
	for i := 0; i < n; i++ {
		hs := holders[start[i]:start[i+1]]
		id := d.IDs[i]
		if len(hs) == 0 {
			return fmt.Errorf("sample %q held by no client", id)
		}
		for a := 1; a < len(hs); a++ {
			if hs[a].client == hs[a-1].client {
				return fmt.Errorf("client %d holds sample %q twice", hs[a].client, id)
			}
		}
		s := int32(i + 1)
		if !d.X.IsSparse() {
			want := d.X.Data[i*m : (i+1)*m]
			covered := 0
			for _, h := range hs {
				b := &blocks[h.client]
				var val []float64
				val, dense = rowValues(b, h.row, dense)
				for c, j := range b.Features {
					if stamp[j] == s {
						return fmt.Errorf("sample %q feature %d held by clients %d and %d", id, j+1, owner[j], h.client)
					}
					stamp[j], owner[j] = s, int32(h.client)
					if val[c] != want[j] {
						return fmt.Errorf("client %d: sample %q feature %d is %v, %s has %v", h.client, id, j+1, val[c], d.Name, want[j])
					}
				}
				covered += len(b.Features)
			}
			if covered != m {
				for j := 0; j < m; j++ {
					if stamp[j] != s {
						return fmt.Errorf("sample %q feature %d held by no client", id, j+1)
					}
				}
			}
			continue
		}
		ri, rv := d.X.Row(i)
		for t, j := range ri {
			stamp[j], pos[j] = s, int32(t)
		}
		held = slices.Grow(held[:0], len(ri))[:len(ri)]
		clear(held)
		for _, h := range hs {
			b := &blocks[h.client]
			bi, bv := b.X.Row(h.row)
			for e, v := range bv {
				if v == 0 {
					continue // a zero is no entry: blocks of one group may list the same feature
				}
				c := e
				if b.X.IsSparse() {
					c = int(bi[e])
				}
				j := b.Features[c]
				if stamp[j] != s || rv[pos[j]] == 0 {
					return fmt.Errorf("client %d: sample %q feature %d is %v, %s has 0", h.client, id, j+1, v, d.Name)
				}
				t := pos[j]
				if o := held[t]; o != 0 {
					return fmt.Errorf("sample %q feature %d held by clients %d and %d", id, j+1, o-1, h.client)
				}
				held[t] = int32(h.client + 1)
				if v != rv[t] {
					return fmt.Errorf("client %d: sample %q feature %d is %v, %s has %v", h.client, id, j+1, v, d.Name, rv[t])
				}
			}
		}
		for t, o := range held {
			if o == 0 && rv[t] != 0 {
				return fmt.Errorf("sample %q feature %d held by no client", id, ri[t]+1)
			}
		}
	}
	return nil
}

// rowValues returns row r of b with one value per feature of b; a sparse
// row is scattered into buf, which is returned for reuse.
func rowValues(b *Block, r int, buf []float64) (val, scratch []float64) {
	idx, v := b.X.Row(r)
	if !b.X.IsSparse() { // not idx == nil: an empty sparse row can have a nil idx
		return v, buf
	}
	buf = slices.Grow(buf[:0], len(b.Features))[:len(b.Features)]
	clear(buf)
	for e, c := range idx {
		buf[c] = v[e]
	}
	return buf, buf
}
