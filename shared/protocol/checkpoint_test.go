package protocol

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
)

// TestRestoreFinishesAtTheSameOptimum interrupts a federation in the middle
// of a round, rebuilds the coordinator from the last checkpoint with fresh
// participants (a killed server and reloaded pages), and checks that the
// restored run records every round exactly once and ends where the
// uninterrupted run ends.
func TestRestoreFinishesAtTheSameOptimum(t *testing.T) {
	d := testData(300, 10, 4)
	blocks := gridBlocks(d, 3, 2)
	for _, scheme := range []seal.Scheme{seal.Plaintext{Len: 64}, bgvScheme(t)} {
		t.Run(scheme.Name(), func(t *testing.T) {
			cfg := Config{Lambda: 1e-2, Inner: 25, Fraction: 0.7, Rounds: 200, Seed: 5}
			whole := newFedScheme(t, blocks, cfg, scheme).run(t)

			crashed := newFedScheme(t, blocks, cfg, scheme)
			last := crashAt(t, crashed, 31, PhaseDirection) // the server dies mid-round
			if last == nil || last.Round != 30 {
				t.Fatalf("last checkpoint %+v, want round 30", last)
			}
			c, err := Restore(scheme, last.Setup, last.RoundData)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Waiting() || c.Round() != 30 || len(c.History()) != 31 {
				t.Fatalf("restored: waiting %v round %d history %d", c.Waiting(), c.Round(), len(c.History()))
			}
			// The model handed out comes back: the best of rounds 0-30.
			if got, want := c.Model(), crashed.coord.Model(); !want.Best || !sameIterate(got, want) {
				t.Fatalf("restored model: round %d P %v best %v, before the crash: round %d P %v best %v",
					got.Round, got.Primal, got.Best, want.Round, want.Primal, want.Best)
			}
			g := newFedScheme(t, blocks, cfg, scheme) // fresh participants, joining again
			g.coord = c
			h := g.run(t)
			if len(h) != cfg.Rounds+1 {
				t.Fatalf("%d rounds recorded, want %d", len(h), cfg.Rounds+1)
			}
			for i, r := range h {
				if r.Round != i {
					t.Fatalf("history entry %d is round %d: a round lost or doubled", i, r.Round)
				}
			}
			if m := g.coord.Model(); m.Round != bestRound(h) || m.Primal != h[m.Round].Primal {
				t.Fatalf("model of the restored run: round %d P %v; the lowest primal recorded: round %d", m.Round, m.Primal, bestRound(h))
			}
			for i := 0; i <= 30; i++ {
				if h[i].Primal != whole[i].Primal && !(math.IsNaN(h[i].Primal) && math.IsNaN(whole[i].Primal)) {
					t.Fatalf("round %d before the checkpoint: primal %v, uninterrupted %v", i, h[i].Primal, whole[i].Primal)
				}
			}
			// Both runs converge to the optimum; the restored one took a
			// refresh and full inner products the other did not, so its
			// iterates differ in the last bits and the trajectories part.
			pstar := optimum(t, d, cfg.Lambda)
			for name, r := range map[string]RoundMetrics{"restored": h[len(h)-1], "uninterrupted": whole[len(whole)-1]} {
				if gap := (pstar - r.Dual) / pstar; gap > 2e-3 || gap < -1e-9 {
					t.Errorf("%s run: dual %.9g, P* %.9g: relative dual gap %.2g", name, r.Dual, pstar, gap)
				}
			}
			t.Logf("final dual restored %.12g, uninterrupted %.12g, P* %.12g", h[len(h)-1].Dual, whole[len(whole)-1].Dual, pstar)
		})
	}
}

