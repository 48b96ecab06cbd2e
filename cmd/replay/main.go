// Command replay times one participant's own work on a recorded trace,
// natively or compiled to WebAssembly and run by Node.js, and summarises
// V8 CPU profiles: the wasm-vs-native ratio and where each side spends its
// time, without a browser (`make wasm-profile` runs the lot; the browsers'
// own ratio is e2e's BenchmarkWasmVsNativeRound, on the same trace).
//
//	replay record -out trace.gob [-data mnist -partition quadrants:1 -rounds 10 -client 0]
//	replay run -trace trace.gob [-n 5] [-cpuprofile native.prof]
//	replay top -profile wasm.cpuprofile [-n 25]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/wasmclient/tab"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  replay record -out FILE [-data NAME] [-partition SPEC] [-rounds R] [-client K]
  replay run -trace FILE [-n N] [-cpuprofile FILE]
  replay top -profile FILE.cpuprofile [-n N]`

func run(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("replay "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "record":
		out := fs.String("out", "trace.gob", "the trace file to write")
		data := fs.String("data", "mnist", "data set (as hyfed experiment's --data)")
		spec := fs.String("partition", "quadrants:1", "partition")
		rounds := fs.Int("rounds", 10, "rounds to record")
		client := fs.Int("client", 0, "the participant whose messages are recorded")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return record(stdout, *out, *data, *spec, *rounds, *client)
	case "run":
		in := fs.String("trace", "trace.gob", "the trace file (replay record)")
		n := fs.Int("n", 5, "replays")
		prof := fs.String("cpuprofile", "", "write a pprof CPU profile (native builds)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return replay(stdout, *in, *n, *prof)
	case "top":
		in := fs.String("profile", "", "a V8 CPU profile (node --cpu-prof)")
		n := fs.Int("n", 25, "functions to list")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		p, err := readV8Profile(f)
		if err != nil {
			return fmt.Errorf("%s: %w", *in, err)
		}
		p.writeTop(stdout, *n)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// record runs an in-process federation with the default settings, as
// e2e's BenchmarkWasmVsNativeRound does, and writes client k's trace.
func record(stdout io.Writer, out, data, spec string, rounds, k int) error {
	d, err := dataset.Load(data, dataset.Options{})
	if err != nil {
		return err
	}
	s, err := partition.Parse(spec)
	if err != nil {
		return err
	}
	blocks, err := s.Split(d)
	if err != nil {
		return err
	}
	if k < 0 || k >= len(blocks) {
		return fmt.Errorf("client %d: the partition has %d clients", k, len(blocks))
	}
	cfg := protocol.Defaults()
	cfg.Inner = protocol.InnerFor(cfg.IIC, d.NumTrain(), len(blocks))
	cfg.Rounds, cfg.Clients, cfg.Seed = rounds, len(blocks), 1
	if err := cfg.Validate(); err != nil {
		return err
	}
	tr, err := tab.Record(blocks, k, secret.FromSeed(1), cfg, "bgv")
	if err != nil {
		return err
	}
	enc, err := tr.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, enc, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: client %d of %s %s, %d rounds, %d frames, %.1f MB\n", out, k, data, spec, rounds, len(tr.Frames), float64(len(enc))/1e6)
	return nil
}

// replay replays the trace n times and prints each replay's time per
// round: the first ("cold": a WebAssembly engine compiles the participant
// as it first runs it) apart from the mean of the others (a session's
// rounds after its first).
func replay(stdout io.Writer, in string, n int, prof string) error {
	if n < 1 {
		return fmt.Errorf("-n %d: want at least 1", n)
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	tr, err := tab.DecodeTrace(b)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	warm := 0.0
	for i := range n {
		r, err := tab.Replay(tr)
		if err != nil {
			return err
		}
		if r.PlainHash != tr.PlainHash {
			return fmt.Errorf("replay %d computed other replies than the recorded run (%s, recorded %s)", i, r.PlainHash, tr.PlainHash)
		}
		ms := 1e3 * r.Seconds / float64(r.Rounds)
		fmt.Fprintf(stdout, "replay %d: %d rounds, %.2f ms/round (setup %.0f ms)\n", i, r.Rounds, ms, 1e3*r.SetupSeconds)
		if i > 0 {
			warm += ms
		}
	}
	if n > 1 {
		fmt.Fprintf(stdout, "after the first: %.2f ms/round\n", warm/float64(n-1))
	}
	return nil
}
