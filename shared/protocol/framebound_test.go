package protocol

import (
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/averaging"
	"github.com/hyfed/hyfed/shared/fedhybrid"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// TestFramesWithinTheirBound: every frame a participant sends, in every
// rule and key mode, fits the bound FrameLimit gave it when the message it
// answers left; the bound once Final never changes; and in a BGV run it is
// close to the largest frame the participant sent (it bounds the seeds of
// a sum, and the plaintext fields by a margin).
func TestFramesWithinTheirBound(t *testing.T) {
	d := testData(240, 9, 21)
	own := makeOwnData(t, schema.LabelsShared)
	bgv := bgvScheme(t)
	thr, err := seal.ThresholdScheme()
	if err != nil {
		t.Fatal(err)
	}
	short := seal.Plaintext{Len: 64} // many chunks a participant
	small := gridBlocks(testData(60, 6, 3), 2, 2)
	ownCfg := Defaults()
	ownCfg.Schema, ownCfg.Rounds = own.sch, 3
	for _, tc := range []struct {
		name   string
		cfg    Config
		scheme seal.Scheme
		blocks []partition.Block
		loose  float64 // the bound is at most loose times the largest frame (0: not checked)
		churn  bool    // participant 1 leaves in round 2 and comes back (a refresh)
	}{
		{"block, bgv", Config{Lambda: 1e-2, Rounds: 4, Seed: 5}, bgv, gridBlocks(d, 2, 3), 1.5, false},
		{"block, short chunks, a return", Config{Lambda: 1e-2, Rounds: 5, Seed: 5}, short, gridBlocks(d, 2, 3), 0, true},
		{"block, every holder solving, no group steps", Config{Lambda: 1e-2, Rounds: 4, Seed: 5, EveryHolderSolves: true, NoGroupSteps: true}, short, gridBlocks(d, 2, 3), 0, false},
		{"paper, sealed primal, a return", Config{Lambda: 0.05, Step: StepPaper, Inner: 3, Rounds: 5, Seed: 2, SealPrimal: true, Fraction: 0.6}, short, gridBlocks(d, 2, 3), 0, true},
		{"block, sealed primal, bgv", Config{Lambda: 1e-2, Rounds: 3, Seed: 5, SealPrimal: true}, bgv, gridBlocks(d, 2, 3), 0, false},
		{"fedavg", Config{Algo: averaging.FedAvg, Lambda: 1e-2, Rounds: 3, Inner: 5, StepA: 0.3, StepB: 1, Seed: 5}, short, gridBlocks(d, 2, 3), 0, false},
		{"fedhybrid", Config{Algo: fedhybrid.Name, Loss: "logistic", Lambda: 1e-2, Rounds: 3, Inner: 1, Mu: 0.05}, short, gridBlocks(d, 4, 1), 0, false},
		{"own files, bgv", ownCfg, bgv, own.blocks, 0, false},
		{"threshold keys", Config{Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1, Keys: KeysThreshold}, thr, small, 0, false},
		{"OPRF pseudonyms, bgv", Config{Lambda: 1e-2, Rounds: 3, Seed: 5, Pseudonyms: PseudonymsOPRF}, bgv, gridBlocks(d, 2, 3), 0, false},
		{"OPRF pseudonyms, threshold keys", Config{Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1, Keys: KeysThreshold, Pseudonyms: PseudonymsOPRF}, thr, small, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFedScheme(t, tc.blocks, tc.cfg, tc.scheme)
			if tc.churn {
				f.mem.Hook = func() {
					switch r := f.coord.Round(); {
					case r == 2 && f.mem.Connected(1):
						f.mem.Drop(1)
					case r == 3 && !f.mem.Connected(1):
						if err := f.mem.Join(1); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			n := len(tc.blocks)
			largest, bound, kinds := make([]int, n), make([]int, n), make([]Kind, n)
			final := make([]int, n)
			f.mem.OnReady = func(Ready) {
				for k := range n {
					fl := f.coord.FrameLimit(k)
					bound[k] = fl.Bytes
					if !fl.Final {
						continue
					}
					if final[k] != 0 && final[k] != fl.Bytes {
						t.Errorf("participant %d: its final bound moved from %d to %d bytes", k, final[k], fl.Bytes)
					}
					final[k] = fl.Bytes
				}
			}
			f.mem.Observe = func(toServer bool, k int, m *Message) {
				if !toServer || m.Kind == KindHello { // the hello has its own limit
					return
				}
				b, err := EncodeMessage(tc.scheme, *m)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) > bound[k] {
					t.Errorf("participant %d's %s frame of %d bytes is over its bound of %d", k, m.Kind, len(b), bound[k])
				}
				if len(b) > largest[k] {
					largest[k], kinds[k] = len(b), m.Kind
				}
			}
			f.run(t)
			for k := range n {
				if final[k] == 0 {
					t.Fatalf("participant %d: no final bound after %d rounds", k, tc.cfg.Rounds)
				}
				ratio := float64(final[k]) / float64(largest[k])
				t.Logf("participant %d: largest frame %d bytes (%s), bound %d (%.2fx)", k, largest[k], kinds[k], final[k], ratio)
				if tc.loose > 0 && ratio > tc.loose {
					t.Errorf("participant %d: bound %d bytes is %.1f times its largest frame (%d bytes, %s), want at most %v", k, final[k], ratio, largest[k], kinds[k], tc.loose)
				}
			}
		})
	}
}

// TestFrameBoundBeforeTheLayout: before the federation aligns, a registered
// participant may send only an error (a quit), whatever its block.
func TestFrameBoundBeforeTheLayout(t *testing.T) {
	c, err := NewCoordinator(Config{Clients: 2, Rounds: 1}, bgvScheme(t))
	if err != nil {
		t.Fatal(err)
	}
	blocks := gridBlocks(testData(60, 6, 3), 2, 1)
	p, err := NewParticipant(&blocks[0], secret.FromSeed(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(Input{Kind: InputJoin, From: 0, Msg: p.Hello()})
	fl := c.FrameLimit(0)
	quit, err := EncodeMessage(c.Scheme(), Message{Kind: KindError, Err: strings.Repeat("x", 6<<10)})
	if err != nil {
		t.Fatal(err)
	}
	if fl.Final || fl.Bytes < len(quit) || fl.Bytes > 16<<10 {
		t.Fatalf("before the start: %+v, want a bound between a 6 kB quit (%d bytes) and 16 kB, not final", fl, len(quit))
	}
}
