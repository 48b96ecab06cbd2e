package experiment

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/protocol"
)

func TestExperimentWritesMetricsAndConverges(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "m.csv")
	o := Options{Data: "synthetic:600,16,1,0.05,3", Holdout: 0.2, Partition: "grid:2,2", Seed: 4, Metrics: csvPath, Config: protocol.Config{Lambda: 1e-2, Rounds: 800, IIC: 0.2, Tol: 1e-3}}
	s, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// Training stops once the model is certified within 1e-3 of P*.
	if s.Clients != 4 || s.Inner < 1 || !s.Converged || s.Rounds >= 800 || s.Tol != 1e-3 || !(s.Bound <= 1e-3) {
		t.Fatalf("summary %+v", s)
	}
	if !(float64(s.BestRelativeLoss) <= float64(s.Bound)) || s.BestRelativeLoss < -1e-6 {
		t.Fatalf("relative loss %.3g of the model, certified %.3g", s.BestRelativeLoss, s.Bound)
	}
	if s.DualDecreases != 0 {
		t.Fatalf("dual fell in %d rounds", s.DualDecreases)
	}
	if s.RoundsTo["0.01"] < 1 || s.RoundsTo["0.01"] > s.Rounds {
		t.Fatalf("rounds to 1e-2: %d", s.RoundsTo["0.01"])
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+s.Rounds+1 {
		t.Fatalf("%d CSV rows, want header + %d", len(rows), s.Rounds+1)
	}
	if rows[0][0] != "round" || rows[0][4] != "relative_loss" {
		t.Fatalf("header %v", rows[0])
	}
	last := rows[len(rows)-1]
	if rel, _ := strconv.ParseFloat(last[4], 64); rel != s.RelativeLoss {
		t.Fatalf("CSV relative loss %v, summary %v", rel, s.RelativeLoss)
	}
	if in, _ := strconv.Atoi(last[len(last)-2]); in <= 0 {
		t.Fatalf("no bytes counted: %v", last)
	}
}

func TestInnerFor(t *testing.T) {
	for _, tc := range []struct {
		iic     float64
		n, k, h int
	}{{0.2, 60000, 8, 1500}, {0.2, 10, 8, 1}, {1e-9, 100, 4, 1}, {0.5, 101, 2, 26}} {
		if got := protocol.InnerFor(tc.iic, tc.n, tc.k); got != tc.h {
			t.Errorf("InnerFor(%v,%d,%d) = %d, want %d", tc.iic, tc.n, tc.k, got, tc.h)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Data: "synthetic:100,5", Partition: "grid:0,2", Config: protocol.Config{Lambda: 1e-2, IIC: 0.1, Rounds: 1}},
		{Data: "synthetic:100,5", Partition: "grid:1,2", PStar: 1, Config: protocol.Config{Lambda: -1, IIC: 0.1, Rounds: 1}},
		{Data: "synthetic:100,5", Partition: "grid:1,2", PStar: 1, Config: protocol.Config{Lambda: 1e-2, IIC: 0.1, Rounds: 1, Step: "fast"}},
		{Data: "no-such-file.libsvm", Partition: "grid:1,2", Config: protocol.Config{Lambda: 1e-2, IIC: 0.1, Rounds: 1}},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// TestSparseGridFederation runs sparse data whose holders share feature
// indexes (each sample's non-zeros dealt among its group's holders).
func TestSparseGridFederation(t *testing.T) {
	o := Options{Data: "synthetic:600,100,0.1,0.05,3", Holdout: 0.2, Partition: "grid:2,2", Seed: 1, Config: protocol.Config{Lambda: 1e-2, Rounds: 600, IIC: 0.2}}
	p, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Blocks[0].X.IsSparse() {
		t.Fatal("sparse data gave dense blocks")
	}
	shared := 0
	for _, f := range p.Blocks[0].Features {
		for _, g := range p.Blocks[1].Features {
			if f == g {
				shared++
			}
		}
	}
	if shared == 0 {
		t.Fatal("holders of a group share no feature index: the test does not cover dealt entries")
	}
	s, err := RunPrepared(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !(s.RelativeLoss < 1e-2) || s.DualDecreases != 0 {
		t.Fatalf("relative loss %.3g, dual fell %d times", s.RelativeLoss, s.DualDecreases)
	}
}

// TestEncryptedMatchesPlaintextMNIST: on real digits, a BGV run and a
// plaintext run with the same seed agree exactly, round by round, at partial
// participation.
func TestEncryptedMatchesPlaintextMNIST(t *testing.T) {
	if _, err := dataset.MNISTDir(); err != nil {
		t.Skip("mnist digits not installed (make data):", err)
	}
	o := Options{Data: "mnist", Partition: "quadrants:1", Seed: 2, PStar: 0.23, Config: protocol.Config{Lambda: 1e-3, Fraction: 0.5, Rounds: 30, IIC: 0.2}}
	p, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	var hist [2][]protocol.RoundMetrics
	for i, plain := range []bool{true, false} {
		o.Plaintext = plain
		s, err := RunPreparedWithHistory(context.Background(), p, o, &hist[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "plaintext", false: "bgv"}[plain]; s.Scheme != want {
			t.Fatalf("scheme %q, want %q", s.Scheme, want)
		}
	}
	for r := range hist[0] {
		a, b := hist[0][r], hist[1][r]
		if a.Primal != b.Primal && !(math.IsNaN(a.Primal) && math.IsNaN(b.Primal)) || a.Gamma != b.Gamma {
			t.Fatalf("round %d: plaintext P=%v gamma=%v, encrypted P=%v gamma=%v", a.Round, a.Primal, a.Gamma, b.Primal, b.Gamma)
		}
	}
}

// TestThresholdKeysSameObjective: hyfed experiment --keys threshold reaches
// the shared key's final objective bit for bit (the bar is 1e-9
// relative), with the shared key's sums switched to each participant's own
// key; --plaintext with threshold keys is refused.
func TestThresholdKeysSameObjective(t *testing.T) {
	o := Options{Data: "synthetic:300,12,1,0.05,3", Holdout: 0.2, Partition: "grid:2,2", Seed: 2, PStar: 1,
		Config: protocol.Config{Lambda: 1e-2, Rounds: 6, IIC: 0.2}}
	shared, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Keys = protocol.KeysThreshold
	thr, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if thr.Keys != protocol.KeysThreshold || shared.Keys != "" || thr.Scheme == shared.Scheme {
		t.Fatalf("summaries name keys %q/%q, schemes %s/%s", thr.Keys, shared.Keys, thr.Scheme, shared.Scheme)
	}
	if math.Float64bits(thr.Primal) != math.Float64bits(shared.Primal) || math.Float64bits(thr.Dual) != math.Float64bits(shared.Dual) {
		t.Fatalf("threshold keys: P %.17g D %.17g; shared key: P %.17g D %.17g", thr.Primal, thr.Dual, shared.Primal, shared.Dual)
	}
	if thr.BytesIn <= shared.BytesIn {
		t.Errorf("threshold keys sent %d bytes to the server, the shared key %d: no switching?", thr.BytesIn, shared.BytesIn)
	}
	t.Logf("P %.12g; %.2fs vs %.2fs; bytes to/from the server %d/%d vs %d/%d", thr.Primal, thr.Seconds, shared.Seconds,
		thr.BytesIn, thr.BytesOut, shared.BytesIn, shared.BytesOut)
	o.Plaintext = true
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--plaintext") {
		t.Errorf("--plaintext with threshold keys: %v", err)
	}
}