func TestRestoreRefusesMismatchedParts(t *testing.T) {
	scheme := seal.Plaintext{Len: 64}
	cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 3, Seed: 1}
	cps := roundCheckpoints(t, cfg, gridBlocks(testData(120, 6, 4), 2, 2))
	if len(cps) != 4 {
		t.Fatalf("%d checkpoints for rounds 0..3", len(cps))
	}
	others := roundCheckpoints(t, cfg, gridBlocks(testData(120, 6, 5), 2, 2))
	ocp := others[len(others)-1]
	for _, tc := range []struct {
		name         string
		setup, round []byte
		scheme       seal.Scheme
	}{
		{"round of another federation", cps[1].Setup, ocp.RoundData, scheme},
		{"truncated round", cps[1].Setup, cps[1].RoundData[:len(cps[1].RoundData)/2], scheme},
		{"garbage setup", []byte("not a checkpoint"), cps[1].RoundData, scheme},
		{"other scheme", cps[1].Setup, cps[1].RoundData, bgvScheme(t)},
	} {
		if _, err := Restore(tc.scheme, tc.setup, tc.round); err == nil {
			t.Errorf("%s: restored", tc.name)
		}
	}
	c, err := Restore(scheme, cps[3].Setup, cps[3].RoundData)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Finished() {
		t.Fatal("a checkpoint after the last round restores unfinished")
	}
}

// sameIterate compares two iterates bit for bit.
func sameIterate(a, b Iterate) bool {
	if a.Round != b.Round || a.Primal != b.Primal || a.HeldAcc != b.HeldAcc || a.TrainAcc != b.TrainAcc ||
		a.Best != b.Best || len(a.W) != len(b.W) {
		return false
	}
	for i := range a.W {
		if a.W[i] != b.W[i] {
			return false
		}
	}
	return true
}

// bestRound returns the first round with the lowest primal in h (-1: none).
func bestRound(h []RoundMetrics) int {
	best := -1
	for i, r := range h {
		if !r.Partial && !math.IsNaN(r.Primal) && (best < 0 || r.Primal < h[best].Primal) {
			best = i
		}
	}
	return best
}

// roundCheckpoints runs a small federation with checkpoints and returns
// them encoded, one per round boundary.
func roundCheckpoints(t testing.TB, cfg Config, blocks []partition.Block) []*Checkpoint {
	t.Helper()
	f := newFedScheme(t, blocks, cfg, seal.Plaintext{Len: 64})
	f.coord.EnableCheckpoints()
	var cps []*Checkpoint
	f.mem.OnReady = func(r Ready) {
		if r.Checkpoint != nil {
			var prev *Checkpoint
			if len(cps) > 0 {
				prev = cps[len(cps)-1]
			}
			cps = append(cps, withSetup(r.Checkpoint, prev))
		}
	}
	f.run(t)
	return cps
}

