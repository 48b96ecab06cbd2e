package dataset

import "fmt"

// Dataset is a labelled sample matrix. Every sample keeps a stable record id
// (from the file, else its line or row number) that survives partitioning
// and travels only as a keyed pseudonym.
type Dataset struct {
	Name    string
	X       *Matrix
	Y       []float64 // +1 or -1
	IDs     []string
	Heldout []bool // true for samples kept out of training (evaluation only)
	// Lines is each sample's 1-based line in the file it was read from, so
	// that later checks (a model's feature count) can name it; nil for
	// built-in data.
	Lines []int
	// Image is set for image data: Width*Height pixel features first, in
	// row-major order, then Extra features (the bias).
	Image *ImageShape
	// Scale, when not nil, holds the divisor every feature was scaled by
	// after reading (ScaleMaxAbs): the data set is then the scaled one.
	Scale []float64
	// Names, when not nil, names every feature as its source does
	// (breast-cancer's and diabetes' measurements; BiasName for the bias).
	Names []string
	// Categories marks the categorical features of raw data (Options.Raw):
	// feature j then holds a code whose number, as strconv's 'g' writes
	// it, is one of Categories[j] (diabetes' sex: "1" or "2").
	Categories map[int][]string
}

// ImageShape describes image data so that partitions can cut quadrants.
type ImageShape struct {
	Width, Height int
	Extra         int // trailing non-pixel features (the bias)
}

// N returns the number of samples.
func (d *Dataset) N() int { return d.X.Rows }

// M returns the number of features.
func (d *Dataset) M() int { return d.X.Cols }

// NumTrain returns the number of samples not held out.
func (d *Dataset) NumTrain() int {
	n := 0
	for _, h := range d.Heldout {
		if !h {
			n++
		}
	}
	return n
}

// Validate checks that labels, ids and flags match the matrix.
func (d *Dataset) Validate() error {
	if d.X == nil {
		return fmt.Errorf("dataset %s: no matrix", d.Name)
	}
	if err := d.X.Validate(); err != nil {
		return fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	n := d.X.Rows
	if len(d.Y) != n || len(d.IDs) != n || len(d.Heldout) != n {
		return fmt.Errorf("dataset %s: %d rows, %d labels, %d ids, %d held-out flags", d.Name, n, len(d.Y), len(d.IDs), len(d.Heldout))
	}
	if d.Lines != nil && len(d.Lines) != n {
		return fmt.Errorf("dataset %s: %d rows, %d line numbers", d.Name, n, len(d.Lines))
	}
	if d.Names != nil && len(d.Names) != d.X.Cols {
		return fmt.Errorf("dataset %s: %d features, %d names", d.Name, d.X.Cols, len(d.Names))
	}
	for j, cs := range d.Categories {
		if j < 0 || j >= d.X.Cols || len(cs) == 0 {
			return fmt.Errorf("dataset %s: categories %q of feature %d (of %d)", d.Name, cs, j, d.X.Cols)
		}
	}
	seen := make(map[string]int, n)
	for i, y := range d.Y {
		if y != 1 && y != -1 {
			return fmt.Errorf("dataset %s: sample %q label %v is not +1 or -1", d.Name, d.IDs[i], y)
		}
		if j, dup := seen[d.IDs[i]]; dup {
			return fmt.Errorf("dataset %s: record id %q used by samples %d and %d", d.Name, d.IDs[i], j, i)
		}
		seen[d.IDs[i]] = i
	}
	return nil
}

// ConstantFeature reports whether the last feature holds the same non-zero
// value in every sample (a bias feature: the built-in sets append one, and
// so may a user's file), and which. Its part of every inner product
// between two samples is then value^2, known to all without their data.
func (d *Dataset) ConstantFeature() (feature int, value float64, ok bool) {
	m := d.M()
	if m == 0 || d.X.Rows == 0 {
		return 0, 0, false
	}
	value = d.X.At(0, m-1)
	if value == 0 {
		return 0, 0, false
	}
	for i := 1; i < d.X.Rows; i++ {
		if d.X.At(i, m-1) != value {
			return 0, 0, false
		}
	}
	return m - 1, value, true
}
