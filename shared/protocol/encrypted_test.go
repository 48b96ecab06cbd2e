package protocol

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

func bgvScheme(t *testing.T) *seal.BGV {
	t.Helper()
	s, err := seal.NewBGV()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEncryptedRunMatchesPlaintext: with BGV the federation computes bit for
// bit what it computes in plaintext, round by round, whichever step rule,
// with partial participation and a client that drops and returns (so that
// the sealed dual values travel back through a refresh).
func TestEncryptedRunMatchesPlaintext(t *testing.T) {
	d := testData(240, 9, 21)
	// Sparse, grid deals each sample's non-zeros among its holders: the
	// block rule's kappa and bias paths (testData's last feature is 1).
	dealt := &dataset.Dataset{Name: d.Name, X: d.X.Sparsify(), Y: d.Y, IDs: d.IDs, Heldout: d.Heldout}
	for _, tc := range []struct {
		name, step string
		data       *dataset.Dataset
		bias       bool
		defaults   bool // the default block step: group steps, one solver a group, shared directions
	}{{"block", StepBlock, d, false, true}, {"block, one line search, every holder solving", StepBlock, d, false, false},
		{"block dealt with bias", StepBlock, dealt, true, false}, {"paper", StepPaper, d, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Lambda: 1e-2, Step: tc.step, Inner: 12, Fraction: 0.5, Rounds: 25, Seed: 5, NoGroupSteps: true, EveryHolderSolves: true, SharedDirections: NoDirections}
			if tc.defaults {
				cfg.NoGroupSteps, cfg.EveryHolderSolves, cfg.SharedDirections = false, false, 0
			}
			if tc.bias {
				cfg.BiasFeature, cfg.BiasValue = d.M()-1, 1
			}
			cfg.DealtEntries = tc.data == dealt
			var hist [2][]RoundMetrics
			kappas := 0.0
			for i, scheme := range []seal.Scheme{seal.Plaintext{Len: 64}, bgvScheme(t)} {
				blocks := gridBlocks(tc.data, 2, 3)
				if tc.data == dealt {
					spec, err := partition.Parse("grid:2,3")
					if err != nil {
						t.Fatal(err)
					}
					if blocks, err = spec.Split(dealt); err != nil {
						t.Fatal(err)
					}
				}
				f := newFedScheme(t, blocks, cfg, scheme)
				f.mem.Hook = func() {
					switch r := f.coord.Round(); {
					case r >= 8 && r < 14 && f.mem.Connected(2):
						f.mem.Drop(2)
					case r >= 14 && !f.mem.Connected(2):
						if err := f.mem.Join(2); err != nil {
							t.Fatal(err)
						}
					}
				}
				hist[i] = f.run(t)
				for _, k := range f.coord.kappa {
					kappas = max(kappas, k)
				}
			}
			if len(hist[0]) != len(hist[1]) {
				t.Fatalf("%d rounds in plaintext, %d encrypted", len(hist[0]), len(hist[1]))
			}
			refreshed := false
			for r := range hist[0] {
				p, e := hist[0][r], hist[1][r]
				if !same(p.Primal, e.Primal) || !same(p.Dual, e.Dual) || p.Gamma != e.Gamma || p.Updated != e.Updated {
					t.Fatalf("round %d: plaintext P=%v D=%v gamma=%v, encrypted P=%v D=%v gamma=%v",
						p.Round, p.Primal, p.Dual, p.Gamma, e.Primal, e.Dual, e.Gamma)
				}
				refreshed = refreshed || e.Seconds[PhaseRefresh] > 0
			}
			if !refreshed {
				t.Fatal("the scenario never refreshed a returning client")
			}
			if tc.data == dealt && !(kappas > 1) {
				t.Fatal("the dealt partition's groups all have kappa 1: their holders share no feature")
			}
		})
	}
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestEncryptedTrafficHoldsNoSecrets records every message of an encrypted
// run. Every sealed payload must be a BGV ciphertext; opened with the key
// (which the server does not have) they give the dual values, updates,
// inner products and norms that travelled. No plaintext field of any
// message may carry one of those values or a data entry, and every
// ciphertext a client receives must open to values of its own samples only.
func TestEncryptedTrafficHoldsNoSecrets(t *testing.T) {
	d := testData(200, 8, 12)
	blocks := gridBlocks(d, 2, 2)
	scheme := bgvScheme(t)
	key, err := scheme.NewKey(testSecret.Derive(seal.KeyPurpose))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{StepBlock, StepBlock + "+group-steps", StepPaper} {
		cfg := Config{Lambda: 1e-2, Step: step, Inner: 10, Fraction: 0.7, Rounds: 15, Seed: 3}
		if rule, ok := strings.CutSuffix(step, "+group-steps"); ok {
			cfg.Step = rule
		}
		f := newFedScheme(t, blocks, cfg, scheme)
		per := gramChunks(blockPicks(f.coord.cfg), scheme.ChunkLen())
		var mu sync.Mutex
		secrets := map[float64]bool{} // every value that travelled sealed
		type field struct {
			kind Kind
			name string
			v    float64
		}
		var plain []field
		for _, b := range blocks {
			for i := 0; i < b.N(); i++ {
				for j := range b.Features {
					secrets[b.X.At(i, j)] = true
				}
			}
		}
		cipherChunks, openedForClients, grams, centered := 0, 0, 0, 0
		f.mem.Observe = func(toServer bool, k int, m *Message) {
			mu.Lock()
			defer mu.Unlock()
			for _, v := range []seal.Vec{m.Sealed, m.Alpha} {
				for ci, c := range v {
					if _, ok := c.(*seal.Cipher); !ok {
						t.Fatalf("%s message carries a %T chunk, not a ciphertext", m.Kind, c)
					}
					cipherChunks++
					vals, err := key.Open(c)
					if err != nil {
						t.Fatal(err)
					}
					if m.Kind == KindGramSum || m.Kind == KindGramPart {
						// The Gram layout: a group's chunks hold its Gram only.
						for _, x := range vals {
							secrets[x] = true
						}
						if _, ok := f.coord.clients[k].localGroup[ci/per]; !ok {
							t.Fatalf("%s: client %d sent or received chunk %d of the Gram of group %d, which it does not hold", step, k, ci, ci/per)
						}
						grams++
						continue
					}
					for off, x := range vals {
						secrets[x] = true
						if toServer {
							continue
						}
						slot := ci*scheme.ChunkLen() + off
						if x != 0 && !f.coord.clients[k].ownsSlot(slot) {
							t.Fatalf("%s: client %d received a %s ciphertext that opens to slot %d, not its sample", step, k, m.Kind, slot)
						}
					}
					if !toServer {
						if !f.coord.clients[k].chunks[ci] {
							t.Fatalf("%s: client %d received chunk %d holding none of its samples", step, k, ci)
						}
						openedForClients++
					}
				}
			}
			add := func(name string, vs ...float64) {
				for _, v := range vs {
					plain = append(plain, field{m.Kind, name, v})
				}
			}
			add("W", m.W...)
			add("HatW", m.HatW...)
			add("DW", m.DW...)
			add("DConj", m.DConj)
			add("GridLoss", m.GridLoss...)
			add("GridConj", m.GridConj...)
			add("GridWDot", m.GridWDot...)
			if len(m.DWCentered) > 0 {
				centered++
			}
			add("DWCentered", m.DWCentered...) // group steps' second direction
			add("DConjCentered", m.DConjCentered)
			if m.GammaMaxCentered != 1 {
				add("GammaMaxCentered", m.GammaMaxCentered)
			}
			if m.GammaMax != 1 {
				// 1 says that a pick reached its bound (docs/privacy.md),
				// and hinge dual values at their bounds are 1 too.
				add("GammaMax", m.GammaMax)
			}
			// Grid, Gamma, Sigma and Kappa are left out: numbers the server picks
			// itself (fractions like 1/2, which hinge dual values at
			// their bounds share by coincidence).
		}
		f.run(t)
		if cipherChunks == 0 || openedForClients == 0 || (cfg.Step == StepBlock) != (grams > 0) {
			t.Fatalf("%s: %d ciphertexts observed, %d opened for clients, %d Gram chunks", step, cipherChunks, openedForClients, grams)
		}
		if (cfg.GroupSteps() && cfg.Step == StepBlock) != (centered > 0) {
			t.Fatalf("%s: %d messages with a second direction", step, centered)
		}
		delete(secrets, 0) // zeros are everywhere and say nothing
		for _, p := range plain {
			if secrets[p.v] {
				t.Errorf("%s: plaintext field %s of a %s message carries %v, a value that travels only sealed", step, p.name, p.kind, p.v)
			}
		}
	}
}

// TestParticipantRefusesNonFiniteFields: plaintext numbers from the
// coordinator must be finite; a participant says which field is not.
func TestParticipantRefusesNonFiniteFields(t *testing.T) {
	d := testData(80, 6, 4)
	f := newFed(t, gridBlocks(d, 1, 2), Config{Lambda: 1e-2, Inner: 5, Fraction: 1, Rounds: 2, Seed: 1})
	f.run(t)
	p := f.mem.Participant(0)
	w := make([]float64, 3)
	w[1] = math.Inf(1)
	for _, m := range []Message{
		{Kind: KindWeights, Round: 3, W: w},
		{Kind: KindApply, Round: 3, Gamma: math.NaN()},
		{Kind: KindIP, Round: 3, Grid: []float64{0, math.NaN()}},
	} {
		_, err := p.Handle(m)
		if err == nil || !strings.Contains(err.Error(), "not a finite number") {
			t.Errorf("%s with a non-finite field: error %v", m.Kind, err)
		}
	}
}

// ownsSlot reports whether the client holds the sample in slot s.
func (cs *clientState) ownsSlot(s int) bool {
	for _, x := range cs.slots {
		if x == s {
			return true
		}
	}
	return false
}
