package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// runBenchNet times rounds of a federation whose participants each have
// their own loopback websocket to a hyfed serve process. The server runs
// as a child (this binary) and the participants in this process, so that
// /proc/PID of the child is the server's alone: its CPU seconds (utime +
// stime, all threads) and resident memory, sampled when each round
// starts, are what the server costs, whatever the participants cost.
func runBenchNet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// The server's stderr goes there too (copied by os/exec unless it is a
	// file).
	stderr = &lockedWriter{w: stderr}
	fs := newFlags("bench-net", stderr)
	var df dataFlags
	df.register(fs, "fashion-mnist")
	spec := fs.String("partition", "quadrants:125", "partition (quadrants:125 is 500 participants)")
	rounds := fs.Int("rounds", 3, "rounds to time")
	plain := fs.Bool("plaintext", false, "seal nothing")
	sealPrimal := fs.Bool("seal-primal", false, "seal the primal contributions too")
	algo := fs.String("algo", "hyfdca", "algorithm: hyfdca, or a baseline through the same protocol (fedavg, hyfem-avg, hyfem-prox, fedhybrid)")
	step := fs.String("step", protocol.StepBlock, "hyfdca's step rule: block, hyfed or paper")
	stepA := fs.Float64("step-a", 0.1, "fedavg/hyfem: a of the local step a/(b+sqrt(t))")
	mu := fs.Float64("mu", 0.1, "hyfem-prox, fedhybrid: mu")
	ordered := fs.Bool("ordered", false, "register the participants one after another in block order (as hyfed sim does, so that the server numbers them as an in-process experiment would); default: up to 8 at once, as they come")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the server process over the timed rounds (see --profile) to FILE")
	memProfile := fs.String("memprofile", "", "write the server's heap profile at the end of the timed rounds to FILE, and at their start to FILE.base (go tool pprof -sample_index=alloc_space -base FILE.base FILE: what the rounds allocated)")
	partProfile := fs.String("participants-cpuprofile", "", "write a CPU profile (pprof) of the simulated participants (this process) over the timed rounds to FILE")
	window := fs.String("profile", "rounds", "what -cpuprofile and -memprofile cover: rounds (1 to --rounds) or registration")
	groupSteps := fs.Bool("group-steps", true, "block step: the server weighs each sample group's direction and a second one (--group-steps=false: one line search for all)")
	keys := fs.String("keys", protocol.KeysShared, "who can open a sum: shared (one key from the link) or threshold (a key committee switches every sum to its receiver's own key)")
	committee := fs.Int("key-committee", protocol.DefaultKeyCommittee, "threshold keys: the committee's size (its members take the switching in turns)")
	threshold := fs.Int("key-threshold", protocol.DefaultKeyThreshold, "threshold keys: t, the members that switch each sum")
	memLimit := fs.String("server-memory-limit", "", "the server's soft memory limit, as Go's GOMEMLIMIT (e.g. 900MiB): its garbage collector works harder near it; the participants' process keeps none")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *window != "rounds" && *window != "registration" {
		return fmt.Errorf("--profile %q: rounds or registration", *window)
	}
	if *rounds < 1 {
		return errors.New("--rounds: at least 1")
	}
	p, err := experiment.Prepare(experiment.Options{Data: df.data, Positive: df.positive, Holdout: df.holdout, Partition: *spec})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hyfed-bench-net")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var extra []string
	for _, pf := range []struct{ flag, path string }{{"--cpuprofile", *cpuProfile}, {"--memprofile", *memProfile}} {
		if pf.path != "" {
			abs, err := filepath.Abs(pf.path)
			if err != nil {
				return err
			}
			extra = append(extra, pf.flag, abs)
		}
	}
	var env []string
	if *memLimit != "" {
		env = append(env, "GOMEMLIMIT="+*memLimit)
	}
	cmd, base, token, err := startServeProcess(ctx, dir, "127.0.0.1:0", stderr, env, extra...)
	if err != nil {
		return err
	}
	pid := cmd.Process.Pid
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	sec, err := secret.New()
	if err != nil {
		return err
	}
	// The defaults (the default step, with group steps), as hyfed create.
	req := server.CreateRequest{Name: "bench", Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(10 * time.Minute), Config: protocol.Defaults()}
	req.Algo, req.Rounds, req.Clients, req.SealPrimal, req.NoGroupSteps = *algo, *rounds, len(p.Blocks), *sealPrimal, protocol.Off(!*groupSteps)
	req.Tol = protocol.NoTol // every round timed
	if *algo == protocol.AlgoHyFDCA {
		req.Step = *step
	}
	req.BiasFeature, req.BiasValue, _ = p.Data.ConstantFeature()
	switch *algo {
	case "fedavg", "hyfem-avg", "hyfem-prox":
		req.StepA = *stepA
		if *algo == "hyfem-prox" {
			req.Mu = *mu
		}
	case "fedhybrid":
		req.Mu, req.Loss = *mu, "logistic"
	}
	if *plain {
		req.Scheme = "plaintext"
	}
	// The server refuses an unknown mode or a committee it cannot use,
	// naming it.
	req.Keys, req.KeyCommittee, req.KeyThreshold = *keys, *committee, *threshold
	var resp server.CreateResponse
	if err := postJSON(ctx, base+"/api/federations", token, req, &resp); err != nil {
		return err
	}
	l, err := session.ParseLink(joinLink(base, &resp, sec, req))
	if err != nil {
		return err
	}
	blocks := make([]*partition.Block, len(p.Blocks))
	for i := range p.Blocks {
		blocks[i] = &p.Blocks[i]
	}
	fmt.Fprintf(stderr, "bench-net: %d participants (%s of %s), %s, %d rounds, each on its own websocket to %s\n",
		len(blocks), *spec, p.Data.Name, *algo, *rounds, base)
	clk := &roundClock{pid: pid, rounds: *rounds, stderr: stderr}
	if *partProfile != "" {
		if clk.partProf, err = os.Create(*partProfile); err != nil {
			return fmt.Errorf("--participants-cpuprofile: %w", err)
		}
		defer func() {
			clk.stopParticipantsProfile()
			clk.partProf.Close()
		}()
	}
	if *cpuProfile != "" || *memProfile != "" {
		clk.window = *window
	}
	clk.peaks = resetPeak(pid) == nil
	clk.start = clk.sample()
	if clk.window == "registration" {
		clk.signal(syscall.SIGUSR1)
	}
	// Lost connections are counted: a participant that reconnects makes a
	// round (or a threshold key's setup, which starts again) slower.
	var lost struct {
		sync.Mutex
		n     int
		first string
	}
	o := session.Options{Dial: session.WebSocket(256 << 20), RetryFor: time.Minute,
		OnWelcome: func(string, string) { clk.welcome(len(blocks)) },
		OnMessage: clk.see, Unordered: !*ordered,
		OnRetry: func(err error, _ time.Duration) {
			lost.Lock()
			defer lost.Unlock()
			if lost.n++; lost.n == 1 {
				lost.first = fmt.Sprintf(" (the first at %.1fs: %v)", time.Since(clk.start.At).Seconds(), err)
			}
		}}
	if _, err := session.RunMany(ctx, l, blocks, o); err != nil {
		return err
	}
	clk.finish()
	var st server.Status
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	end := clk.sample() // after the status: the server is idle
	// The server exits through its context (SIGINT), writing its profiles.
	cmd.Process.Signal(os.Interrupt)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
		exited = true
	case <-time.After(time.Minute):
		fmt.Fprintln(stderr, "bench-net: the server did not exit within a minute of SIGINT; killed (no profiles)")
	}
	if len(st.History) < 2 {
		return fmt.Errorf("only %d rounds recorded", len(st.History))
	}
	med := func(f func(r protocol.RoundMetrics) float64) float64 {
		var v []float64
		for _, m := range st.History[1:] {
			v = append(v, f(m.RoundMetrics()))
		}
		return median(v)
	}
	n := float64(len(blocks))
	fmt.Fprintf(stdout, "participants %d  scheme %s  sealed primal %v  rounds %d  algorithm %s\n", len(blocks), st.Config.Scheme, st.Config.SealPrimal, *rounds, *algo)
	how := fmt.Sprintf("%d at a time", session.DialAhead)
	if *ordered {
		how = "in block order"
	}
	fmt.Fprintf(stdout, "registration (%s) %.1fs, setup + round 0 + %d rounds %.1fs in all\n",
		how, clk.registered.At.Sub(clk.start.At).Seconds(), *rounds, clk.end.At.Sub(clk.registered.At).Seconds())
	fmt.Fprintf(stdout, "connections lost and made again by the participants: %d%s\n", lost.n, lost.first)
	secs := med(func(r protocol.RoundMetrics) float64 {
		s := 0.0
		for _, v := range r.Seconds {
			s += v
		}
		return s
	})
	fmt.Fprintf(stdout, "seconds per round (median of rounds 1-%d): %.3f\n", *rounds, secs)
	for _, ph := range protocol.Phases {
		fmt.Fprintf(stdout, "  %-10s %.3f\n", ph, med(func(r protocol.RoundMetrics) float64 { return r.Seconds[ph] }))
	}
	fmt.Fprintf(stdout, "bytes per round (median, estimated per message): to server %.2f MB, from server %.2f MB\n",
		med(func(r protocol.RoundMetrics) float64 { return float64(r.BytesIn) })/1e6, med(func(r protocol.RoundMetrics) float64 { return float64(r.BytesOut) })/1e6)
	fmt.Fprintf(stdout, "wire bytes, whole run incl. registration and setup: to server %.1f MB, from server %.1f MB\n",
		float64(st.WireIn)/1e6, float64(st.WireOut)/1e6)
	peak := max(clk.peak, end.HWM)
	fmt.Fprintf(stdout, "server peak memory (VmHWM): %d kB\n", peak>>10)

	// The server's own costs, round by round (rounds start when the first
	// participant hears of them; the last ends when the first hears done).
	fmt.Fprintf(stdout, "server process, round by round (wall from round start to the next; CPU = utime+stime of the server process):\n")
	fmt.Fprintf(stdout, "  %5s %8s %8s %6s %9s %9s %13s %13s\n", "round", "wall s", "CPU s", "cores", "RSS MB", "peak MB", "kB to/part", "kB from/part")
	byRound := map[int]protocol.RoundMetrics{}
	for _, h := range st.History {
		r := h.RoundMetrics()
		byRound[r.Round] = r
	}
	var cpus, walls, rss, in, out, parts []float64
	for r := 1; r <= *rounds; r++ {
		a, b := clk.marks[r], clk.next(r)
		if a == nil || b == nil {
			fmt.Fprintf(stdout, "  %5d (not observed)\n", r)
			continue
		}
		wall, cpu := b.At.Sub(a.At).Seconds(), b.CPU-a.CPU
		pk := "-"
		if clk.peaks {
			pk = fmt.Sprintf("%.0f", float64(b.HWM)/1e6)
		}
		m := byRound[r]
		cpus, walls, rss = append(cpus, cpu), append(walls, wall), append(rss, float64(b.RSS))
		parts = append(parts, b.Self-a.Self)
		in, out = append(in, float64(m.BytesIn)/n), append(out, float64(m.BytesOut)/n)
		fmt.Fprintf(stdout, "  %5d %8.3f %8.2f %6.2f %9.0f %9s %13.1f %13.1f\n", r, wall, cpu, cpu/wall,
			float64(b.RSS)/1e6, pk, float64(m.BytesIn)/n/1e3, float64(m.BytesOut)/n/1e3)
	}
	if len(cpus) > 0 {
		fmt.Fprintf(stdout, "server CPU seconds per round (median): %.2f (%.2f cores busy over %.3f s of wall)\n",
			median(cpus), median(cpus)/median(walls), median(walls))
		fmt.Fprintf(stdout, "participants' CPU seconds per round (median; all %d in this process, on the same cores): %.2f\n",
			len(blocks), median(parts))
	}
	fmt.Fprintf(stdout, "server CPU seconds: registration %.2f, setup + round 0 %.2f, all %.2f\n",
		clk.registered.CPU-clk.start.CPU, clk.setupCPU(), end.CPU)
	fmt.Fprintf(stdout, "server RSS: peak %.0f MB (VmHWM), at the end %.0f MB\n", float64(peak)/1e6, float64(end.RSS)/1e6)
	if len(in) > 0 {
		fmt.Fprintf(stdout, "bytes per participant per round (median, estimated per message): to server %.1f kB, from server %.1f kB\n",
			median(in)/1e3, median(out)/1e3)
	}
	what := fmt.Sprintf("rounds 1-%d", *rounds)
	if *window == "registration" {
		what = "the registrations"
	}
	if *cpuProfile != "" {
		fmt.Fprintf(stdout, "CPU profile of the server over %s: %s\n", what, *cpuProfile)
	}
	if *memProfile != "" {
		fmt.Fprintf(stdout, "heap profiles of the server at the start and end of %s: %s.base, %s\n", what, *memProfile, *memProfile)
	}
	return nil
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// roundClock samples the server process when registration ends, when each
// round starts (the first message of the round any participant sees) and
// when the federation ends (the first done).
type roundClock struct {
	pid    int
	rounds int
	stderr io.Writer
	window string // profiled: "rounds" or "registration" ("": no profile)
	peaks  bool   // VmHWM can be reset: the peak of each round

	mu         sync.Mutex
	welcomed   int
	start      procSample
	registered procSample
	marks      map[int]*procSample // start of round r
	end        procSample
	ended      bool
	seen       int
	peak       int64 // the largest VmHWM read (the lifetime peak: it is reset after each read)
	// partProf: the participants' CPU profile over the timed rounds;
	// profiling while it runs.
	partProf  *os.File
	profiling bool
}

