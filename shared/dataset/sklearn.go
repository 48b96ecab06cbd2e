package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The small real data sets that ship inside Debian's python3-sklearn
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
	diabetesDataFile     = "diabetes_data_raw.csv.gz"
	diabetesTargetFile   = "diabetes_target.csv.gz"
	diabetesSex          = 1   // the feature coded 1 or 2
	diabetesThreshold    = 140 // y = +1 above it: about the median score
)

// BreastCancerNames are scikit-learn's names of breast_cancer.csv's 30
// columns, in the file's order (load_breast_cancer's feature_names).
var BreastCancerNames = []string{
	"mean radius", "mean texture", "mean perimeter", "mean area", "mean smoothness",
	"mean compactness", "mean concavity", "mean concave points", "mean symmetry", "mean fractal dimension",
	"radius error", "texture error", "perimeter error", "area error", "smoothness error",
	"compactness error", "concavity error", "concave points error", "symmetry error", "fractal dimension error",
	"worst radius", "worst texture", "worst perimeter", "worst area", "worst smoothness",
	"worst compactness", "worst concavity", "worst concave points", "worst symmetry", "worst fractal dimension",
}

// DiabetesNames are scikit-learn's names of the diabetes measurements:
// age, sex, body mass index, mean blood pressure and six blood serum
// measurements.
var DiabetesNames = []string{"age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"}

// SklearnDir finds the directory holding breast_cancer.csv, digits.csv.gz
// and the diabetes files: $HYFED_SKLEARN_DIR if set; else .cache/sklearn (where
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

// ReadSpaced reads rows of cols numbers separated by spaces or tabs, no
// header, as sklearn keeps the diabetes data (and its target, one number
// a line, in a file of its own). Blank lines are skipped. Errors read
// "<name>:<line>: field <n>: <what>".
func ReadSpaced(r io.Reader, name string, cols int) (*Matrix, error) {
	if cols < 1 {
		return nil, fmt.Errorf("%s: %d columns asked for", name, cols)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var data []float64
	rows, line := 0, 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != cols {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", name, line, len(fields), cols)
		}
		for c, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: field %d: %q is not a finite number", name, line, c+1, f)
			}
			data = append(data, v)
		}
		rows++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if rows == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return &Matrix{Rows: rows, Cols: cols, Data: data}, nil
}

// readSklearnColumns reads one of the bundled files with ReadSpaced and
// returns its path for messages.
func readSklearnColumns(file string, cols int) (*Matrix, string, error) {
	r, closeFile, path, err := openSklearn(file)
	if err != nil {
		return nil, "", err
	}
	defer closeFile()
	x, err := ReadSpaced(r, path, cols)
	return x, path, err
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
	return measurements("breast-cancer", "sample", x, y, BreastCancerNames, opt), nil
}

// loadDiabetes: sklearn's diabetes data (Efron et al., 2004), 442
// patients x 10 measurements taken at baseline, y = +1 when the disease
// progression a year later scores above 140 (221 of 442).
func loadDiabetes(opt Options) (*Dataset, error) {
	if opt.Positive != nil {
		return nil, fmt.Errorf("diabetes: a --positive rule does not apply: the target is a score, and y = +1 when it is above %d", diabetesThreshold)
	}
	x, path, err := readSklearnColumns(diabetesDataFile, len(DiabetesNames))
	if err != nil {
		return nil, fmt.Errorf("diabetes: %w", err)
	}
	target, tpath, err := readSklearnColumns(diabetesTargetFile, 1)
	if err != nil {
		return nil, fmt.Errorf("diabetes: %w", err)
	}
	if x.Rows != target.Rows {
		return nil, fmt.Errorf("diabetes: %s has %d patients, %s %d (a truncated file?)", path, x.Rows, tpath, target.Rows)
	}
	for i := 0; i < x.Rows; i++ {
		// Sex is a category (Categories in raw data): anything but its two
		// codes is a damaged file.
		if v := x.At(i, diabetesSex); v != 1 && v != 2 {
			return nil, fmt.Errorf("diabetes: %s: patient %d: sex %v is not 1 or 2", path, i+1, v)
		}
	}
	y := make([]float64, target.Rows)
	for i, v := range target.Data {
		y[i] = -1
		if v > diabetesThreshold {
			y[i] = 1
		}
	}
	d := measurements("diabetes", "patient", x, y, DiabetesNames, opt)
	if opt.Raw {
		d.Categories = map[int][]string{diabetesSex: {"1", "2"}}
	}
	return d, nil
}

// measurements makes a data set of raw measurements (breast-cancer,
// diabetes): ids "<prefix>-<i>", the held-out share, and unless opt.Raw
// every measurement standardized and the bias appended.
func measurements(name, prefix string, x *Matrix, y []float64, names []string, opt Options) *Dataset {
	d := &Dataset{Name: name, Y: y}
	for i := range y {
		d.IDs = append(d.IDs, prefix+"-"+strconv.Itoa(i))
	}
	applyHoldout(d, builtinHoldout(opt))
	if opt.Raw {
		d.X, d.Names = x, slices.Clone(names)
		return d
	}
	// The measurements range from 1e-3 (breast-cancer's fractal dimension)
	// to 4e3 (its area): raw, one feature would dominate every inner
	// product and the squared row norms (up to 2e7) would exceed the
	// encryption's 32,768. Standardized, every feature counts alike and the
	// rows stay small (squared norms in the hundreds, plus Bias^2), so the
	// defaults that work for pixel data work here without per-set tuning.
	d.X = appendBias(standardize(x, d.Heldout))
	d.Names = append(slices.Clone(names), BiasName)
	return d
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
	rule := opt.Positive
	if rule == nil {
		rule, _ = ParsePositive("0,2,4,6,8")
	}
	y, err := MapLabels(raw, rule)
	if err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	d := &Dataset{Name: "digits", X: x, Y: y, Image: &ImageShape{Width: digitsSide, Height: digitsSide}}
	if !opt.Raw {
		for i, v := range x.Data {
			// To [0,1] like the other images: the scale of mnist's pixels,
			// so the same defaults apply, and squared row norms of at most 64
			// plus Bias^2.
			x.Data[i] = v / digitsMaxPixel
		}
		d.X, d.Image.Extra = appendBias(x), 1
	}
	for i := range raw {
		d.IDs = append(d.IDs, "image-"+strconv.Itoa(i))
	}
	applyHoldout(d, builtinHoldout(opt))
	return d, nil
}
