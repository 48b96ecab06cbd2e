// Package model writes and reads a trained hyfed model: w as LIBLINEAR's
// model file (the text `train` writes, so that LIBLINEAR's `predict`, in
// Debian's liblinear-tools as liblinear-predict, reads it), beside it a
// JSON sidecar FILE.json with the federation's settings and final metrics,
// and predicts with it.
//
// The LIBLINEAR file of a hyfed model:
//
//	solver_type L2R_L1LOSS_SVC_DUAL    (hinge; L2R_LR_DUAL for logistic)
//	nr_class 2
//	label 1 -1                         (x.w > 0 predicts +1)
//	nr_feature 785
//	bias -1                            (no LIBLINEAR bias term, see below)
//	w
//	0.0123 ...                         (one value a line, "%.17g ")
//
// LIBLINEAR's objective C sum loss + ||w||^2/2 with C = 1/(lambda N) has
// the same minimiser as hyfed's (lambda/2)||w||^2 + (1/N) sum loss, so the
// solver names say truly what was solved. hyfed's bias is an ordinary
// feature of the data (the built-in images carry a constant 10 as feature
// 785), not LIBLINEAR's -B term: the file says "bias -1", and data given to
// liblinear-predict must carry that feature as hyfed's own data does.
package model

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Model is a binary linear model: x.w (+ Bias*W[NumFeatures] when Bias >=
// 0) above 0 predicts +1, else -1, as LIBLINEAR predicts.
type Model struct {
	// Solver is LIBLINEAR's solver_type name (SolverFor gives hyfed's).
	Solver string
	// W has NumFeatures entries, one more when Bias >= 0.
	W           []float64
	NumFeatures int
	// Bias is LIBLINEAR's -B value: -1 (none) for hyfed's models, whose
	// bias is a feature of the data. Read from files liblinear-train wrote.
	Bias float64
}

// LIBLINEAR solver_type names of hyfed's losses: L2-regularised, solved in
// the dual, as HyFDCA does.
const (
	SolverHinge    = "L2R_L1LOSS_SVC_DUAL"
	SolverLogistic = "L2R_LR_DUAL"
)

// binarySolvers are the LIBLINEAR classifiers whose two-class model is one
// w with the sign rule above (MCSVM_CS keeps one w per class; the
// regression and one-class solvers predict otherwise).
var binarySolvers = map[string]bool{
	"L2R_LR": true, "L2R_L2LOSS_SVC_DUAL": true, "L2R_L2LOSS_SVC": true, SolverHinge: true,
	"L1R_L2LOSS_SVC": true, "L1R_LR": true, SolverLogistic: true,
}

// SolverFor returns the solver_type of a hyfed loss name.
func SolverFor(loss string) (string, error) {
	switch loss {
	case "hinge":
		return SolverHinge, nil
	case "logistic":
		return SolverLogistic, nil
	}
	return "", fmt.Errorf("model: loss %q has no LIBLINEAR solver (want hinge or logistic)", loss)
}

// New returns the model of a hyfed loss with weights w (copied).
func New(loss string, w []float64) (*Model, error) {
	s, err := SolverFor(loss)
	if err != nil {
		return nil, err
	}
	if len(w) == 0 {
		return nil, errors.New("model: no weights")
	}
	for j, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("model: weight %d is %v", j+1, v)
		}
	}
	return &Model{Solver: s, W: append([]float64(nil), w...), NumFeatures: len(w), Bias: -1}, nil
}

// Score returns the decision value of a sparse row (0-based feature
// indexes idx, or a dense row when idx is nil): features beyond the
// model's count add nothing, as in LIBLINEAR (callers check for them).
func (m *Model) Score(idx []int32, val []float64) float64 {
	z := 0.0
	if idx == nil {
		for j, v := range val[:min(len(val), m.NumFeatures)] {
			z += m.W[j] * v
		}
	} else {
		for k, j := range idx {
			if int(j) < m.NumFeatures {
				z += m.W[j] * val[k]
			}
		}
	}
	if m.Bias >= 0 {
		z += m.W[m.NumFeatures] * m.Bias
	}
	return z
}

// Label is LIBLINEAR's prediction from a decision value: +1 above 0, else -1.
func Label(score float64) float64 {
	if score > 0 {
		return 1
	}
	return -1
}

// WriteLIBLINEAR writes m as LIBLINEAR's train writes a two-class model
// (each value "%.17g " on its own line: exact, and what LIBLINEAR prints).
func WriteLIBLINEAR(w io.Writer, m *Model) error {
	if err := m.check(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "solver_type %s\nnr_class 2\nlabel 1 -1\nnr_feature %d\nbias %s\nw\n", m.Solver, m.NumFeatures, g17(m.Bias))
	for _, v := range m.W {
		bw.WriteString(g17(v))
		bw.WriteString(" \n")
	}
	return bw.Flush()
}

// g17 is C's "%.17g".
func g17(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }

func (m *Model) check() error {
	if !binarySolvers[m.Solver] {
		return fmt.Errorf("model: solver_type %q is not a two-class LIBLINEAR classifier", m.Solver)
	}
	want := m.NumFeatures
	if m.Bias >= 0 {
		want++
	}
	if m.NumFeatures < 1 || len(m.W) != want {
		return fmt.Errorf("model: %d weights for %d features (bias %v)", len(m.W), m.NumFeatures, m.Bias)
	}
	return nil
}

// maxFeatures bounds nr_feature before any weight is read: LIBLINEAR's int.
const maxFeatures = math.MaxInt32

