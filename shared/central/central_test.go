package central

import (
	"context"
	"math"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
)

func TestSolveClosesTheGap(t *testing.T) {
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
			r, err := Solve(context.Background(), d, Config{Lambda: 1e-2, Loss: tc.l, Tol: 1e-9, MaxEpochs: 5000})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Converged || r.RelativeGap > 1e-9 || r.Gap < -1e-12 {
				t.Fatalf("converged %v, relative gap %.3g after %d epochs", r.Converged, r.RelativeGap, r.Epochs)
			}
			// P and D agree with an independent evaluation.
			p, dd, _, _ := Objectives(d, tc.l, 1e-2, r.W, r.Alpha)
			if math.Abs(p-r.Primal) > 1e-12 || math.Abs(dd-r.Dual) > 1e-9 {
				t.Fatalf("reported P %v D %v, evaluated %v %v", r.Primal, r.Dual, p, dd)
			}
			if r.Accuracy < 0.6 {
				t.Fatalf("held-out accuracy %v", r.Accuracy)
			}
		})
	}
}

func TestSolveRejectsBadConfig(t *testing.T) {
	d, _ := dataset.Load("synthetic:50,4", dataset.Options{})
	if _, err := Solve(context.Background(), d, Config{Lambda: 0}); err == nil {
		t.Fatal("accepted lambda 0")
	}
}
