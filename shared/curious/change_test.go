package curious

import (
	"math"
	"testing"

	"github.com/hyfed/hyfed/shared/partition"
)

// bestMatch returns the largest |cosine| between v and a training row of
// the block, and that row.
func bestMatch(b *partition.Block, v []float64) (float64, int) {
	vv := 0.0
	for _, x := range v {
		vv += x * x
	}
	best, row := 0.0, -1
	for i := 0; i < b.N(); i++ {
		if b.Heldout[i] {
			continue
		}
		dot := b.X.Dot(i, v)
		nn := b.X.RowNormSq(i)
		if nn == 0 || vv == 0 {
			continue
		}
		if c := math.Abs(dot) / math.Sqrt(nn*vv); c > best {
			best, row = c, i
		}
	}
	return best, row
}

// TestPrimalChangeShowsASample is the leak the HyFDCA paper leaves open: under
// the default encryption (dual values and inner products sealed) a
// client's share of the round's direction, dw_k = X_k^T d, still travels in
// plaintext, and where a sample group picks a single sample it is that
// sample's row times d_n: the server sees a digit without opening anything.
// (The block step fills its picks to the Gram's ciphertexts, 90 and more,
// so a group with one training sample is the clear case.) With SealPrimal
// the server receives no such vector.
func TestPrimalChangeShowsASample(t *testing.T) {
	o := mnistOptions(6, false)
	p := prepareMNIST(t, o)
	// One training sample: the others held out, alike in every block.
	for k := range p.Blocks {
		for i := range p.Blocks[k].Heldout {
			p.Blocks[k].Heldout[i] = i != 0
		}
	}
	obs := observe(t, p, o)
	ch := obs.Changes(0)
	if len(ch) < 1 {
		t.Fatalf("BGV, one training sample: %d plaintext changes of client 0's contribution observed, want some", len(ch))
	}
	for _, c := range ch {
		cos, row := bestMatch(&p.Blocks[0], c.DW)
		t.Logf("round %d: dw_0 matches training row %d with |cos| %.12f", c.Round, row, cos)
		if cos < 1-1e-9 {
			t.Errorf("round %d: dw_0 is no single row (best |cos| %.6f)", c.Round, cos)
		}
	}

	o.SealPrimal = true
	obs = observe(t, p, o)
	if ch := obs.Changes(0); len(ch) != 0 {
		t.Fatalf("sealed primal: %d plaintext changes reached the server", len(ch))
	}
	r, err := obs.ReconstructDual(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Equations != 0 || r.Unreadable == 0 {
		t.Errorf("sealed primal: the dual attack got %d equations, %d unreadable vectors; want none readable", r.Equations, r.Unreadable)
	}
}
