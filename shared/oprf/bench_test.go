package oprf

import (
	"fmt"
	"testing"
)

// benchBatch is the batch size the per-id benchmarks divide by.
const benchBatch = 256

func reportPerID(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/id")
}

func BenchmarkBlind(b *testing.B) {
	inputs := testInputs(benchBatch)
	for b.Loop() {
		if _, err := Blind(inputs, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportPerID(b)
}

// BenchmarkEvaluate is one member's cost: the multiplications and the
// batched proof.
func BenchmarkEvaluate(b *testing.B) {
	ev := newTestCommittee(b, 1, 1).evals[0]
	if err := ev.Declare(ctxA, MaxDeclaredRows); err != nil {
		b.Fatal(err)
	}
	st, err := Blind(testInputs(benchBatch), nil)
	if err != nil {
		b.Fatal(err)
	}
	req := st.Request(ctxA)
	for b.Loop() {
		if _, err := ev.Evaluate(req); err != nil {
			b.Fatal(err)
		}
	}
	reportPerID(b)
}

// BenchmarkFinalize covers verifying T proofs, combining and unblinding.
func BenchmarkFinalize(b *testing.B) {
	for _, c := range []struct{ n, t int }{{3, 2}, {5, 3}} {
		b.Run(fmt.Sprintf("t=%d", c.t), func(b *testing.B) {
			tc := newTestCommittee(b, c.n, c.t)
			tc.declare(b, ctxA, benchBatch)
			st, err := Blind(testInputs(benchBatch), nil)
			if err != nil {
				b.Fatal(err)
			}
			var members []int
			for j := 1; j <= c.t; j++ {
				members = append(members, j)
			}
			resps := tc.respond(b, ctxA, st, members...)
			for b.Loop() {
				if _, err := st.Finalize(tc.pub, ctxA, resps); err != nil {
					b.Fatal(err)
				}
			}
			reportPerID(b)
		})
	}
}

// BenchmarkDKG is a whole key generation: every member deals, combines and
// derives the public keys.
func BenchmarkDKG(b *testing.B) {
	for _, c := range []struct{ n, t int }{{3, 2}, {5, 3}} {
		b.Run(fmt.Sprintf("n=%d,t=%d", c.n, c.t), func(b *testing.B) {
			for b.Loop() {
				tc := &testCommittee{c: Committee{N: c.n, T: c.t}}
				for i := 1; i <= c.n; i++ {
					d, err := Deal(tc.c, i, nil)
					if err != nil {
						b.Fatal(err)
					}
					tc.dealings = append(tc.dealings, d)
				}
				for j := 1; j <= c.n; j++ {
					coms, shares := tc.received(j)
					if _, err := CombineShares(tc.c, j, coms, shares); err != nil {
						b.Fatal(err)
					}
					if _, err := NewPublicKeys(tc.c, coms); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
