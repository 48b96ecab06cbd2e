// Command stepstudy runs the plaintext step simulator of its package study
// (research code, not product code: the block step came from it) and
// prints one line per method: rounds to relative loss 1e-1/1e-2/1e-3, the
// relative loss after 100/300/1000 rounds, the primal's max/min over the
// last tenth, dual decreases and seconds.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hyfed/hyfed/cmd/stepstudy/study"
)

func main() {
	data := flag.String("data", "mnist", "data set (mnist, fashion-mnist, synthetic:N,M,density,...)")
	part := flag.String("partition", "quadrants:2", "partition")
	frac := flag.Float64("fraction", 1, "probability that a client is active in a round")
	lambda := flag.Float64("lambda", 1e-3, "regularisation")
	lossName := flag.String("loss", "hinge", "hinge or logistic")
	methods := flag.String("method", "base+pp", "comma-separated methods (see study.Config)")
	rounds := flag.Int("rounds", 1000, "rounds")
	seed := flag.Uint64("seed", 1, "seed")
	iic := flag.Float64("iic", 0.2, "H = ceil(iic * N / clients)")
	sparse := flag.Bool("sparse", false, "store dense data sparse first (grid then deals the non-zeros)")
	trace := flag.Int("trace", 0, "print the relative losses every this many rounds")
	flag.Parse()
	p, err := study.Load(*data, *part, *lossName, *lambda, *sparse)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("# %s %s f=%g lambda=%g %s: N=%d M=%d clients=%d groups=%d dealt=%v bias=%d P*=%.10g seqSDCA passes to 1e-1/1e-2/1e-3: %v\n",
		p.Name+map[bool]string{true: " (sparse)"}[*sparse], *part, *frac, *lambda, *lossName, p.N, p.M, p.Clients, len(p.Groups), p.Dealt, p.BiasFeature, p.PStar, p.CentralPasses)
	fmt.Printf("%-22s %5s %5s %5s %5s %8s %8s %8s %8s %8s %8s %8s %5s %6s %5s %6s\n",
		"method", "H", "r1e-1", "r1e-2", "r1e-3", "P@100", "P@300", "P@1000", "last", "best", "tailmax", "tmax/bst", "Ddec", "trips", "gam", "sec")
	for _, m := range strings.Split(*methods, ",") {
		cfg := study.Config{Fraction: *frac, Rounds: *rounds, Seed: *seed, IIC: *iic, Method: m}
		if *trace > 0 {
			cfg.Trace = func(r int, pr, dr float64) {
				if r%*trace == 0 {
					fmt.Printf("  %s r=%d P_R=%.3e D_R=%.3e\n", m, r, pr, dr)
				}
			}
		}
		res, err := study.Run(p, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fr := func(r int) string {
			if r == 0 {
				return ">R"
			}
			return fmt.Sprint(r)
		}
		fmt.Printf("%-22s %5d %5s %5s %5s %8.1e %8.1e %8.1e %8.1e %8.1e %8.1e %8.2f %5d %6.2f %5.2f %6.1f\n",
			m, res.H, fr(res.First[0]), fr(res.First[1]), fr(res.First[2]), res.At[0], res.At[1], res.At[2],
			res.Last, res.Best, res.TailMax, res.TailMax/res.Best, res.DualDecr, res.TripsMean, res.Gamma, res.Seconds)
		a := res.Avg
		fmt.Printf("%-22s %5s %5s %5s %5s %8.1e %8.1e %8.1e %8.1e %8.1e %8.1e %8.2f   (averaged model; dual gap at end %.1e; best-so-far model tail/best %.2f)\n",
			"  avg", "", fr(a.First[0]), fr(a.First[1]), fr(a.First[2]), a.At[0], a.At[1], a.At[2],
			a.Last, a.Best, a.TailMax, a.TailMax/a.Best, res.DualRel, res.BestTail/res.Best)
	}
}