// TestSetupHandedOnce: the setup part is in the coordinator's first
// checkpoint only, and in the first after a restore (the same bytes); the
// others name it by its digest.
func TestSetupHandedOnce(t *testing.T) {
	f := newFedScheme(t, gridBlocks(testData(120, 6, 4), 2, 2), Config{Lambda: 1e-2, Inner: 10, Rounds: 4, Seed: 1}, seal.Plaintext{Len: 64})
	f.coord.EnableCheckpoints()
	var cps []*Checkpoint
	f.mem.OnReady = func(r Ready) {
		if r.Checkpoint != nil {
			cps = append(cps, r.Checkpoint.Encode())
		}
	}
	f.run(t)
	if len(cps) < 3 {
		t.Fatalf("%d checkpoints", len(cps))
	}
	first := cps[0]
	if first.Setup == nil || first.SetupDigest != sha256.Sum256(first.Setup) {
		t.Fatal("the first checkpoint does not carry its setup part")
	}
	for _, cp := range cps[1:] {
		if cp.Setup != nil || cp.SetupDigest != first.SetupDigest {
			t.Fatalf("round %d's checkpoint: setup of %d bytes, digest equal %v", cp.Round, len(cp.Setup), cp.SetupDigest == first.SetupDigest)
		}
	}
	mid := cps[1]
	c, err := Restore(seal.Plaintext{Len: 64}, first.Setup, mid.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	c.EnableCheckpoints()
	again := c.checkpoint()
	if !bytes.Equal(again.Setup, first.Setup) || again.SetupDigest != first.SetupDigest {
		t.Fatal("the first checkpoint after a restore does not hand on the same setup part")
	}
	if c.checkpoint().Setup != nil {
		t.Fatal("the second checkpoint after a restore carries the setup part again")
	}
}

// TestRoundVersions: a round part keeps its sealed vectors after the gob
// (version 2), decodes to what was captured, restores, and this build still
// restores the same state written the earlier way (version 1: the vectors
// inside the gob); cut or padded tails are refused.
func TestRoundVersions(t *testing.T) {
	for name, cfg := range map[string]Config{
		"block":            {Lambda: 1e-2, Inner: 10, Rounds: 2, Seed: 1},
		"sealed primal":    {Lambda: 1e-2, Inner: 10, Rounds: 2, Seed: 1, Step: StepPaper, SealPrimal: true},
		"fedhybrid shares": {Lambda: 1e-2, Inner: 1, Rounds: 2, Seed: 1, Algo: "fedhybrid", Loss: "logistic", Mu: 0.1},
	} {
		t.Run(name, func(t *testing.T) {
			q := 2
			if cfg.Algo != "" {
				q = 1 // fedhybrid: a horizontal partition
			}
			cps := roundCheckpoints(t, cfg, gridBlocks(testData(120, 6, 4), 2, q))
			cp := cps[len(cps)-1]
			rs, err := decodeRound(cp.RoundData)
			if err != nil || rs.Version != roundVersion || len(rs.Alpha) == 0 {
				t.Fatalf("version %d, %d bytes of dual values: %v", rs.Version, len(rs.Alpha), err)
			}
			shares := slices.ContainsFunc(rs.SealedW, func(b []byte) bool { return len(b) > 0 })
			if name != "block" && !shares {
				t.Fatal("no sealed share of w in the checkpoint: the case tests nothing")
			}
			v1 := rs
			v1.Version = 1
			old := encodeGob(v1)
			a, err := Restore(seal.Plaintext{Len: 64}, cp.Setup, cp.RoundData)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Restore(seal.Plaintext{Len: 64}, cp.Setup, old)
			if err != nil {
				t.Fatalf("version 1: %v", err)
			}
			// What each restored coordinator would save again (gob encodes
			// the history's maps in any order: compared decoded).
			ra, err := decodeRound(a.checkpoint().Encode().RoundData)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := decodeRound(b.checkpoint().Encode().RoundData)
			if err != nil {
				t.Fatal(err)
			}
			// The history travels in the gob either way; its NaNs (a
			// baseline's dual) are unequal to themselves.
			if len(ra.History) != len(rb.History) || len(ra.History) != len(rs.History) {
				t.Fatalf("histories of %d and %d rounds, saved %d", len(ra.History), len(rb.History), len(rs.History))
			}
			ra.History, rb.History = nil, nil
			if !reflect.DeepEqual(ra, rb) {
				t.Fatal("the state restored from version 1 differs from that restored from version 2")
			}
			if !bytes.Equal(rb.Alpha, rs.Alpha) {
				t.Fatal("the restored dual values are not those saved")
			}
			// A dual rule keeps the sealed shares of w across a restart
			// (fedhybrid's participants send theirs again).
			if name == "sealed primal" && !slices.EqualFunc(rb.SealedW, rs.SealedW, bytes.Equal) {
				t.Fatal("the restored sealed shares of w are not those saved")
			}
			for what, round := range map[string][]byte{
				"cut":      cp.RoundData[:len(cp.RoundData)-1],
				"padded":   append(slices.Clone(cp.RoundData), 0),
				"too long": append(cp.RoundData[:len(cp.RoundData)-len(rs.Alpha)-3:len(cp.RoundData)-len(rs.Alpha)-3], 0xff, 0xff, 0xff, 0x7f),
			} {
				if _, err := Restore(seal.Plaintext{Len: 64}, cp.Setup, round); err == nil {
					t.Errorf("a %s round part restored", what)
				}
			}
		})
	}
}

// FuzzDecodeRound: a round part read from the disk never panics the
// decoder, and what it returns lies within what it read.
func FuzzDecodeRound(f *testing.F) {
	for _, cp := range roundCheckpoints(f, Config{Lambda: 1e-2, Inner: 10, Rounds: 1, Seed: 1}, gridBlocks(testData(120, 6, 4), 2, 2)) {
		f.Add(cp.RoundData)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := decodeRound(b)
		if err != nil || rs.Version != roundVersion {
			return
		}
		n := len(rs.Alpha)
		for _, v := range rs.SealedW {
			n += len(v)
		}
		if n > len(b) {
			t.Fatalf("%d bytes of sealed vectors from a round part of %d", n, len(b))
		}
	})
}

