package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTopGolden: a V8 profile's self times by function, against the
// golden listing (the inverse NTT twice in the tree counts once; a
// sample's time is the delta to the next one, so the last sample adds
// none).
func TestTopGolden(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"top", "-profile", "testdata/small.cpuprofile"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/small.top")
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Fatalf("top:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestReadV8ProfileErrors: what is not a V8 CPU profile is refused with a
// message that says what is wrong.
func TestReadV8ProfileErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not json", `pprof`, "not a V8 CPU profile"},
		{"no nodes", `{"nodes":[],"samples":[],"timeDeltas":[]}`, "no nodes"},
		{"deltas", `{"nodes":[{"id":1,"callFrame":{"functionName":"f"}}],"samples":[1,1],"timeDeltas":[0]}`, "2 samples but 1 time deltas"},
		{"unknown node", `{"nodes":[{"id":1,"callFrame":{"functionName":"f"}}],"samples":[1,7],"timeDeltas":[0,5]}`, "sample 1 names node 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readV8Profile(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func FuzzReadV8Profile(f *testing.F) {
	b, err := os.ReadFile("testdata/small.cpuprofile")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"nodes":[{"id":1,"callFrame":{"url":"x/"}}],"samples":[1],"timeDeltas":[-4]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := readV8Profile(bytes.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		s.writeTop(&out, 3)
		if s.Total < 0 {
			t.Fatalf("negative total %v", s.Total)
		}
	})
}

// TestRecordAndRun: a recorded trace replays to the replies the recorded
// participant computed (run checks the hash), and the listing names the
// cold replay and the mean after it; a client outside the partition is
// refused.
func TestRecordAndRun(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.gob")
	var out bytes.Buffer
	ctx := context.Background()
	if err := run(ctx, []string{"record", "-out", trace, "-data", "synthetic:300,12", "-partition", "grid:2,2", "-rounds", "3", "-client", "1"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"run", "-trace", trace, "-n", "2"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"client 1 of synthetic:300,12 grid:2,2, 3 rounds", "replay 0: 3 rounds", "replay 1: 3 rounds", "after the first:"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	err := run(ctx, []string{"record", "-out", trace, "-data", "synthetic:300,12", "-partition", "grid:2,2", "-client", "4"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "client 4: the partition has 4 clients") {
		t.Fatalf("client 4 of 4: error %v", err)
	}
}
