package study

import "testing"

// TestDualNeverFalls runs the main variants on a small dealt sparse set
// and a feature-block split: the dual never falls and the loss drops.
func TestDualNeverFalls(t *testing.T) {
	for _, part := range []string{"grid:2,2", "horizontal:2"} {
		p, err := Load("synthetic:400,30,0.3", part, "hinge", 1e-2, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"base+pp", "bx+sh+ls", "bx+pb+sh+ls", "safe+pb+ak+sh+cg2+ls", "bx+sh+as+ls", "oracle+sh+ls", "bx+sh+ls+mom", "bx+sh+ls+momc", "bx+sh+ls+momp", "bx+sh+ls+mompp", "bx+sh+ls+momr"} {
			res, err := Run(p, Config{Fraction: 0.5, Rounds: 40, Seed: 3, Method: m})
			if err != nil {
				t.Fatal(err)
			}
			if res.DualDecr != 0 {
				t.Errorf("%s %s: the dual fell in %d rounds", part, m, res.DualDecr)
			}
			if !(res.Best < 0.5) {
				t.Errorf("%s %s: best relative loss %v", part, m, res.Best)
			}
		}
	}
}
