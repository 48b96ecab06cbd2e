package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReadLIBSVM reads LIBSVM/SVMlight text, one sample a line:
//
//	label idx:val idx:val ... [# comment]
//
// with 1-based ascending feature indexes; blank lines and lines starting
// with '#' are skipped, a "qid:" token is ignored. The record id is the first
// word of the comment, else "line-<N>". The feature count is the largest
// index seen. Storage stays sparse unless opt.Dense. Errors read
// "<name>:<line>: field <k>: <what>", k counting tokens from 1.
func ReadLIBSVM(r io.Reader, name string, opt Options) (*Dataset, error) {
	if err := opt.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// bufio.Reader rather than Scanner: rows of wide data sets can be far
	// longer than Scanner's 64 KiB token limit.
	br := bufio.NewReaderSize(r, 1<<16)
	x := NewSparseBuilder(0)
	var raw []float64
	var ids []string
	var lines []int
	idLine := map[string]int{}
	maxCol := int32(-1)
	var idx []int32
	var val []float64
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadString('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, rerr)
		}
		if line == "" && rerr != nil {
			break
		}
		text := strings.TrimSpace(line)
		if text != "" && text[0] != '#' {
			id := "line-" + strconv.Itoa(lineNo)
			if h := strings.IndexByte(text, '#'); h >= 0 {
				if c := strings.Fields(text[h+1:]); len(c) > 0 {
					id = c[0]
				}
				text = text[:h]
			}
			if prev, dup := idLine[id]; dup {
				return nil, fmt.Errorf("%s:%d: record id %q already used on line %d", name, lineNo, id, prev)
			}
			idLine[id] = lineNo
			fields := strings.Fields(text)
			y, err := strconv.ParseFloat(fields[0], 64)
			if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
				return nil, fmt.Errorf("%s:%d: field 1: label %q is not a finite number", name, lineNo, fields[0])
			}
			idx, val = idx[:0], val[:0]
			for k, f := range fields[1:] {
				field := k + 2
				if strings.HasPrefix(f, "qid:") {
					continue
				}
				c := strings.IndexByte(f, ':')
				if c < 0 {
					return nil, fmt.Errorf("%s:%d: field %d: %q is not index:value", name, lineNo, field, f)
				}
				j, err := strconv.ParseInt(f[:c], 10, 32)
				if err != nil || j < 1 {
					return nil, fmt.Errorf("%s:%d: field %d: feature index %q is not a whole number from 1 to 2147483647", name, lineNo, field, f[:c])
				}
				v, err := strconv.ParseFloat(f[c+1:], 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s:%d: field %d: value %q is not a finite number", name, lineNo, field, f[c+1:])
				}
				col := int32(j - 1)
				if len(idx) > 0 && col <= idx[len(idx)-1] {
					return nil, fmt.Errorf("%s:%d: field %d: feature index %d does not ascend (previous %d)", name, lineNo, field, j, idx[len(idx)-1]+1)
				}
				idx = append(idx, col)
				val = append(val, v)
				maxCol = max(maxCol, col)
			}
			x.AppendRow(idx, val)
			raw = append(raw, y)
			ids = append(ids, id)
			lines = append(lines, lineNo)
		}
		if rerr != nil {
			break
		}
	}
	if x.Rows == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	if maxCol < 0 {
		return nil, fmt.Errorf("%s: no features in any sample", name)
	}
	x.Cols = int(maxCol) + 1
	y, err := MapLabels(raw, opt.Positive)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if x, err = withStorage(x, opt); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := &Dataset{Name: name, X: x, Y: y, IDs: ids, Lines: lines}
	applyHoldout(d, opt.Holdout)
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}
