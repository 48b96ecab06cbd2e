package curious

import (
	"context"
	"flag"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/seal/threshold"
	"github.com/hyfed/hyfed/shared/secret"
)

var (
	coData      = flag.String("coholder.data", "digits", "TestCoHolderLeak: data set")
	coPartition = flag.String("coholder.partition", "grid:2,2", "TestCoHolderLeak: partition")
	coRounds    = flag.Int("coholder.rounds", 200, "TestCoHolderLeak: rounds")
	coLoss      = flag.String("coholder.loss", "hinge", "TestCoHolderLeak: loss")
	coKeys      = flag.String("coholder.keys", "threshold", "TestCoHolderLeak: key mode (shared or threshold)")
)

// thresholdKey returns participant k's own key of the threshold key from
// its key state, or nil while it has none.
func thresholdKey(mem *protocol.Memory, k int, ks *protocol.KeySetup, sec secret.Secret) seal.Key {
	state, err := mem.Participant(k).KeyState()
	if err != nil || state == nil || ks == nil {
		return nil
	}
	s, err := seal.ThresholdScheme()
	if err != nil {
		return nil
	}
	cfg := threshold.Config{Federation: ks.Federation, Threshold: ks.Threshold}
	for _, id := range ks.Committee {
		cfg.Parties = append(cfg.Parties, threshold.PartyID(id))
	}
	fed, err := threshold.New(s, cfg)
	if err != nil {
		return nil
	}
	party, err := threshold.Restore(fed, state, sec[:])
	if err != nil {
		return nil
	}
	key, err := party.Key()
	if err != nil {
		return nil // not ready yet
	}
	return key
}

// coHolderTruth returns, per sample of block a, the other holders' rows
// concatenated (in the order of others), matched by record id.
func coHolderTruth(blocks []partition.Block, a int, others []int) [][]float64 {
	rows := make([][]float64, blocks[a].N())
	for i, id := range blocks[a].IDs {
		for _, k := range others {
			b := &blocks[k]
			j := slices.Index(b.IDs, id)
			for f := range b.Features {
				rows[i] = append(rows[i], b.X.At(j, f))
			}
		}
	}
	return rows
}

// TestCoHolderLeak measures the co-holder leak on a real federation (BGV,
// threshold keys by default: the sums sent to A are switched to its own
// key, which it opens by right; -coholder.keys shared gives the same
// numbers, A's key then being everyone's): participant 0 with the server
// solves, from the full inner products x_n.u it opens each round and the
// directions u the server sent the other holders, for the other holders'
// features of each of its samples. It logs, every 10 rounds and at the first
// round below 1e-3, the rank the
// directions reach, the relative error of one training sample (0's first)
// and how many of 0's training samples are below 1e-3, and fails unless
// the reconstruction gets better than guessing zeros (the leak is real).
//
//	go test ./shared/curious -run CoHolderLeak -v [-coholder.data mnist -coholder.partition grid:2,2 -coholder.rounds 300]
func TestCoHolderLeak(t *testing.T) {
	if *coData == "mnist" {
		if _, err := dataset.MNISTDir(); err != nil {
			t.Skipf("MNIST digits are not installed (make data): %v", err)
		}
	}
	cfg := protocol.Defaults()
	cfg.Rounds, cfg.Loss, cfg.Keys = *coRounds, *coLoss, *coKeys
	o := experiment.Options{Data: *coData, Partition: *coPartition, Seed: 1, PStar: 1, Config: cfg}
	p, err := experiment.Prepare(o)
	if err != nil {
		t.Skipf("%s: %v", *coData, err)
	}
	a := 0
	var others []int
	for k := range p.Blocks {
		if k != a && slices.Equal(p.Blocks[k].IDs, p.Blocks[a].IDs) {
			others = append(others, k)
		}
	}
	if len(others) == 0 {
		t.Fatalf("%s: no other holder of block 0's samples", *coPartition)
	}
	sec := secret.FromSeed(o.Seed)
	h := NewCoHolder(nil, a, &p.Blocks[a], others)
	if cfg.Keys == protocol.KeysThreshold {
		// A's own key, once its party has one: what the sums sent to A
		// are switched to.
		var ks *protocol.KeySetup
		o.Observe = func(toServer bool, client int, m *protocol.Message) {
			if !toServer && client == a && m.Kind == protocol.KindKeySetup {
				ks = m.KeySetup
			}
			h.Observe(toServer, client, m)
		}
		o.Script = func(mem *protocol.Memory, _ *protocol.Coordinator) {
			if !h.HasKey() {
				if key := thresholdKey(mem, a, ks, sec); key != nil {
					h.SetKey(key)
				}
			}
		}
	} else {
		scheme, err := seal.ByName("bgv")
		if err != nil {
			t.Fatal(err)
		}
		key, err := seal.NewKeyFor(scheme, sec.Derive(seal.KeyPurpose))
		if err != nil {
			t.Fatal(err)
		}
		h.SetKey(key)
		o.Observe = h.Observe
	}
	start := time.Now()
	sum, err := experiment.RunPrepared(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s, %s loss, BGV, keys %s, %d rounds in %.1fs: primal %.6g, held-out accuracy %.4f; participant %d, other holders %v",
		*coData, *coPartition, *coLoss, cfg.Keys, *coRounds, time.Since(start).Seconds(), sum.Primal, sum.Accuracy, a, others)

	truth := coHolderTruth(p.Blocks, a, others)
	blk := &p.Blocks[a]
	target := slices.Index(blk.Heldout, false)
	relErr := func(est []float64, x []float64) float64 {
		var d, n float64
		for j := range x {
			d += (est[j] - x[j]) * (est[j] - x[j])
			n += x[j] * x[j]
		}
		if n == 0 {
			return 0
		}
		return math.Sqrt(d / n)
	}
	eqs := len(h.Rounds())
	first, last := -1, 1.0
	for n := 1; n <= eqs; n++ {
		x, rank, err := h.Reconstruct(n)
		if err != nil {
			t.Fatal(err)
		}
		e := relErr(x.RawRowView(target), truth[target])
		below, train := 0, 0
		for i := range truth {
			if blk.Heldout[i] {
				continue
			}
			train++
			if relErr(x.RawRowView(i), truth[i]) < 1e-3 {
				below++
			}
		}
		if e < 1e-3 && first < 0 {
			first = h.Rounds()[n-1]
		}
		last = e
		if n%10 != 0 && n != eqs && !(e < 1e-3 && first == h.Rounds()[n-1]) {
			continue
		}
		t.Logf("%d rounds with equations (to round %d): rank %d of %d unknowns; sample %d (%s): error %.3g; %d of %d training samples below 1e-3",
			n, h.Rounds()[n-1], rank, len(truth[target]), target, blk.IDs[target], e, below, train)
	}
	t.Logf("sample %d's other holders' features to relative error < 1e-3 by round %d (-1: not within %d rounds)", target, first, *coRounds)
	if !(last < 0.5) {
		t.Fatalf("the co-holder's reconstruction of sample %d ends at error %.3g: no leak measured", target, last)
	}
}
