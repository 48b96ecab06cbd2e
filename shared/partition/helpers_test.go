package partition

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
)

// denseData returns n samples of m features, labels sorted (+1 first, as
// in files sorted by class), every fifth sample held out, some zeros.
func denseData(n, m int) *dataset.Dataset {
	d := &dataset.Dataset{Name: "dense", X: dataset.NewDense(n, m)}
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			if (i+2*j)%3 != 0 {
				d.X.Data[i*m+j] = float64((i*7+j*5)%11)/8 - 0.5
			}
		}
		addMeta(d, i, n)
	}
	return d
}

// imageData returns n w x h "images" followed by extra bias features of 10.
func imageData(n, w, h, extra int) *dataset.Dataset {
	m := w*h + extra
	d := denseData(n, m)
	d.Name = "image"
	d.Image = &dataset.ImageShape{Width: w, Height: h, Extra: extra}
	for i := 0; i < n; i++ {
		for j := w * h; j < m; j++ {
			d.X.Data[i*m+j] = 10
		}
	}
	return d
}

// toSparse returns d with CSR storage.
func toSparse(d *dataset.Dataset) *dataset.Dataset {
	out := *d
	out.Name = d.Name + "-sparse"
	out.X = dataset.NewSparseBuilder(d.M())
	for i := 0; i < d.N(); i++ {
		_, row := d.X.Row(i)
		var idx []int32
		for j := range row {
			idx = append(idx, int32(j))
		}
		out.X.AppendRow(idx, row) // drops the zeros
	}
	return &out
}

// sparseData returns n CSR samples of m features with 0 to 9 non-zeros each
// (sample 0 has none).
func sparseData(n, m int) *dataset.Dataset {
	d := &dataset.Dataset{Name: "sparse", X: dataset.NewSparseBuilder(m)}
	for i := 0; i < n; i++ {
		var idx []int32
		var val []float64
		for j := (i * 13) % 7; j < m && len(idx) < i%10; j += 1 + (i+j)%5 {
			idx = append(idx, int32(j))
			val = append(val, float64(i+1)/float64(j+3))
		}
		d.X.AppendRow(idx, val)
		addMeta(d, i, n)
	}
	return d
}

func addMeta(d *dataset.Dataset, i, n int) {
	y := 1.0
	if i >= n/2 {
		y = -1
	}
	d.Y = append(d.Y, y)
	d.IDs = append(d.IDs, fmt.Sprintf("s%d", i))
	d.Heldout = append(d.Heldout, i%5 == 4)
}

func mustSplit(t testing.TB, spec string, d *dataset.Dataset) []Block {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := s.Split(d)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// rowsOf returns the dataset rows of ids.
func rowsOf(d *dataset.Dataset, ids []string) []int {
	at := map[string]int{}
	for i, id := range d.IDs {
		at[id] = i
	}
	out := make([]int, len(ids))
	for r, id := range ids {
		out[r] = at[id]
	}
	return out
}

// recut rebuilds block b of d with other rows or features.
func recut(d *dataset.Dataset, rows, feats []int) Block {
	col := make([]int32, d.M())
	for j := range col {
		col[j] = -1
	}
	for c, j := range feats {
		col[j] = int32(c)
	}
	return cut(d, rows, feats, col)
}

// sameBlock reports how a and b differ, comparing values exactly and
// ignoring storage kind. It reads with Matrix.At, which must work on every
// block this package makes, even sparse ones without a stored entry.
func sameBlock(a, b *Block) error {
	if !reflect.DeepEqual(a.Features, b.Features) && (len(a.Features) != 0 || len(b.Features) != 0) {
		return fmt.Errorf("features %v != %v", a.Features, b.Features)
	}
	if a.NumFeatures != b.NumFeatures || !reflect.DeepEqual(a.IDs, b.IDs) || !reflect.DeepEqual(a.Y, b.Y) || !reflect.DeepEqual(a.Heldout, b.Heldout) {
		return fmt.Errorf("metadata differs: %d %v %v %v vs %d %v %v %v", a.NumFeatures, a.IDs, a.Y, a.Heldout, b.NumFeatures, b.IDs, b.Y, b.Heldout)
	}
	if a.X.Rows != b.X.Rows || a.X.Cols != b.X.Cols {
		return fmt.Errorf("shape %dx%d != %dx%d", a.X.Rows, a.X.Cols, b.X.Rows, b.X.Cols)
	}
	for r := 0; r < a.X.Rows; r++ {
		for c := 0; c < a.X.Cols; c++ {
			if x, y := a.X.At(r, c), b.X.At(r, c); x != y {
				return fmt.Errorf("entry (%d,%d): %v != %v", r, c, x, y)
			}
		}
	}
	return nil
}
