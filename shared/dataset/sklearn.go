package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The two small real data sets that ship inside Debian's python3-sklearn
// (sklearn/datasets/data/), so that the suite measures hyfed on data it
// was never tuned on without a download outside the package registries.
const (
	// SklearnSystemDir is where an installed python3-sklearn keeps them,
	// the last place SklearnDir looks.
	SklearnSystemDir = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
	sklearnSubdir    = ".cache/sklearn" // where `make data` copies them

	breastCancerFile     = "breast_cancer.csv"
	breastCancerFeatures = 30
	digitsFile           = "digits.csv.gz"
	digitsSide           = 8  // 8x8 images
	digitsMaxPixel       = 16 // pixel values are counts 0..16
)

// SklearnDir finds the directory holding breast_cancer.csv and
// digits.csv.gz: $HYFED_SKLEARN_DIR if set; else .cache/sklearn (where
// `make data` copies them) in the current directory or up to 5 parents;
// else SklearnSystemDir.
func SklearnDir() (string, error) {
	if dir := os.Getenv("HYFED_SKLEARN_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, breastCancerFile)); err != nil {
			return "", fmt.Errorf("HYFED_SKLEARN_DIR: %w", err)
		}
		return dir, nil
	}
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		for dir, up := wd, 0; up <= 5; dir, up = filepath.Dir(dir), up+1 {
			tried = append(tried, filepath.Join(dir, sklearnSubdir))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	tried = append(tried, SklearnSystemDir)
	for _, cand := range tried {
		if _, err := os.Stat(filepath.Join(cand, breastCancerFile)); err == nil {
			return cand, nil
		}
	}
	return "", fmt.Errorf("the files of Debian's python3-sklearn are in none of %s (run `make data`, which does apt-get download python3-sklearn and dpkg-deb -x into .cache/sklearn; or set HYFED_SKLEARN_DIR)", strings.Join(tried, ", "))
}

// SklearnLayout describes one of sklearn's bundled CSV files.
type SklearnLayout struct {
	Features int
	// Header: the first line is sklearn's "<samples>,<features>,<class
	// names...>" and must agree with the rows that follow.
	Header bool
	// Max, if positive, bounds the feature values to [0, Max] (pixels).
	Max float64
}

// ReadSklearnCSV reads the CSV layout of sklearn's bundled data: rows of
// l.Features numbers and then an integer class label, comma-separated. A
// row count that disagrees with the header is an error (a truncated file
// is not a smaller data set). Errors read "<name>:<line>: field <n>: <what>".
func ReadSklearnCSV(r io.Reader, name string, l SklearnLayout) (*Matrix, []float64, error) {
	features := l.Features
	if features < 1 {
		return nil, nil, fmt.Errorf("%s: layout with %d features", name, features)
	}
	header := l.Header
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	wantRows := -1
	var data, raw []float64
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fields := strings.Split(text, ",")
		if header && wantRows < 0 {
			if len(fields) < 2 {
				return nil, nil, fmt.Errorf("%s:%d: header %q: want <samples>,<features>,<class names>", name, line, text)
			}
			n, err := strconv.Atoi(strings.TrimSpace(fields[0]))
			if err != nil || n < 1 {
				return nil, nil, fmt.Errorf("%s:%d: field 1: sample count %q is not a whole number >= 1", name, line, fields[0])
			}
			m, err := strconv.Atoi(strings.TrimSpace(fields[1]))
			if err != nil || m != features {
				return nil, nil, fmt.Errorf("%s:%d: field 2: feature count %q, want %d", name, line, fields[1], features)
			}
			wantRows = n
			continue
		}
		if len(fields) != features+1 {
			return nil, nil, fmt.Errorf("%s:%d: %d fields, want %d features and a label", name, line, len(fields), features)
		}
		for c, f := range fields[:features] {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("%s:%d: field %d: %q is not a finite number", name, line, c+1, f)
			}
			if l.Max > 0 && (v < 0 || v > l.Max) {
				return nil, nil, fmt.Errorf("%s:%d: field %d: %v is not in [0,%v]", name, line, c+1, v, l.Max)
			}
			data = append(data, v)
		}
		lab := strings.TrimSpace(fields[features])
		y, err := strconv.Atoi(lab)
		if err != nil || y < 0 {
			return nil, nil, fmt.Errorf("%s:%d: field %d: label %q is not a class number >= 0", name, line, features+1, lab)
		}
		raw = append(raw, float64(y))
		if wantRows >= 0 && len(raw) > wantRows {
			return nil, nil, fmt.Errorf("%s:%d: more samples than the header's %d", name, line, wantRows)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if header && wantRows < 0 {
		return nil, nil, fmt.Errorf("%s:1: no header line", name)
	}
	if len(raw) == 0 {
		return nil, nil, fmt.Errorf("%s: no samples", name)
	}
	if wantRows >= 0 && len(raw) != wantRows {
		return nil, nil, fmt.Errorf("%s:%d: %d samples, the header says %d (truncated file?)", name, line, len(raw), wantRows)
	}
	return &Matrix{Rows: len(raw), Cols: features, Data: data}, raw, nil
}