// ReadLIBLINEAR reads a two-class LIBLINEAR model file, as LIBLINEAR's
// load_model does (header keywords in any order up to "w", then the
// weights separated by white space). Labels "1 -1" are hyfed's; "-1 1"
// flips the sign of w so that Score > 0 still means +1. Errors read
// "<name>:<line>: <what>".
func ReadLIBLINEAR(r io.Reader, name string) (*Model, error) {
	br := bufio.NewReader(r)
	m := &Model{Bias: math.NaN()}
	nrClass, nrFeature, flip := -1, -1, false
	haveLabel := false
	line := 0
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
	}
	for {
		line++
		text, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, bad("%v", err)
		}
		if text == "" && err != nil {
			return nil, bad("the file ends before the \"w\" line")
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			return nil, bad("empty line in the header")
		}
		one := func() (string, error) {
			if len(f) != 2 {
				return "", bad("%s takes one value, got %d", f[0], len(f)-1)
			}
			return f[1], nil
		}
		switch f[0] {
		case "solver_type":
			v, e := one()
			if e != nil {
				return nil, e
			}
			if !binarySolvers[v] {
				return nil, bad("solver_type %q is not a two-class LIBLINEAR classifier hyfed can predict with", v)
			}
			m.Solver = v
		case "nr_class":
			v, e := one()
			if e != nil {
				return nil, e
			}
			if v != "2" {
				return nil, bad("nr_class %q: hyfed's models have 2 classes", v)
			}
			nrClass = 2
		case "label":
			switch strings.Join(f[1:], " ") {
			case "1 -1", "+1 -1":
			case "-1 1", "-1 +1":
				flip = true
			default:
				return nil, bad("label %q: want the labels 1 and -1", strings.Join(f[1:], " "))
			}
			haveLabel = true
		case "nr_feature":
			v, e := one()
			if e != nil {
				return nil, e
			}
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || n < 1 || n > maxFeatures {
				return nil, bad("nr_feature %q is not a whole number from 1 to %d", v, maxFeatures)
			}
			nrFeature = int(n)
		case "bias":
			v, e := one()
			if e != nil {
				return nil, e
			}
			b, perr := strconv.ParseFloat(v, 64)
			if perr != nil || math.IsNaN(b) || math.IsInf(b, 0) {
				return nil, bad("bias %q is not a finite number", v)
			}
			m.Bias = b
		case "rho":
			return nil, bad("rho: a one-class model, not a classifier")
		case "w":
			if len(f) != 1 {
				return nil, bad("\"w\" stands alone on its line")
			}
		default:
			return nil, bad("unknown header keyword %q", f[0])
		}
		if f[0] == "w" {
			break
		}
		if err != nil {
			return nil, bad("the file ends before the \"w\" line")
		}
	}
	switch {
	case m.Solver == "":
		return nil, bad("no solver_type line before \"w\"")
	case nrClass < 0:
		return nil, bad("no nr_class line before \"w\"")
	case !haveLabel:
		return nil, bad("no label line before \"w\"")
	case nrFeature < 0:
		return nil, bad("no nr_feature line before \"w\"")
	case math.IsNaN(m.Bias):
		return nil, bad("no bias line before \"w\"")
	}
	m.NumFeatures = nrFeature
	want := nrFeature
	if m.Bias >= 0 {
		want++
	}
	// The weights: one a line as train writes them, but any white space
	// will do (load_model reads them with fscanf).
	for {
		line++
		text, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, bad("%v", err)
		}
		for k, tok := range strings.Fields(text) {
			if len(m.W) == want {
				return nil, bad("field %d: a weight beyond the %d that nr_feature %d and bias %v call for", k+1, want, nrFeature, m.Bias)
			}
			v, perr := strconv.ParseFloat(tok, 64)
			if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, bad("field %d: weight %q is not a finite number", k+1, tok)
			}
			if flip {
				v = -v
			}
			m.W = append(m.W, v)
		}
		if err != nil {
			break
		}
	}
	if len(m.W) != want {
		return nil, bad("the file ends after %d of %d weights", len(m.W), want)
	}
	return m, nil
}

// Files. A model is written as PATH (LIBLINEAR) and PATH.json (Info).

// SidecarPath is where the JSON sidecar of a model file lives.
func SidecarPath(path string) string { return path + ".json" }

// WriteFiles writes m to path and info to SidecarPath(path).
func WriteFiles(path string, m *Model, info *Info) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if err := WriteLIBLINEAR(f, m); err != nil {
		f.Close()
		return fmt.Errorf("model %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	b, err := info.Marshal()
	if err != nil {
		return fmt.Errorf("model %s: %w", SidecarPath(path), err)
	}
	if err := os.WriteFile(SidecarPath(path), b, 0o644); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// ReadFiles reads the model at path and its sidecar; info is nil when
// there is no sidecar (a file liblinear-train wrote).
func ReadFiles(path string) (*Model, *Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	m, err := ReadLIBLINEAR(f, path)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(SidecarPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	info, err := ParseInfo(b)
	if err != nil {
		return nil, nil, fmt.Errorf("model %s: %w", SidecarPath(path), err)
	}
	if info.NumFeatures != 0 && info.NumFeatures != m.NumFeatures {
		return nil, nil, fmt.Errorf("model %s: num_features %d, but %s has nr_feature %d", SidecarPath(path), info.NumFeatures, path, m.NumFeatures)
	}
	return m, info, nil
}
