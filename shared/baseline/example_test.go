package baseline_test

import (
	"context"
	"fmt"

	"github.com/hyfed/hyfed/shared/baseline"
	"github.com/hyfed/hyfed/shared/experiment"
)

// Hybrid FedAvg on a small synthetic federation (2 sample groups x 2
// feature groups), the local weights sealed with BGV before the server
// adds them.
func ExampleRun() {
	p, err := experiment.Prepare(experiment.Options{Data: "synthetic:300,12,1,0.05,3", Holdout: 0.2, Partition: "grid:2,2"})
	if err != nil {
		panic(err)
	}
	hist, err := baseline.Run(context.Background(), p.Data, p.Blocks, baseline.Options{
		Algo: baseline.FedAvg, Loss: "hinge", Lambda: 1e-3,
		Rounds: 30, Inner: 20, StepA: 0.5, StepB: 1,
		Seed: 1, Scheme: "bgv",
	})
	if err != nil {
		panic(err)
	}
	for _, m := range []baseline.RoundMetrics{hist[0], hist[len(hist)-1]} {
		fmt.Printf("round %d: P(w) = %.3f, held-out accuracy %.2f, %d clients active\n", m.Round, m.Primal, m.HeldAcc, m.Active)
	}
	// Output:
	// round 1: P(w) = 0.581, held-out accuracy 0.72, 4 clients active
	// round 30: P(w) = 0.364, held-out accuracy 0.88, 4 clients active
}