// openSklearn opens one of the bundled files, inflating gzip.
func openSklearn(file string) (io.Reader, func() error, string, error) {
	dir, err := SklearnDir()
	if err != nil {
		return nil, nil, "", err
	}
	path := filepath.Join(dir, file)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, "", fmt.Errorf("%w (run `make data`, or set HYFED_SKLEARN_DIR)", err)
	}
	if err != nil {
		return nil, nil, "", err
	}
	r, err := gunzipMaybe(f)
	if err != nil {
		f.Close()
		return nil, nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return r, f.Close, path, nil
}

// loadBreastCancer: the Wisconsin diagnostic breast cancer data, 569
// samples x 30 measurements, y = +1 for malignant (sklearn's class 0).
func loadBreastCancer(opt Options) (*Dataset, error) {
	r, closeFile, path, err := openSklearn(breastCancerFile)
	if err != nil {
		return nil, fmt.Errorf("breast-cancer: %w", err)
	}
	defer closeFile()
	x, raw, err := ReadSklearnCSV(r, path, SklearnLayout{Features: breastCancerFeatures, Header: true})
	if err != nil {
		return nil, fmt.Errorf("breast-cancer: %w", err)
	}
	rule := opt.Positive
	if rule == nil {
		rule, _ = ParsePositive("0") // malignant
	}
	y, err := MapLabels(raw, rule)
	if err != nil {
		return nil, fmt.Errorf("breast-cancer: %w", err)
	}
	d := &Dataset{Name: "breast-cancer", Y: y}
	for i := range raw {
		d.IDs = append(d.IDs, "sample-"+strconv.Itoa(i))
	}
	applyHoldout(d, builtinHoldout(opt))
	// The measurements range from 1e-3 (fractal dimension) to 4e3 (area):
	// raw, one feature would dominate every inner product and the squared
	// row norms (up to 2e7) would exceed the encryption's 32,768.
	// Standardized, every feature counts alike and the rows stay small
	// (squared norms in the hundreds, plus Bias^2), so the defaults that
	// work for pixel data work here without per-set tuning.
	d.X = appendBias(standardize(x, d.Heldout))
	return d, nil
}

// standardize returns x with every feature shifted and scaled to mean 0
// and variance 1 over the training rows (held-out rows use the same
// shift and scale, so no statistic leaks from them); a constant feature
// becomes 0.
func standardize(x *Matrix, heldout []bool) *Matrix {
	out := NewDense(x.Rows, x.Cols)
	for j := 0; j < x.Cols; j++ {
		var n, sum, sq float64
		for i := 0; i < x.Rows; i++ {
			if !heldout[i] {
				v := x.Data[i*x.Cols+j]
				n, sum, sq = n+1, sum+v, sq+v*v
			}
		}
		if n == 0 {
			continue
		}
		mean := sum / n
		sd := math.Sqrt(math.Max(0, sq/n-mean*mean))
		if sd == 0 {
			continue
		}
		for i := 0; i < x.Rows; i++ {
			out.Data[i*out.Cols+j] = (x.Data[i*x.Cols+j] - mean) / sd
		}
	}
	return out
}

// loadDigits: sklearn's 1,797 handwritten digits (UCI optdigits test
// set), 8x8 images of pixel counts 0..16, y = +1 for even digits as for
// mnist.
func loadDigits(opt Options) (*Dataset, error) {
	r, closeFile, path, err := openSklearn(digitsFile)
	if err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	defer closeFile()
	x, raw, err := ReadSklearnCSV(r, path, SklearnLayout{Features: digitsSide * digitsSide, Max: digitsMaxPixel})
	if err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	for i, v := range x.Data {
		// To [0,1] like the other images: the scale of mnist's pixels, so
		// the same defaults apply, and squared row norms of at most 64 plus
		// Bias^2.
		x.Data[i] = v / digitsMaxPixel
	}
	rule := opt.Positive
	if rule == nil {
		rule, _ = ParsePositive("0,2,4,6,8")
	}
	y, err := MapLabels(raw, rule)
	if err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	d := &Dataset{Name: "digits", X: appendBias(x), Y: y, Image: &ImageShape{Width: digitsSide, Height: digitsSide, Extra: 1}}
	for i := range raw {
		d.IDs = append(d.IDs, "image-"+strconv.Itoa(i))
	}
	applyHoldout(d, builtinHoldout(opt))
	return d, nil
}