// BenchmarkCheckpointEncode encodes a round part whose dual values fill
// 1,250 chunks of 4,096 plaintext values (as 5,000 participants in
// quadrants:1250 do) and reports the bytes allocated per byte written
// (1 means one buffer of the checkpoint's size).
//
//	go test ./shared/protocol -run '^$' -bench CheckpointEncode -benchmem
func BenchmarkCheckpointEncode(b *testing.B) {
	s := seal.Plaintext{Len: 4096}
	key, err := seal.NewKeyFor(s, [32]byte{})
	if err != nil {
		b.Fatal(err)
	}
	v := seal.Vec{}
	vals := make([]float64, s.Len)
	for i := range 1250 {
		if v[i], err = key.Seal(vals); err != nil {
			b.Fatal(err)
		}
	}
	// in memory: Encode, as tests and tools use it; streamed: WriteRound
	// through the server's 256 kB file buffer.
	b.Run("in-memory", func(b *testing.B) {
		var written int
		b.ReportAllocs()
		for b.Loop() {
			cp := (&Checkpoint{capture: &roundCapture{scheme: s, alpha: v, rs: roundState{Version: roundVersion}}}).Encode()
			written = len(cp.RoundData)
		}
		b.ReportMetric(float64(written)/1e6, "MB-written")
	})
	b.Run("streamed", func(b *testing.B) {
		var n countWriter
		b.ReportAllocs()
		for b.Loop() {
			n = 0
			w := bufio.NewWriterSize(&n, 256<<10)
			cp := &Checkpoint{capture: &roundCapture{scheme: s, alpha: v, rs: roundState{Version: roundVersion}}}
			if err := cp.WriteRound(w); err != nil {
				b.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)/1e6, "MB-written")
	})
}

// countWriter counts the bytes written to it and keeps none.
type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// TestWriteRound: the round part streamed to a writer (as the server's
// checkpoint writer does) is what Encode builds in memory: it restores to
// the same state, its sealed tail is the same bytes, and a writer's error
// comes back.
func TestWriteRound(t *testing.T) {
	cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 3, Seed: 1}
	cps := roundCheckpoints(t, cfg, gridBlocks(testData(120, 6, 4), 2, 2))
	last := cps[len(cps)-1]
	c, err := Restore(seal.Plaintext{Len: 64}, last.Setup, last.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	mem := c.checkpoint().Encode().RoundData
	var streamed bytes.Buffer
	if err := c.checkpoint().WriteRound(&streamed); err != nil {
		t.Fatal(err)
	}
	a, err := decodeRound(mem)
	if err != nil {
		t.Fatal(err)
	}
	b, err := decodeRound(streamed.Bytes())
	if err != nil {
		t.Fatalf("streamed: %v", err)
	}
	if !bytes.Equal(a.Alpha, b.Alpha) || len(a.Alpha) == 0 || !slices.Equal(a.W, b.W) || a.Round != b.Round || len(a.History) != len(b.History) {
		t.Fatalf("streamed round %d (%d bytes of dual values) differs from the encoded round %d (%d bytes)", b.Round, len(b.Alpha), a.Round, len(a.Alpha))
	}
	if _, err := Restore(seal.Plaintext{Len: 64}, last.Setup, streamed.Bytes()); err != nil {
		t.Fatalf("streamed round does not restore: %v", err)
	}
	// The sealed vectors after the gob, byte for byte.
	if n := len(a.Alpha); !bytes.Equal(mem[len(mem)-n-1:], streamed.Bytes()[streamed.Len()-n-1:]) {
		t.Error("the sealed tails differ")
	}
	for _, cut := range []int{0, 10, streamed.Len() / 2, streamed.Len() - 1} {
		w := &failAfter{n: cut}
		if err := c.checkpoint().WriteRound(w); err == nil {
			t.Errorf("a writer failing after %d bytes: no error", cut)
		}
	}
}