// stopParticipantsProfile ends the participants' CPU profile if it runs.
func (c *roundClock) stopParticipantsProfile() {
	if c.profiling {
		pprof.StopCPUProfile()
		c.profiling = false
	}
}

func (c *roundClock) sample() procSample {
	s, err := sampleProc(c.pid)
	if err != nil {
		fmt.Fprintf(c.stderr, "bench-net: /proc of the server: %v\n", err)
	}
	if me, err := sampleProc(os.Getpid()); err == nil {
		s.Self = me.CPU
	}
	c.peak = max(c.peak, s.HWM)
	if c.peaks {
		resetPeak(c.pid)
	}
	return s
}

// signal marks the profile window of the server (hyfed serve --cpuprofile).
func (c *roundClock) signal(sig syscall.Signal) {
	if err := syscall.Kill(c.pid, sig); err != nil {
		fmt.Fprintf(c.stderr, "bench-net: signal to the server: %v\n", err)
	}
}

func (c *roundClock) welcome(total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.welcomed++; c.welcomed == total {
		c.registered = c.sample()
		if c.window == "registration" {
			c.signal(syscall.SIGUSR2)
		}
	}
}

func (c *roundClock) see(m *protocol.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Kind == protocol.KindDone {
		if !c.ended {
			c.end, c.ended = c.sample(), true
			if c.window == "rounds" {
				c.signal(syscall.SIGUSR2)
			}
			c.stopParticipantsProfile()
		}
		return
	}
	if m.Round <= c.seen || c.ended {
		return
	}
	c.seen = m.Round
	s := c.sample()
	if c.marks == nil {
		c.marks = map[int]*procSample{}
	}
	c.marks[m.Round] = &s
	if m.Round == 1 && c.window == "rounds" {
		c.signal(syscall.SIGUSR1)
	}
	if m.Round == 1 && c.partProf != nil && !c.profiling {
		if err := pprof.StartCPUProfile(c.partProf); err != nil {
			fmt.Fprintf(c.stderr, "bench-net: participants' profile: %v\n", err)
		} else {
			c.profiling = true
		}
	}
}

// finish closes the last round if no done was seen.
func (c *roundClock) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.end, c.ended = c.sample(), true
	}
}

// next is the sample that ends round r.
func (c *roundClock) next(r int) *procSample {
	if s := c.marks[r+1]; s != nil {
		return s
	}
	if r == c.rounds && c.ended {
		return &c.end
	}
	return nil
}

// setupCPU is the server's CPU from the registrations to round 1.
func (c *roundClock) setupCPU() float64 {
	if s := c.marks[1]; s != nil {
		return s.CPU - c.registered.CPU
	}
	return math.NaN()
}
