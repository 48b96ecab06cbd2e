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

// ReadLIBSVM reads LIBSVM/SVMlight text: `label idx:val ... [# comment]`
// with 1-based ascending feature indexes. The record id is the first word
// of the comment, else "line-<N>". Storage stays sparse unless opt.Dense.
// Errors read "<name>:<line>: field <k>: <what>".
func ReadLIBSVM(r io.Reader, name string, opt Options) (*Dataset, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	x := NewSparseBuilder(0)
	var raw []float64
	var ids []string
	maxCol := int32(-1)
	var idx []int32
	var val []float64
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		if line == "" && err != nil {
			break
		}
		text := strings.TrimSpace(line)
		if text != "" && text[0] != '#' {
			id := fmt.Sprintf("line-%d", lineNo)
			if h := strings.IndexByte(text, '#'); h >= 0 {
				if c := strings.Fields(text[h+1:]); len(c) > 0 {
					id = c[0]
				}
				text = text[:h]
			}
			fields := strings.Fields(text)
			if len(fields) == 0 {
				return nil, fmt.Errorf("%s:%d: field 1: no label", name, lineNo)
			}
			y, perr := strconv.ParseFloat(fields[0], 64)
			if perr != nil || math.IsNaN(y) || math.IsInf(y, 0) {
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
				j, perr := strconv.ParseInt(f[:c], 10, 32)
				if perr != nil || j < 1 {
					return nil, fmt.Errorf("%s:%d: field %d: feature index %q is not a whole number from 1", name, lineNo, field, f[:c])
				}
				v, perr := strconv.ParseFloat(f[c+1:], 64)
				if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s:%d: field %d: value %q is not a finite number", name, lineNo, field, f[c+1:])
				}
				col := int32(j - 1)
				if len(idx) > 0 && col <= idx[len(idx)-1] {
					return nil, fmt.Errorf("%s:%d: field %d: feature index %d does not ascend", name, lineNo, field, j)
				}
				idx = append(idx, col)
				val = append(val, v)
				if col > maxCol {
					maxCol = col
				}
			}
			x.AppendRow(idx, val)
			raw = append(raw, y)
			ids = append(ids, id)
		}
		if err != nil {
			break
		}
	}
	if x.Rows == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	x.Cols = int(maxCol) + 1
	y, err := MapLabels(raw, opt.Positive)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if opt.Dense {
		x = x.Densify()
	}
	d := &Dataset{Name: name, X: x, Y: y, IDs: ids}
	applyHoldout(d, opt.Holdout)
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// Densify returns a dense copy of a sparse matrix (or m itself if dense).
func (m *Matrix) Densify() *Matrix {
	if !m.IsSparse() {
		return m
	}
	out := NewDense(m.Rows, m.Cols)
	for i := 0; i < m.Rows; i++ {
		idx, val := m.Row(i)
		for k, j := range idx {
			out.Data[i*m.Cols+int(j)] = val[k]
		}
	}
	return out
}
