package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/seal"
)

// runBench measures the sealing scheme per value, then times whole rounds,
// split by phase, on an in-process federation, encrypted and in plaintext
// in the same run so that the ratio is fair.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	var df dataFlags
	df.register(fs, "fashion-mnist")
	var o experiment.Options
	fs.StringVar(&o.Partition, "partition", "quadrants:2", "partition")
	configFlags(fs, &o.Config)
	// Fewer rounds than a run's default: only their time is measured.
	fs.Lookup("rounds").DefValue, o.Rounds = "5", 5
	fs.Lookup("tol").DefValue, o.Tol = "0", protocol.NoTol // every round timed
	sealOnly := fs.Bool("seal-only", false, "only the per-value costs of the sealing scheme")
	reps := fs.Int("reps", 3, "alternating encrypted/plaintext runs; medians are printed")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := benchSeal(stdout); err != nil {
		return err
	}
	if *sealOnly {
		return nil
	}
	o.Data, o.Positive, o.Holdout = df.data, df.positive, df.holdout
	o.PStar = 1 // not needed: only time is measured
	o.Seed = 1
	t0 := time.Now()
	p, err := experiment.Prepare(o)
	if err != nil {
		return err
	}
	load := time.Since(t0)
	type result struct {
		perPhase map[string]float64
		total    float64
		in, out  int
	}
	// Encrypted and plaintext runs alternate, reps times each, and each
	// figure is the median over the repetitions: this machine's speed
	// drifts, and a ratio taken within one interleaved run is fair. With
	// --keys threshold the runs to compare with are the shared key's
	// (plaintext seals nothing, so it has no key to split).
	keys := o.Keys
	encName, baseName := "bgv ms", "plain ms"
	if keys == protocol.KeysThreshold {
		encName, baseName = "thresh ms", "shared ms"
	}
	runs := map[bool][]result{}
	var s *experiment.Summary
	for rep := 0; rep < *reps; rep++ {
		for _, plain := range []bool{false, true} {
			o.Plaintext, o.Keys = plain, keys
			if plain && keys == protocol.KeysThreshold {
				o.Plaintext, o.Keys = false, protocol.KeysShared
			}
			runtime.GC()
			var rounds []protocol.RoundMetrics
			if s, err = experiment.RunPreparedWithHistory(ctx, p, o, &rounds); err != nil {
				return err
			}
			r := result{perPhase: map[string]float64{}}
			n := 0
			for _, m := range rounds {
				if m.Round == 0 {
					continue
				}
				n++
				for ph, v := range m.Seconds {
					r.perPhase[ph] += v
					r.total += v
				}
				r.in += m.BytesIn
				r.out += m.BytesOut
			}
			if n == 0 {
				return fmt.Errorf("no rounds ran")
			}
			for ph := range r.perPhase {
				r.perPhase[ph] /= float64(n)
			}
			r.total /= float64(n)
			r.in /= n
			r.out /= n
			runs[plain] = append(runs[plain], r)
		}
	}
	median := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	phase := func(ph string) func(result) float64 { return func(r result) float64 { return r.perPhase[ph] } }
	fmt.Fprintf(stdout, "\nround: data %s (%d x %d), partition %s, %d clients, step %s, H=%d, %d rounds, load+partition %.2fs\n",
		p.Data.Name, p.Data.N(), p.Data.M(), o.Partition, s.Clients, s.Step, s.Inner, o.Rounds, load.Seconds())
	enc, pl := runs[false], runs[true]
	fmt.Fprintf(stdout, "medians of %d alternating runs each\n", *reps)
	fmt.Fprintf(stdout, "%-10s %12s %12s %8s\n", "phase", encName, baseName, "ratio")
	for _, ph := range protocol.Phases {
		e, q := median(enc, phase(ph)), median(pl, phase(ph))
		fmt.Fprintf(stdout, "%-10s %12.2f %12.2f %8s\n", ph, 1000*e, 1000*q, ratio(e, q))
	}
	total := func(r result) float64 { return r.total }
	e, q := median(enc, total), median(pl, total)
	fmt.Fprintf(stdout, "%-10s %12.2f %12.2f %8s\n", "total", 1000*e, 1000*q, ratio(e, q))
	in := func(r result) float64 { return float64(r.in) }
	out := func(r result) float64 { return float64(r.out) }
	fmt.Fprintf(stdout, "bytes/round to server:   %12.0f %12.0f %8s\n", median(enc, in), median(pl, in), ratio(median(enc, in), median(pl, in)))
	fmt.Fprintf(stdout, "bytes/round from server: %12.0f %12.0f %8s\n", median(enc, out), median(pl, out), ratio(median(enc, out), median(pl, out)))
	return nil
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// benchSeal prints the BGV scheme's cost per value, measured on full
// chunks: encrypt (encode + secret-key encryption), decrypt (decryption +
// decode), add, and bytes on the wire for a fresh and a summed chunk.
func benchSeal(w io.Writer) error {
	s, err := seal.NewBGV()
	if err != nil {
		return err
	}
	k, err := s.NewKey([32]byte{1})
	if err != nil {
		return err
	}
	n := s.ChunkLen()
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = seal.Quantize(float64(i%97) / 7)
	}
	var c seal.Chunk
	encR := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if c, err = k.Seal(vals); err != nil {
				b.Fatal(err)
			}
		}
	})
	decR := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Open(c); err != nil {
				b.Fatal(err)
			}
		}
	})
	acc := s.Clone(c)
	addR := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if err := s.Add(acc, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	if err != nil {
		return err
	}
	per := func(r testing.BenchmarkResult) float64 { return float64(r.NsPerOp()) / 1000 / float64(n) }
	fmt.Fprintf(w, "sealing: %s, %d values per ciphertext\n", s.Name(), n)
	fmt.Fprintf(w, "  encrypt  %8.3f us/value\n", per(encR))
	fmt.Fprintf(w, "  decrypt  %8.3f us/value\n", per(decR))
	fmt.Fprintf(w, "  add      %8.4f us/value\n", per(addR))
	four, err := seal.Sum(s, seal.Vec{0: c}, seal.Vec{0: c}, seal.Vec{0: c}, seal.Vec{0: c})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  wire     %8.1f bytes/value fresh (c0 + seed), %.1f a sum of 4 (c0 + seeds, up to %d), %.1f of more (c0, c1)\n",
		float64(s.WireSize(c))/float64(n), float64(s.WireSize(four[0]))/float64(n), seal.MaxSumSeeds, float64(s.WireSize(acc))/float64(n))
	fmt.Fprintf(w, "  Paillier as the HyFDCA paper priced it: 18900 us encrypt, 18900 us decrypt, 54 us add, 512 bytes per value\n")
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	return v[len(v)/2]
}
