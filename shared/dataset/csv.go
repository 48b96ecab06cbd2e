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

// ReadCSV reads a CSV file with a header row: an optional "id" column, a
// "label" column, an optional "heldout" column (0/1/true/false), and
// feature columns. Errors read "<name>:<line>: field <column>: <what>".
func ReadCSV(r io.Reader, name string, opt Options) (*Dataset, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = 0
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:1: no header row", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	idCol, labelCol, heldCol := -1, -1, -1
	var featCols []int
	var featNames []string
	for c, h := range header {
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "id":
			idCol = c
		case "label":
			labelCol = c
		case "heldout":
			heldCol = c
		default:
			featCols = append(featCols, c)
			featNames = append(featNames, h)
		}
	}
	if labelCol < 0 {
		return nil, fmt.Errorf("%s:1: no \"label\" column in the header", name)
	}
	if len(featCols) == 0 {
		return nil, fmt.Errorf("%s:1: no feature columns in the header", name)
	}
	var data, raw []float64
	var ids []string
	var held []bool
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: field %d: %v", name, pe.Line, pe.Column, pe.Err)
			}
			return nil, fmt.Errorf("%s: row %d: %w", name, row, err)
		}
		line, _ := cr.FieldPos(0)
		y, perr := strconv.ParseFloat(strings.TrimSpace(rec[labelCol]), 64)
		if perr != nil || math.IsNaN(y) || math.IsInf(y, 0) {
			return nil, fmt.Errorf("%s:%d: field label: %q is not a finite number", name, line, rec[labelCol])
		}
		raw = append(raw, y)
		id := fmt.Sprintf("row-%d", row)
		if idCol >= 0 {
			id = strings.TrimSpace(rec[idCol])
			if id == "" {
				return nil, fmt.Errorf("%s:%d: field id: empty", name, line)
			}
		}
		ids = append(ids, id)
		if heldCol >= 0 {
			switch strings.ToLower(strings.TrimSpace(rec[heldCol])) {
			case "1", "true", "yes":
				held = append(held, true)
			case "0", "false", "no", "":
				held = append(held, false)
			default:
				return nil, fmt.Errorf("%s:%d: field heldout: %q is not 0/1/true/false", name, line, rec[heldCol])
			}
		}
		for k, c := range featCols {
			v, perr := strconv.ParseFloat(strings.TrimSpace(rec[c]), 64)
			if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: field %s: %q is not a finite number", name, line, featNames[k], rec[c])
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
	d := &Dataset{Name: name, X: &Matrix{Rows: len(raw), Cols: len(featCols), Data: data}, Y: y, IDs: ids}
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
