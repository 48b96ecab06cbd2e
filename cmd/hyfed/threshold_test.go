package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCreateThreshold: hyfed create --keys threshold against hyfed serve
// prints a join link whose secret says "threshold:"; hyfed sim's native
// participants run the federation over websockets to the primal and dual
// of hyfed experiment --keys threshold with the same seed, bit for bit.
// --plaintext with --keys threshold is refused, saying why.
func TestCreateThreshold(t *testing.T) {
	ctx := context.Background()
	_, base, token := startServe(t, t.TempDir(), "127.0.0.1:0", "--insecure-demo")
	create := func(extra ...string) (string, string, int) {
		var out, errb bytes.Buffer
		args := append([]string{"create", "--server", base, "--create-token", token, "--seed", "3", "--min-participants", "4",
			"--rounds", "4", "--lambda", "1e-2", "--keys", "threshold",
			// hyfed experiment finds the data's bias (its constant last
			// feature); the server learns it from its creator.
			"--bias-feature", "7", "--bias-value", "1"}, extra...)
		code := run(ctx, args, &out, &errb)
		for _, l := range strings.Split(out.String(), "\n") {
			if v, ok := strings.CutPrefix(l, "join: "); ok {
				return v, errb.String(), code
			}
		}
		return "", errb.String(), code
	}
	if _, errOut, code := create("--plaintext"); code == 0 || !strings.Contains(errOut, "no key to split") {
		t.Fatalf("create --keys threshold --plaintext: exit %d %q", code, errOut)
	}
	link, errOut, code := create()
	if code != 0 || !strings.Contains(link, "&secret=threshold:") {
		t.Fatalf("create --keys threshold: exit %d, link %q: %s", code, link, errOut)
	}
	const data = "synthetic:400,8,1,0.05,2"
	s, _ := runJSON(t, "sim", link, "--data", data, "--partition", "grid:2,2", "--quiet", "--pstar", "1")
	e, _ := runJSON(t, "experiment", "--data", data, "--partition", "grid:2,2", "--seed", "3", "--rounds", "4", "--lambda", "1e-2",
		"--keys", "threshold", "--quiet", "--pstar", "1")
	if s["keys"] != "threshold" || s["scheme"] != "bgv-threshold" || num(t, s, "rounds") != 4 {
		t.Fatalf("sim summary: keys %v, scheme %v, rounds %v", s["keys"], s["scheme"], s["rounds"])
	}
	for _, k := range []string{"primal", "dual", "accuracy"} {
		if num(t, s, k) != num(t, e, k) {
			t.Fatalf("%s: %v over the server, %v in hyfed experiment --keys threshold", k, s[k], e[k])
		}
	}
	t.Logf("threshold keys over hyfed serve: P %v D %v, as hyfed experiment --keys threshold", s["primal"], s["dual"])
}
