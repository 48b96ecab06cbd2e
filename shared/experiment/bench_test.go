package experiment

import (
	"context"
	"os"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/protocol"
)

// BenchmarkRoundFashionMNIST times rounds of the default step on
// Fashion-MNIST, quadrants:2 (8 clients, H=1500), and reports the
// milliseconds of each phase per round.
func BenchmarkRoundFashionMNIST(b *testing.B) {
	if _, err := os.Stat(dataset.FashionMNISTDir + "/train-images-idx3-ubyte.gz"); err != nil {
		b.Skip("dataset-fashion-mnist is not installed (make data)")
	}
	o := Options{Data: "fashion-mnist", Partition: "quadrants:2", PStar: 1, Seed: 1, Config: protocol.Config{Lambda: 1e-3, IIC: 0.2}}
	p, err := Prepare(o)
	if err != nil {
		b.Fatal(err)
	}
	o.Rounds = b.N
	var hist []protocol.RoundMetrics
	b.ResetTimer()
	if _, err := RunPreparedWithHistory(context.Background(), p, o, &hist); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	totals := map[string]float64{}
	for _, r := range hist[1:] {
		for ph, s := range r.Seconds {
			totals[ph] += s
		}
	}
	for _, ph := range protocol.Phases {
		b.ReportMetric(1000*totals[ph]/float64(b.N), "ms-"+ph+"/round")
	}
}
