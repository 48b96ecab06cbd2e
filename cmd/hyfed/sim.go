package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/session"
)

func parseRange(s string, n int) (int, int, error) {
	if s == "" {
		return 0, n - 1, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	i, err1 := strconv.Atoi(a)
	j, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || i < 0 || j < i || j >= n {
		return 0, 0, fmt.Errorf("--clients %q: want I-J with 0 <= I <= J < %d", s, n)
	}
	return i, j, nil
}

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	link, args := linkFirst(args)
	fs := newFlags("sim", stderr)
	var df dataFlags
	df.register(fs, "fashion-mnist")
	spec := fs.String("partition", "quadrants:2", "partition: quadrants:K, grid:K,Q, horizontal:K or vertical:Q")
	clients := fs.String("clients", "", "run only blocks I-J (0-based, inclusive) of the partition")
	pstar := fs.Float64("pstar", 0, "centralized optimum P* for the relative loss (default: computed)")
	lossName := fs.String("loss", "hinge", "loss of P* when computed")
	retry := fs.Duration("retry-for", 2*time.Minute, "each participant keeps trying to reach the server this long")
	quiet := fs.Bool("quiet", false, "no progress lines")
	modelPath := fs.String("model", "", modelUsage+" (fetched from the server when training ends)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if link == "" {
		return errors.New("usage: hyfed sim '<join link>' --data NAME|FILE --partition SPEC")
	}
	l, err := session.ParseLink(link)
	if err != nil {
		return err
	}
	p, err := experiment.Prepare(experiment.Options{Data: df.data, Positive: df.positive, Holdout: df.holdout, Partition: *spec})
	if err != nil {
		return err
	}
	lo, hi, err := parseRange(*clients, len(p.Blocks))
	if err != nil {
		return err
	}
	var st server.Status
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	s := &experiment.Summary{Data: p.Data.Name, Partition: *spec, Clients: hi - lo + 1, PStar: *pstar}
	if s.PStar == 0 {
		lf, err := loss.Parse(*lossName)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "central: solving for P* on %d samples x %d features\n", p.Data.NumTrain(), p.Data.M())
		r, err := central.Solve(ctx, p.Data, central.Config{Lambda: st.Config.Lambda, Loss: lf, Tol: 1e-9, Seed: 1})
		if err != nil {
			return err
		}
		s.PStar, s.CentralSecs = r.Primal, r.Seconds
	}
	blocks := make([]*partition.Block, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		blocks = append(blocks, &p.Blocks[i])
	}
	if !*quiet {
		fmt.Fprintf(stderr, "sim: %d participants (blocks %d-%d of %s) joining %s\n", len(blocks), lo, hi, *spec, l.Base)
	}
	o := session.Options{Dial: session.WebSocket(64 << 20), RetryFor: *retry,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	start := time.Now()
	if !*quiet {
		var mu sync.Mutex
		last := time.Now()
		o.OnMessage = func(m *protocol.Message) {
			if m.Kind != protocol.KindWeights {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if time.Since(last) > 2*time.Second {
				last = time.Now()
				fmt.Fprintf(stderr, "round %d/%d  %.1fs\n", m.Round, st.Config.Rounds, time.Since(start).Seconds())
			}
		}
	}
	if _, err := session.RunMany(ctx, l, blocks, o); err != nil {
		return err
	}
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	if len(st.History) == 0 {
		return errors.New("the federation recorded no round")
	}
	s.Step, s.Scheme, s.Loss, s.Lambda, s.Fraction, s.Inner, s.Rounds = st.Config.Step, st.Config.Scheme, st.Config.Loss, st.Config.Lambda, st.Config.Fraction, st.Config.Inner, st.Config.Rounds
	if st.Config.Keys == protocol.KeysThreshold {
		s.Keys = st.Config.Keys
	}
	var hist []protocol.RoundMetrics
	elapsed := 0.0
	for _, v := range st.History {
		r := v.RoundMetrics()
		for _, sec := range r.Seconds {
			elapsed += sec
		}
		s.AddRound(hist, r, elapsed)
		hist = append(hist, r)
	}
	s.Finish(hist[len(hist)-1], time.Since(start).Seconds())
	if *modelPath != "" {
		m, info, err := fetchModel(ctx, l, l.Invite)
		if err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		// What the participants' side knows and the server does not.
		info.Data, info.Positive, info.Partition = p.Data.Name, df.positive, *spec
		info.BiasFeature, info.BiasValue = biasOf(p.Data)
		if info.Metrics.PStar == nil && info.Metrics.Primal != nil {
			info.Metrics.PStar = model.Num(s.PStar)
			info.Metrics.RelativeLoss = model.Num((*info.Metrics.Primal - s.PStar) / s.PStar)
		}
		if err := writeModel(*modelPath, info.Loss, m.W, info, stderr); err != nil {
			return err
		}
	}
	if err := printJSON(stdout, s); err != nil {
		return err
	}
	return learned(ctx, l, stderr)
}
