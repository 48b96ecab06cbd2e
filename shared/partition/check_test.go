package partition

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyfed/hyfed/shared/dataset"
)

func TestCheckCatches(t *testing.T) {
	dense := denseData(10, 6)
	sparse := sparseData(12, 20)
	for _, tc := range []struct {
		name string
		d    *dataset.Dataset
		// break changes a valid vertical:2 (dense) or grid:2,2 (sparse) split.
		breakIt func(d *dataset.Dataset, b []Block)
		want    string
	}{
		{"overlap", dense, func(d *dataset.Dataset, b []Block) {
			// Client 1 also takes feature 1 (index 0) of its samples.
			b[1] = recut(d, rowsOf(d, b[1].IDs), append([]int{0}, b[1].Features...))
		}, `sample "s0" feature 1 held by clients 0 and 1`},
		{"gap", dense, func(d *dataset.Dataset, b []Block) {
			// Client 1 drops the last feature.
			f := b[1].Features
			b[1] = recut(d, rowsOf(d, b[1].IDs), f[:len(f)-1])
		}, `sample "s0" feature 6 held by no client`},
		{"sample held by nobody", dense, func(d *dataset.Dataset, b []Block) {
			for k := range b {
				b[k] = recut(d, rowsOf(d, slices.DeleteFunc(slices.Clone(b[k].IDs), func(id string) bool { return id == "s7" })), b[k].Features)
			}
		}, `sample "s7" held by no client`},
		{"sample missing from one block", dense, func(d *dataset.Dataset, b []Block) {
			b[0] = recut(d, rowsOf(d, slices.DeleteFunc(slices.Clone(b[0].IDs), func(id string) bool { return id == "s3" })), b[0].Features)
		}, `sample "s3" feature 1 held by no client`},
		{"unknown id", dense, func(d *dataset.Dataset, b []Block) { b[1].IDs[2] = "intruder" }, `client 1: sample "intruder" is not in dense`},
		{"label", dense, func(d *dataset.Dataset, b []Block) { b[0].Y[0] = -b[0].Y[0] }, "has label"},
		{"heldout", dense, func(d *dataset.Dataset, b []Block) { b[1].Heldout[0] = !b[1].Heldout[0] }, "has held-out flag"},
		{"value", dense, func(d *dataset.Dataset, b []Block) { b[1].X.Data[0] += 1e-12 }, "client 1: sample"},
		{"twice in a block", dense, func(d *dataset.Dataset, b []Block) {
			rows := rowsOf(d, b[0].IDs)
			b[0] = recut(d, append(rows, rows[0]), b[0].Features)
		}, "client 0 holds sample"},
		{"feature count", dense, func(d *dataset.Dataset, b []Block) { b[0].NumFeatures = 7 }, "client 0: block of 7 features in all, dense has 6"},
		{"invalid block", dense, func(d *dataset.Dataset, b []Block) { b[0].Features[0] = 3 }, "client 0: block: features not ascending"},

		{"sparse overlap", sparse, func(d *dataset.Dataset, b []Block) {
			// Client 1 takes client 0's blocks over: its entries are then held twice.
			b[1] = b[0]
		}, "held by clients 0 and 1"},
		{"sparse gap", sparse, func(d *dataset.Dataset, b []Block) {
			b[1].X.Values = make([]float64, len(b[1].X.Values)) // zeros are no entries
		}, "held by no client"},
		{"sparse value", sparse, func(d *dataset.Dataset, b []Block) { b[2].X.Values[0] *= 2 }, "client 2: sample"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "vertical:2"
			if tc.d.X.IsSparse() {
				spec = "grid:2,2"
			}
			blocks := mustSplit(t, spec, tc.d)
			if err := Check(tc.d, blocks); err != nil {
				t.Fatalf("valid split: %v", err)
			}
			tc.breakIt(tc.d, blocks)
			err := Check(tc.d, blocks)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

// The exact messages of the two faults the checker exists for.
func TestCheckMessages(t *testing.T) {
	d := denseData(3, 4)
	d.IDs = []string{"train-1", "train-7", "test-2"}
	whole := func() Block { return recut(d, []int{0, 1, 2}, []int{0, 1, 2, 3}) }
	b := whole()
	only7 := recut(d, []int{1}, []int{3})
	if err := Check(d, []Block{b, only7}); err == nil || err.Error() != `sample "train-7" feature 4 held by clients 0 and 1` {
		t.Errorf("overlap: %v", err)
	}
	b = recut(d, []int{0, 1, 2}, []int{0, 1, 2})
	rest := recut(d, []int{0, 2}, []int{3})
	if err := Check(d, []Block{b, rest}); err == nil || err.Error() != `sample "train-7" feature 4 held by no client` {
		t.Errorf("gap: %v", err)
	}
	if err := Check(d, []Block{whole()}); err != nil {
		t.Errorf("one client holding everything: %v", err)
	}
}

// A block may not hold a non-zero value where sparse data has none.
func TestCheckSparseExtraEntry(t *testing.T) {
	d := sparseData(12, 20)
	blocks := mustSplit(t, "grid:2,2", d)
	// Feature 20 of sample s9 is zero in the data; an extra client claims 2.
	extra := Block{NumFeatures: 20, Features: []int{19}, IDs: []string{"s9"}, Y: []float64{d.Y[9]}, Heldout: []bool{d.Heldout[9]}, X: dataset.NewDense(1, 1)}
	extra.X.Data[0] = 2
	if err := Check(d, append(blocks, extra)); err == nil || err.Error() != `client 4: sample "s9" feature 20 is 2, sparse has 0` {
		t.Errorf("Check = %v", err)
	}
	// A zero there is no entry and harmless.
	extra.X.Data[0] = 0
	if err := Check(d, append(blocks, extra)); err != nil {
		t.Errorf("explicit zero: %v", err)
	}
}

// Check holds O(M) scratch, not O(N*M): a wide sparse set is fine.
func TestCheckWideSparse(t *testing.T) {
	d := &dataset.Dataset{Name: "wide", X: dataset.NewSparseBuilder(2_000_000)}
	for i := 0; i < 5000; i++ {
		d.X.AppendRow([]int32{int32(i), int32(5000 + i*397%1_000_000), 1_999_999}, []float64{1, 2, 3})
		addMeta(d, i, 5000)
	}
	start := time.Now()
	blocks := mustSplit(t, "grid:10,3", d)
	if err := Check(d, blocks); err != nil {
		t.Fatal(err)
	}
	t.Logf("split and check %d x %d sparse: %v", d.N(), d.M(), time.Since(start))
}

// BenchmarkCheckMNIST checks an MNIST-sized dense split (70000 x 785,
// quadrants:5).
func BenchmarkCheckMNIST(b *testing.B) {
	d := imageData(70000, 28, 28, 1)
	blocks := mustSplit(b, "quadrants:5", d)
	b.ResetTimer()
	for range b.N {
		if err := Check(d, blocks); err != nil {
			b.Fatal(err)
		}
	}
}
