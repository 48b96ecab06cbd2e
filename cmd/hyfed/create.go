package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/secret"
)

// fedFlags are the federation settings, named as in hyfed experiment.
type fedFlags struct {
	req     server.CreateRequest
	algo    baselineFlags
	timeout time.Duration
	plain   bool
	schema  string
}

func (f *fedFlags) register(fs *flag.FlagSet) {
	r := &f.req
	fs.StringVar(&r.Name, "name", "", "a name shown on the dashboard")
	f.algo.register(fs)
	configFlags(fs, &r.Config)
	fs.IntVar(&r.BiasFeature, "bias-feature", 0, "a feature (0-based) every sample holds with the value --bias-value: the data's bias (the block step enters its part of the Grams exactly)")
	fs.Float64Var(&r.BiasValue, "bias-value", 0, "the bias feature's value (0: the data has none)")
	fs.IntVar(&r.Clients, "min-participants", 2, "registrations that start the federation")
	fs.BoolVar(&r.ManualStart, "manual-start", false, "wait for the organizer's start (POST .../start) instead of --min-participants")
	fs.IntVar(&r.MaxParticipants, "max-participants", 0, "the most participants the join link may register (0: --min-participants, or with --manual-start the server's limit)")
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
