package experiment

import (
	"context"
	"math"
	"testing"

	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/protocol"
)

// The primal a round reports (from the participants' inner products) is
// P(w) of the server's w, computed here from the data, at every round:
// with partial participation a client with no updating group must still
// move its inner products with w (it once did not, and the reported primal
// fell below P*).
func TestReportedPrimalIsTrue(t *testing.T) {
	for _, c := range []struct {
		partition string
		fraction  float64
		loss      string
	}{
		{"horizontal:4", 0.5, "hinge"},
		{"horizontal:4", 0.5, "logistic"},
		{"grid:2,2", 0.5, "hinge"},
		{"vertical:3", 0.6, "hinge"},
		{"horizontal:4", 1, "hinge"},
	} {
		t.Run(c.partition+"/"+c.loss, func(t *testing.T) {
			o := Options{Data: "synthetic:1200,40,0.3,0.05,7", Partition: c.partition, Seed: 3, Plaintext: true, PStar: 1, Config: protocol.Config{Lambda: 1e-3, Fraction: c.fraction, Rounds: 12, IIC: 0.6, Step: "block", Gamma: 1, Loss: c.loss}}
			p, err := Prepare(o)
			if err != nil {
				t.Fatal(err)
			}
			lf, err := loss.Parse(c.loss)
			if err != nil {
				t.Fatal(err)
			}
			d := p.Data
			truth := func(w []float64) float64 {
				s := 0.0
				for i := 0; i < d.N(); i++ {
					if !d.Heldout[i] {
						s += lf.Value(d.X.Dot(i, w), d.Y[i])
					}
				}
				ww := 0.0
				for _, v := range w {
					ww += v * v
				}
				return s/float64(d.NumTrain()) + o.Lambda/2*ww
			}
			seen, checked := 0, 0
			o.Script = func(_ *protocol.Memory, co *protocol.Coordinator) {
				h := co.History()
				if len(h) == seen {
					return
				}
				seen = len(h)
				r := h[len(h)-1]
				if co.W() == nil || math.IsNaN(r.Primal) {
					return
				}
				checked++
				if want := truth(co.W()); math.Abs(r.Primal-want) > 1e-6*want {
					t.Errorf("round %d (%d active): reported primal %.9g, P(w) = %.9g", r.Round, r.Active, r.Primal, want)
				}
			}
			if _, err := RunPreparedWithHistory(context.Background(), p, o, nil); err != nil {
				t.Fatal(err)
			}
			if checked < 10 {
				t.Fatalf("checked %d rounds", checked)
			}
		})
	}
}
