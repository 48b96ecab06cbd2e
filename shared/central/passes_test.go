package central

import (
	"context"
	"fmt"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
)

// Passes to 1e-1, 1e-2, 1e-3: tighter targets take at least as long, all
// are reached on easy data, the first pass is priced in fractions, and a
// target below zero (under the optimum) is never reached.
func TestPasses(t *testing.T) {
	for _, tc := range []struct {
		spec string
		l    loss.Loss
	}{
		{"synthetic:500,10,1,0.1,2", loss.Hinge{}},
		{"synthetic:500,10,1,0.1,2", loss.Logistic{}},
		{"synthetic:800,300,0.05,0.05,3", loss.Hinge{}},
	} {
		t.Run(tc.spec+"/"+tc.l.Name(), func(t *testing.T) {
			d, err := dataset.Load(tc.spec, dataset.Options{Holdout: 0.2})
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Lambda: 1e-2, Loss: tc.l, Seed: 1}
			r, err := Solve(context.Background(), d, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Passes(context.Background(), d, cfg, r.Primal, []float64{1e-1, 1e-2, 1e-3, -1}, 200)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 || got[0] <= 0 || got[0] > got[1] || got[1] > got[2] || got[2] > 200 || got[3] != -1 {
				t.Fatalf("passes %v", got)
			}
			t.Logf("passes to 1e-1, 1e-2, 1e-3: %v", got[:3])
			// The same seed gives the same passes.
			again, _ := Passes(context.Background(), d, cfg, r.Primal, []float64{1e-1, 1e-2, 1e-3, -1}, 200)
			if fmt.Sprint(again) != fmt.Sprint(got) {
				t.Fatalf("rerun %v, first %v", again, got)
			}
		})
	}
	d, _ := dataset.Load("synthetic:50,4", dataset.Options{})
	if _, err := Passes(context.Background(), d, Config{Lambda: 0}, 1, []float64{0.1}, 5); err == nil {
		t.Error("accepted lambda 0")
	}
	if _, err := Passes(context.Background(), d, Config{Lambda: 1e-2}, 0, []float64{0.1}, 5); err == nil {
		t.Error("accepted P* 0")
	}
	// A loose target on easy data falls within the first pass.
	big, _ := dataset.Load("synthetic:5000,10,1,0.05,4", dataset.Options{})
	cfg := Config{Lambda: 1e-2, Seed: 1}
	r, err := Solve(context.Background(), big, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Passes(context.Background(), big, cfg, r.Primal, []float64{0.5}, 5)
	if err != nil || got[0] <= 0 || got[0] >= 1 {
		t.Fatalf("passes to 0.5: %v %v", got, err)
	}
}
