package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// ErrNoLIBLINEAR: the reference implementation is not installed (Debian's
// liblinear-tools; make test installs it).
var ErrNoLIBLINEAR = errors.New("liblinear-predict is not installed (Debian's liblinear-tools: make liblinear, or apt-get install liblinear-tools)")

// Reference is what LIBLINEAR's own predict makes of a model file on a
// LIBSVM data file: one label per sample, and the count it reports right.
type Reference struct {
	Labels       []string
	Right, Total int
	Summary      string // its "Accuracy = ...% (right/total)" line
}

var accuracyLine = regexp.MustCompile(`\((\d+)/(\d+)\)`)

// LIBLINEARPredict runs Debian's liblinear-predict on dataFile with
// modelFile, writing its labels to a file in dir: the check that hyfed's
// model files are LIBLINEAR's and predict the same labels.
func LIBLINEARPredict(dataFile, modelFile, dir string) (*Reference, error) {
	bin, err := exec.LookPath("liblinear-predict")
	if err != nil {
		return nil, ErrNoLIBLINEAR
	}
	out := filepath.Join(dir, "liblinear.out")
	msg, err := exec.Command(bin, dataFile, modelFile, out).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("liblinear-predict %s %s: %v\n%s", dataFile, modelFile, err, msg)
	}
	m := accuracyLine.FindStringSubmatch(string(msg))
	if m == nil {
		return nil, fmt.Errorf("liblinear-predict printed %q, no (right/total)", msg)
	}
	r := &Reference{Summary: string(bytes.TrimSpace(msg))}
	r.Right, _ = strconv.Atoi(m[1])
	r.Total, _ = strconv.Atoi(m[2])
	f, err := os.Open(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r.Labels = append(r.Labels, sc.Text())
	}
	return r, sc.Err()
}
