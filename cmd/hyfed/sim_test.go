package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestSimMatchesExperiment is the network issue's done-criterion, small:
// hyfed serve (a process) + hyfed create + hyfed sim on Fashion-MNIST,
// quadrants:2, encrypted, print the same final objective as hyfed
// experiment with the same settings.
func TestSimMatchesExperiment(t *testing.T) {
	if testing.Short() {
		t.Skip("Fashion-MNIST twice")
	}
	ctx := context.Background()
	// --insecure-demo: the test replays a seeded federation.
	_, base, token := startServe(t, t.TempDir(), "127.0.0.1:0", "--insecure-demo")
	runOK := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, args, &out, &errb); code != 0 {
			t.Fatalf("hyfed %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	// No --bias-feature: the federation finds Fashion-MNIST's bias in the
	// blocks as hyfed experiment finds it in the data.
	created := runOK("create", "--server", base, "--create-token", token, "--seed", "1", "--min-participants", "8", "--rounds", "8", "--lambda", "1e-3")
	var link string
	for _, l := range strings.Split(created, "\n") {
		if v, ok := strings.CutPrefix(l, "join: "); ok {
			link = v
		}
	}
	if link == "" || !strings.Contains(created, "admin: ") {
		t.Fatalf("create printed %q", created)
	}
	const pstar = "0.19356284721819"
	var sim, exp map[string]any
	if err := json.Unmarshal([]byte(runOK("sim", link, "--data", "fashion-mnist", "--partition", "quadrants:2", "--pstar", pstar, "--quiet")), &sim); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(runOK("experiment", "--data", "fashion-mnist", "--partition", "quadrants:2", "--rounds", "8",
		"--lambda", "1e-3", "--seed", "1", "--pstar", pstar, "--quiet")), &exp); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"primal", "dual", "accuracy", "relative_loss"} {
		if sim[k] != exp[k] {
			t.Errorf("%s: sim %v, experiment %v", k, sim[k], exp[k])
		}
	}
	if sim["scheme"] != "bgv" || sim["clients"] != float64(8) {
		t.Fatalf("sim summary %v", sim)
	}
}