// failAfter takes n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestRestoreLegacyChunks: a checkpoint written when every chunk sealed all
// of its slots restores cut to the layout (its chunks then add to those
// sealed since); a chunk shorter than its layout, or beyond it, is refused.
func TestRestoreLegacyChunks(t *testing.T) {
	cfg := Config{Lambda: 1e-2, Inner: 10, Rounds: 3, Seed: 1}
	cps := roundCheckpoints(t, cfg, gridBlocks(testData(120, 6, 4), 2, 2))
	c, err := Restore(seal.Plaintext{Len: 64}, cps[2].Setup, cps[2].RoundData)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.alpha) == 0 {
		t.Fatal("no sealed dual values restored")
	}
	legacy := seal.Vec{}
	for ci, ch := range c.alpha {
		v := ch.(*seal.PlainChunk).V
		if len(v) != c.sampleExtent(ci) || len(v) == 64 {
			t.Fatalf("chunk %d restored with %d values, its group's extent %d", ci, len(v), c.sampleExtent(ci))
		}
		full := make([]float64, 64)
		copy(full, v)
		legacy[ci] = &seal.PlainChunk{V: full}
	}
	if err := c.restoreLens(legacy, len(c.chunkGroup), c.sampleExtent); err != nil {
		t.Fatal(err)
	}
	for ci, ch := range legacy {
		if got, want := ch.(*seal.PlainChunk).V, c.alpha[ci].(*seal.PlainChunk).V; !slices.Equal(got, want) {
			t.Fatalf("legacy chunk %d cut to %v, want %v", ci, got, want)
		}
	}
	for name, v := range map[string]seal.Vec{
		"short":  {0: &seal.PlainChunk{V: []float64{1}}},
		"beyond": {len(c.chunkGroup): &seal.PlainChunk{V: make([]float64, 64)}},
	} {
		if err := c.restoreLens(v, len(c.chunkGroup), c.sampleExtent); err == nil {
			t.Errorf("%s chunk restored", name)
		}
	}
}

// TestRestoreVersion1: a setup part saved before the configuration's zero
// value meant the defaults restores as the federation it was: its
// booleans on where they were set, 0 shared directions as none.
func TestRestoreVersion1(t *testing.T) {
	d := testData(60, 6, 3)
	cfg := Config{Lambda: 1e-2, Inner: 5, Rounds: 6, Seed: 2, NoGroupSteps: true, SharedDirections: NoDirections}
	last := crashAt(t, newFed(t, gridBlocks(d, 2, 2), cfg), 3, PhaseGram)
	st, err := decodeSetup(last.Setup)
	if err != nil {
		t.Fatal(err)
	}
	c := st.Config
	old := setupStateV1{Version: 1, Scheme: st.Scheme, Fingerprint: st.Fingerprint, NumFeatures: st.NumFeatures, Clients: st.Clients, Norms: st.Norms,
		Config: configV1{Lambda: c.Lambda, Loss: c.Loss, Step: c.Step, Inner: c.Inner, IIC: c.IIC, Gamma: c.Gamma, Fraction: c.Fraction, Rounds: c.Rounds,
			Search: c.Search, Seed: c.Seed, Clients: c.Clients, Quorum: c.Quorum, Algo: c.Algo, Keys: c.Keys, KeyCommittee: c.KeyCommittee,
			KeyThreshold: c.KeyThreshold, GroupSteps: false, SolveOnce: true, SharedDirections: 0, FindBias: true}}
	setup := encodeGob(old)
	// The round part names its setup by digest: name the old one.
	rs, err := decodeRound(last.RoundData)
	if err != nil {
		t.Fatal(err)
	}
	rs.SetupDigest, rs.Version = sha256.Sum256(setup), 1 // the round part of then: the dual values in the gob
	r, err := Restore(seal.Plaintext{Len: 64}, setup, encodeGob(rs))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Config()
	if got.GroupSteps() || !got.SolveOnce() || got.SharedDirections.Count() != 0 || !got.FindBias() {
		t.Errorf("restored as group steps %v, solve once %v, %d shared directions, find bias %v; saved as false, true, 0, true",
			got.GroupSteps(), got.SolveOnce(), got.SharedDirections.Count(), got.FindBias())
	}
}
