package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// runBenchNet times rounds of a federation whose participants each have
// their own loopback websocket to a hyfed serve process (this binary, run
// as a child, so that its peak memory is the server's alone).
func runBenchNet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench-net", stderr)
	var df dataFlags
	df.register(fs, "fashion-mnist")
	spec := fs.String("partition", "quadrants:125", "partition (quadrants:125 is 500 participants)")
	rounds := fs.Int("rounds", 3, "rounds to time")
	plain := fs.Bool("plaintext", false, "seal nothing")
	sealPrimal := fs.Bool("seal-primal", false, "seal the primal contributions too")
	if err := parse(fs, args); err != nil {
		return err
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
	cmd, base, token, err := startServeProcess(ctx, dir, "127.0.0.1:0", stderr)
	if err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sec, err := secret.New()
	if err != nil {
		return err
	}
	req := server.CreateRequest{Name: "bench", Lambda: 1e-3, Rounds: *rounds, IIC: 0.2,
		MinParticipants: len(p.Blocks), Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(10 * time.Minute),
		SealPrimal: *sealPrimal}
	if *plain {
		req.Scheme = "plaintext"
	}
	var resp server.CreateResponse
	if err := postJSON(ctx, base+"/api/federations", token, req, &resp); err != nil {
		return err
	}
	l, err := session.ParseLink(joinLink(base, &resp, sec, *plain))
	if err != nil {
		return err
	}
	blocks := make([]*partition.Block, len(p.Blocks))
	for i := range p.Blocks {
		blocks[i] = &p.Blocks[i]
	}
	fmt.Fprintf(stderr, "bench-net: %d participants (%s of %s), %d rounds, each on its own websocket to %s\n",
		len(blocks), *spec, p.Data.Name, *rounds, base)
	t0 := time.Now()
	var registered time.Time
	n := 0
	o := session.Options{Dial: session.WebSocket(256 << 20), RetryFor: time.Minute,
		OnWelcome: func(string, string) {
			if n++; n == len(blocks) {
				registered = time.Now()
			}
		}}
	if _, err := session.RunMany(ctx, l, blocks, o); err != nil {
		return err
	}
	total := time.Since(t0)
	var st server.Status
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	peak := vmHWM(cmd.Process.Pid)
	if len(st.History) < 2 {
		return fmt.Errorf("only %d rounds recorded", len(st.History))
	}
	med := func(f func(r protocol.RoundMetrics) float64) float64 {
		var v []float64
		for _, m := range st.History[1:] {
			v = append(v, f(m.RoundMetrics()))
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	fmt.Fprintf(stdout, "participants %d  scheme %s  sealed primal %v  rounds %d\n", len(blocks), st.Config.Scheme, st.Config.SealPrimal, *rounds)
	fmt.Fprintf(stdout, "registration (sequential) %.1fs, setup + round 0 + %d rounds %.1fs in all\n",
		registered.Sub(t0).Seconds(), *rounds, (total - registered.Sub(t0)).Seconds())
	fmt.Fprintf(stdout, "seconds per round (median of rounds 1-%d): %.3f\n", *rounds, med(func(r protocol.RoundMetrics) float64 {
		s := 0.0
		for _, v := range r.Seconds {
			s += v
		}
		return s
	}))
	for _, ph := range protocol.Phases {
		fmt.Fprintf(stdout, "  %-10s %.3f\n", ph, med(func(r protocol.RoundMetrics) float64 { return r.Seconds[ph] }))
	}
	fmt.Fprintf(stdout, "bytes per round (median, estimated per message): to server %.2f MB, from server %.2f MB\n",
		med(func(r protocol.RoundMetrics) float64 { return float64(r.BytesIn) })/1e6, med(func(r protocol.RoundMetrics) float64 { return float64(r.BytesOut) })/1e6)
	fmt.Fprintf(stdout, "wire bytes, whole run incl. registration and setup: to server %.1f MB, from server %.1f MB\n",
		float64(st.WireIn)/1e6, float64(st.WireOut)/1e6)
	fmt.Fprintf(stdout, "server peak memory (VmHWM): %s\n", peak)
	return nil
}

// vmHWM reads a process's peak resident memory from /proc.
func vmHWM(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// startServeProcess runs hyfed serve as a child (with extra flags) and
// returns it, its base URL and its create token.
func startServeProcess(ctx context.Context, dir, addr string, stderr io.Writer, extra ...string) (*exec.Cmd, string, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", "", err
	}
	token := newCreateToken()
	cmd := exec.CommandContext(ctx, exe, append([]string{"serve", "--addr", addr, "--data-dir", dir}, extra...)...)
	// HYFED_MAIN: the test binary acts as hyfed with it. The token goes
	// by the environment, not the command line others can read.
	cmd.Env = append(os.Environ(), "HYFED_MAIN=1", "HYFED_CREATE_TOKEN="+token)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening: ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, "", "", fmt.Errorf("hyfed serve did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, out) // the create line and anything after it
	return cmd, base, token, nil
}
