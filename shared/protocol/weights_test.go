package protocol

import (
	"testing"
)

// TestWeightsFollow: a weights message leaves w out when its receiver held
// w before the round's step and got the round's trial direction; the
// receiver then moves w itself. Over a run with partial participation, a
// holder away and back and both step rules that move w, every
// participant's w stays the server's, bit for bit, on its features, and
// most weights messages carry none.
func TestWeightsFollow(t *testing.T) {
	d := testData(300, 10, 6)
	for name, cfg := range map[string]Config{
		"block, group steps, one solver": {Lambda: 1e-2, Inner: 10, Fraction: 0.7, Rounds: 30, Seed: 3},
		"block, one line search":         {Lambda: 1e-2, Inner: 10, Fraction: 0.7, Rounds: 30, Seed: 3},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFed(t, gridBlocks(d, 3, 2), cfg)
			follow, full, checked := 0, 0, 0
			want := map[int][]float64{} // the w a client must hold after the last weights message it was sent
			f.mem.Observe = func(toServer bool, k int, m *Message) {
				if toServer {
					// The client handled the weights before it sent this.
					if w, ok := want[k]; ok {
						p := f.mem.Participant(k)
						for j := range w {
							if p.w[j] != w[j] {
								t.Fatalf("round %d: participant %d followed to w[%d] = %v, the server has %v", m.Round, k, j, p.w[j], w[j])
							}
						}
						delete(want, k)
						checked++
					}
					return
				}
				if m.Kind != KindWeights {
					return
				}
				if !m.Follow {
					full++
					want[k] = append([]float64(nil), m.W...)
					return
				}
				follow++
				want[k] = f.coord.onFeatures(k, f.coord.w)
			}
			f.mem.Hook = func() {
				switch r := f.coord.Round(); {
				case r == 10 && f.mem.Connected(1):
					f.mem.Drop(1)
				case r >= 14 && !f.mem.Connected(1):
					if err := f.mem.Join(1); err != nil {
						t.Fatal(err)
					}
				}
			}
			f.run(t)
			if checked < follow || follow == 0 || full == 0 || follow < full {
				t.Fatalf("%d checks; %d weights messages followed, %d carried w", checked, follow, full)
			}
		})
	}
}
