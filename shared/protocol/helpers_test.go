package protocol

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/secret"
)

// testData is a small dense problem with correlated features and a bias.
func testData(n, m int, seed uint64) *dataset.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	d := &dataset.Dataset{Name: "test", X: dataset.NewDense(n, m)}
	truth := make([]float64, m)
	for j := range truth {
		truth[j] = rng.NormFloat64()
	}
	for i := 0; i < n; i++ {
		row := d.X.Data[i*m : (i+1)*m]
		for j := 0; j < m-1; j++ {
			row[j] = rng.Float64()
		}
		row[m-1] = 1
		z := 0.0
		for j := range row {
			z += row[j] * truth[j]
		}
		y := 1.0
		if z+1.5*rng.NormFloat64() < truth[m-1]+0.5*sum(truth[:m-1]) {
			y = -1
		}
		d.Y = append(d.Y, y)
		d.IDs = append(d.IDs, "s"+string(rune('a'+i%26))+itoa(i))
		d.Heldout = append(d.Heldout, i%10 == 9)
	}
	return d
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(digits[i%10]) + s
	}
	return s
}

// gridBlocks splits d into k sample groups x q contiguous feature ranges.
func gridBlocks(d *dataset.Dataset, k, q int) []partition.Block {
	var out []partition.Block
	n, m := d.N(), d.M()
	for g := 0; g < k; g++ {
		rows := []int{}
		for i := g * n / k; i < (g+1)*n/k; i++ {
			rows = append(rows, i)
		}
		for f := 0; f < q; f++ {
			lo, hi := f*m/q, (f+1)*m/q
			b := partition.Block{NumFeatures: m, X: dataset.NewDense(len(rows), hi-lo)}
			for j := lo; j < hi; j++ {
				b.Features = append(b.Features, j)
			}
			for r, i := range rows {
				b.IDs = append(b.IDs, d.IDs[i])
				b.Y = append(b.Y, d.Y[i])
				b.Heldout = append(b.Heldout, d.Heldout[i])
				for j := lo; j < hi; j++ {
					b.X.Data[r*(hi-lo)+j-lo] = d.X.At(i, j)
				}
			}
			out = append(out, b)
		}
	}
	return out
}

func optimum(t *testing.T, d *dataset.Dataset, lambda float64) float64 {
	t.Helper()
	r, err := central.Solve(context.Background(), d, central.Config{Lambda: lambda, Loss: loss.Hinge{}, Tol: 1e-10, MaxEpochs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	return r.Primal
}

type fed struct {
	coord *Coordinator
	mem   *Memory
}

func newFed(t *testing.T, blocks []partition.Block, cfg Config) *fed {
	t.Helper()
	return newFedScheme(t, blocks, cfg, seal.Plaintext{Len: 64})
}

// testSecret is the federation secret of the test federations.
var testSecret = secret.FromSeed(7)

func newFedScheme(t testing.TB, blocks []partition.Block, cfg Config, scheme seal.Scheme) *fed {
	t.Helper()
	cfg.Clients = len(blocks)
	if cfg.Tol == 0 {
		cfg.Tol = NoTol // the tests measure the rounds they ask for; stop_test.go the stopping rule
	}
	c, err := NewCoordinator(cfg, scheme)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := NewMemory(len(blocks), func(k int) (*Participant, error) {
		var key seal.Key // threshold keys: the key setup gives the key
		if cfg.Keys != KeysThreshold {
			var err error
			if key, err = seal.NewKeyFor(scheme, testSecret.Derive(seal.KeyPurpose)); err != nil {
				return nil, err
			}
		}
		p, err := NewParticipant(&blocks[k], testSecret, key)
		if err == nil && cfg.OPRF() {
			p.AlignByOPRF()
		}
		return p, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fed{coord: c, mem: mem}
}

func (f *fed) run(t testing.TB) []RoundMetrics {
	t.Helper()
	if err := Serve(context.Background(), f.coord, f.mem, nil); err != nil {
		t.Fatal(err)
	}
	return f.coord.History()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// withSetup encodes cp and gives it the setup part prev carried, as the
// server's checkpoint writer keeps it: only a coordinator's first
// checkpoint carries it.
func withSetup(cp, prev *Checkpoint) *Checkpoint {
	cp.Encode()
	if cp.Setup == nil && prev != nil && prev.SetupDigest == cp.SetupDigest {
		cp.Setup = prev.Setup
	}
	return cp
}

// crashAt runs f with checkpoints until round r reaches phase, where the
// server "dies" (its context is cancelled), and returns the last
// checkpoint taken.
func crashAt(t *testing.T, f *fed, r int, phase string) *Checkpoint {
	t.Helper()
	f.coord.EnableCheckpoints()
	var last *Checkpoint
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.mem.OnReady = func(rd Ready) {
		if rd.Checkpoint != nil {
			last = withSetup(rd.Checkpoint, last)
		}
	}
	f.mem.Hook = func() {
		if f.coord.Round() == r && f.coord.Phase() == phase {
			cancel()
		}
	}
	if err := Serve(ctx, f.coord, f.mem, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if last == nil {
		t.Fatal("no checkpoint was taken")
	}
	return last
}

// testKeyAndFeatures returns the test federations' key under scheme and the
// slots 0..m-1 of the feature layout, to open what participants sealed.
func testKeyAndFeatures(t *testing.T, scheme seal.Scheme, m int) (seal.Key, []int) {
	t.Helper()
	key, err := seal.NewKeyFor(scheme, testSecret.Derive(seal.KeyPurpose))
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, m)
	for i := range all {
		all[i] = i
	}
	return key, all
}

// checkDualNeverFalls fails the test if the reported dual falls from one
// round to a later one (beyond 1e-12 relative; rounds without a dual are
// skipped): the guarantee every step rule keeps.
func checkDualNeverFalls(t testing.TB, h []RoundMetrics, what string) {
	t.Helper()
	prev := math.Inf(-1)
	for _, r := range h {
		if r.Reformed {
			prev = math.Inf(-1) // another objective from here
		}
		if math.IsNaN(r.Dual) {
			continue
		}
		if r.Dual < prev-1e-12*math.Abs(prev) {
			t.Fatalf("%sround %d: dual fell from %.12g to %.12g", what, r.Round, prev, r.Dual)
		}
		prev = r.Dual
	}
}

// directionsOf is a count of shared directions as the tests write it,
// 0 for none.
func directionsOf(n int) Directions {
	if n == 0 {
		return NoDirections
	}
	return Directions(n)
}
