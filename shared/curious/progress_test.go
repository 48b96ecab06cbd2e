package curious

import (
	"math"
	"slices"
	"testing"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
)

// TestProgressAndSettledRows: Progress counts what the attacks read without
// solving anything, and SettledRows never counts a row the server does not
// have: none without an earlier reconstruction, only rows close to the
// truth while the rank is short, every row once it is full. Client 0 of
// a synthetic vertical:2 split: 300 samples on 20 features, so the
// inner-product attack reaches full rank within 30 rounds.
func TestProgressAndSettledRows(t *testing.T) {
	o := experiment.Options{Data: "synthetic:300,40,1,0.05,3", Partition: "vertical:2", Seed: 1, PStar: 1, Config: defaults("logistic", 30)}
	for _, plain := range []bool{true, false} {
		o.Plaintext = plain
		p, err := experiment.Prepare(o)
		if err != nil {
			t.Fatal(err)
		}
		truth := &p.Blocks[0]
		obs := observe(t, p, o)
		// In process the observer comes after the hellos; a server's sees
		// them first. Client 0's, as it sent it:
		part, err := protocol.NewParticipant(truth, secret.FromSeed(o.Seed), nil)
		if err != nil {
			t.Fatal(err)
		}
		hello := part.Hello()
		obs.Observe(true, 0, &hello)
		pr := obs.Progress(0)
		training := 0
		for _, h := range truth.Heldout {
			if !h {
				training++
			}
		}
		if !pr.SetUp || pr.Samples != truth.N() || pr.Features != len(truth.Features) || pr.Training != training {
			t.Fatalf("plaintext=%v: progress %+v, want set up, %d samples (%d training), %d features", plain, pr, truth.N(), training, len(truth.Features))
		}
		if got := obs.Features(0); !slices.Equal(got, truth.Features) {
			t.Fatalf("plaintext=%v: features %v, the block's %v", plain, got, truth.Features)
		}
		if got := obs.Training(0); len(got) != truth.N() || got[0] == truth.Heldout[0] {
			t.Fatalf("plaintext=%v: training flags %d long, first %v; the block's first is held out: %v", plain, len(got), got[0], truth.Heldout[0])
		}
		if !plain {
			if pr.Equations != 0 || pr.Unreadable == 0 {
				t.Fatalf("BGV: progress %+v, want no equation and unreadable vectors", pr)
			}
			r, err := obs.ReconstructIP(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			s, err := SettledRows(nil, r, 1e-3)
			if err != nil || count(s) != 0 {
				t.Fatalf("BGV: %d rows settled (%v), want none", count(s), err)
			}
			continue
		}
		r, err := obs.ReconstructIP(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if pr.Equations != r.Equations || pr.Rounds != r.Rounds || pr.LastRound != o.Rounds || pr.Unreadable != 0 {
			t.Fatalf("progress %+v; the reconstruction has %d equations from %d rounds", pr, r.Equations, r.Rounds)
		}
		var prev *Reconstruction
		for _, c := range []struct {
			upTo     int
			withPrev bool
		}{{4, false}, {8, true}, {12, true}, {16, true}, {0, true}, {0, false}} {
			r, err := obs.ReconstructIP(0, c.upTo)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := obs.RankIP(0, c.upTo); err != nil || got != r.Rank {
				t.Errorf("rounds %d: RankIP %d (%v), the reconstruction's rank %d", c.upTo, got, err, r.Rank)
			}
			before := prev
			if !c.withPrev {
				before = nil
			}
			s, err := SettledRows(before, r, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			full := r.Rank == r.Unknowns
			worst := 0.0
			for i, ok := range s {
				if ok {
					worst = math.Max(worst, rowError(r, truth, i))
				}
			}
			t.Logf("rounds %d: rank %d of %d, %d rows settled, worst of them %.3g off", c.upTo, r.Rank, r.Unknowns, count(s), worst)
			switch {
			case before == nil && !full && count(s) != 0:
				t.Errorf("rounds %d: %d rows settled without an earlier reconstruction", c.upTo, count(s))
			case full && count(s) != truth.N():
				t.Errorf("rounds %d: full rank but %d of %d rows settled", c.upTo, count(s), truth.N())
			case worst > 1e-2:
				t.Errorf("rounds %d: a settled row is %.3g off its true row", c.upTo, worst)
			}
			prev = r
		}
		if r.Rank != r.Unknowns {
			t.Fatalf("30 rounds reached rank %d of %d: the test needs full rank at the end", r.Rank, r.Unknowns)
		}
		other, err := obs.ReconstructIP(1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := SettledRows(other, r, 1e-3); err == nil {
			t.Error("settled rows of client 0 against a reconstruction of client 1: no error")
		}
	}
}

func count(s []bool) int {
	n := 0
	for _, ok := range s {
		if ok {
			n++
		}
	}
	return n
}

// rowError is ||x_hat_i - x_i|| / max(||x_i||, 1).
func rowError(r *Reconstruction, truth *partition.Block, i int) float64 {
	var d, n float64
	for j := range truth.Features {
		x := truth.X.At(i, j)
		e := r.X.At(i, j) - x
		d += e * e
		n += x * x
	}
	return math.Sqrt(d) / math.Max(math.Sqrt(n), 1)
}
