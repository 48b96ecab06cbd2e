package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReadCSV reads a CSV file with a header row: an optional "id" column
// (default id "row-<N>", N counting data rows from 1), a required "label"
// column, an optional "heldout" column (0/1/true/false) and feature
// columns, in their order. Column names are matched case-insensitively.
// Storage is dense unless opt.Sparse. Errors read
// "<name>:<line>: field <column>: <what>", the column by its header name
// (or number when unnamed); CSV syntax errors read "<name>:<line>:<byte>:".
func ReadCSV(r io.Reader, name string, opt Options) (*Dataset, error) {
	if err := opt.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted here, to name the missing column
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:1: no header row", name)
		}
		return nil, csvError(name, err)
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff") // spreadsheet exports
	colName := func(c int) string {
		if c < len(header) {
			if h := strings.TrimSpace(header[c]); h != "" {
				return h
			}
		}
		return strconv.Itoa(c + 1)
	}
	idCol, labelCol, heldCol := -1, -1, -1
	var featCols []int
	for c, h := range header {
		var slot *int
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "id":
			slot = &idCol
		case "label":
			slot = &labelCol
		case "heldout":
			slot = &heldCol
		default:
			featCols = append(featCols, c)
			continue
		}
		if *slot >= 0 {
			return nil, fmt.Errorf("%s:1: field %d: a second %q column (first is field %d)", name, c+1, h, *slot+1)
		}
		*slot = c
	}
	if labelCol < 0 {
		return nil, fmt.Errorf("%s:1: no \"label\" column in the header", name)
	}
	if len(featCols) == 0 {
		return nil, fmt.Errorf("%s:1: no feature columns in the header", name)
	}
	var data, raw []float64
	var ids []string
	var lines []int
	var held []bool
	idLine := map[string]int{}
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line := func(c int) int { l, _ := cr.FieldPos(c); return l }
		if len(rec) != len(header) {
			c := min(len(rec), len(header))
			what := "missing"
			if len(rec) > len(header) {
				what = "beyond the header's columns"
			}
			return nil, fmt.Errorf("%s:%d: field %s: %s (%d fields, header has %d)", name, line(min(c, len(rec)-1)), colName(c), what, len(rec), len(header))
		}
		y, err := strconv.ParseFloat(strings.TrimSpace(rec[labelCol]), 64)
		if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
			return nil, fmt.Errorf("%s:%d: field %s: label %q is not a finite number", name, line(labelCol), colName(labelCol), rec[labelCol])
		}
		raw = append(raw, y)
		id := "row-" + strconv.Itoa(row)
		if idCol >= 0 {
			id = strings.TrimSpace(rec[idCol])
			if id == "" {
				return nil, fmt.Errorf("%s:%d: field %s: empty record id", name, line(idCol), colName(idCol))
			}
		}
		if prev, dup := idLine[id]; dup {
			return nil, fmt.Errorf("%s:%d: record id %q already used on line %d", name, line(0), id, prev)
		}
		idLine[id] = line(0)
		ids = append(ids, id)
		lines = append(lines, line(0))
		if heldCol >= 0 {
			switch strings.ToLower(strings.TrimSpace(rec[heldCol])) {
			case "1", "true":
				held = append(held, true)
			case "0", "false", "":
				held = append(held, false)
			default:
				return nil, fmt.Errorf("%s:%d: field %s: %q is not 0/1/true/false", name, line(heldCol), colName(heldCol), rec[heldCol])
			}
		}
		for _, c := range featCols {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[c]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: field %s: %q is not a finite number", name, line(c), colName(c), rec[c])
			}
			data = append(data, v)
		}
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	y, err := MapLabels(raw, opt.Positive)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	x, err := withStorage(&Matrix{Rows: len(raw), Cols: len(featCols), Data: data}, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := &Dataset{Name: name, X: x, Y: y, IDs: ids, Lines: lines}
	if heldCol >= 0 {
		d.Heldout = held
	} else {
		applyHoldout(d, opt.Holdout)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// csvError puts a CSV syntax error into the reader's error format.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %w", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}
