// Package table reads one party's own spreadsheet export against the
// federation's schema: which of the file's columns are the id, the label
// and which of the schema's features, and the rows as the federation's
// feature columns.
package table

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/schema"
)

// Options tune Read.
type Options struct {
	// Delimiter is ',', ';' or '\t'. 0 finds it from the header line (the
	// most frequent of the three outside quotes; ',' if none).
	Delimiter rune
}

// ParseDelimiter reads a --delimiter flag value: ",", ";", "tab", `\t` (or
// a tab itself), "comma" or "semicolon", in any case; "" is 0 (find it).
func ParseDelimiter(s string) (rune, error) {
	if s == "\t" {
		return '\t', nil
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return 0, nil
	case ",", "comma":
		return ',', nil
	case ";", "semicolon":
		return ';', nil
	case "tab", `\t`:
		return '\t', nil
	}
	return 0, fmt.Errorf("delimiter %q: want comma, semicolon or tab", s)
}

// delimiterName is the Mapping's word for a delimiter.
func delimiterName(r rune) string {
	switch r {
	case ',':
		return "comma"
	case ';':
		return "semicolon"
	case '\t':
		return "tab"
	}
	return strconv.QuoteRune(r)
}

// Table is one party's file read against the schema.
type Table struct {
	File      string
	Delimiter rune
	IDs       []string  // trimmed id cells
	Lines     []int     // 1-based line of each row in the file
	Labels    []float64 // +1, -1, or 0 where the row has no label (blank cell, or the file has no label column)
	HasLabels bool      // the file has the schema's label column
	// Columns are the federation's columns this file holds: indexes into
	// s.Columns(), ascending; never the intercept.
	Columns []int
	// X is dense, len(IDs) x len(Columns): raw numbers; a categorical
	// column 0/1; a missing cell 0.
	X *dataset.Matrix
	// Missing lists the numeric cells that were missing (only under the
	// missing rule "mean"), row-major. A missing categorical cell leaves
	// its category columns 0 and is only counted in Mapping.Filled.
	Missing []Cell
	Mapping Mapping
}

// Cell is one cell of X; Col indexes Table.Columns.
type Cell struct{ Row, Col int }

// missing reports whether a cell is what spreadsheets and statistics
// packages write for "no value".
func missing(cell string) bool {
	switch schema.Key(cell) {
	case "", "na", "n/a", "nan", "null", "none", "?":
		return true
	}
	return false
}

// The roles of a file's columns.
const (
	roleIgnored = iota
	roleID
	roleLabel
	roleFeature
)

type column struct {
	role int
	feat int // index into s.Features
	off  int // the feature's first column in Table.Columns
}

const bom = "\ufeff"

// Read reads a party's CSV export (a header row, then one row per record)
// against the schema. Header names and cell values are compared with
// schema.Key; columns the schema does not name are ignored. Errors read
// "<name>:<line>: column "<header>" (<position>): <what>".
func Read(r io.Reader, name string, s *schema.Schema, o Options) (*Table, error) {
	if s == nil {
		return nil, fmt.Errorf("%s: no schema", name)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	br := bufio.NewReader(r)
	if b, _ := br.Peek(len(bom)); string(b) == bom {
		br.Discard(len(bom))
	}
	delim := o.Delimiter
	var in io.Reader = br
	switch delim {
	case 0:
		head, err := headerLine(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		delim = sniff(head)
		in = io.MultiReader(bytes.NewReader(head), br)
	case ',', ';', '\t':
	default:
		return nil, fmt.Errorf("%s: delimiter %q: want comma, semicolon or tab", name, delim)
	}
	cr := csv.NewReader(in)
	cr.Comma = delim
	cr.FieldsPerRecord = -1 // counted here, to name the column
	cr.ReuseRecord = true

	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:1: an empty file: no header row", name)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	header = slices.Clone(header)
	for i, h := range header {
		header[i] = strings.TrimSpace(h)
	}
	hline, _ := cr.FieldPos(0)
	t := &Table{File: name, Delimiter: delim}
	m := &t.Mapping
	m.File, m.Delimiter = name, delimiterName(delim)

	// Which column is what.
	features := map[string]int{}
	for i, f := range s.Features {
		features[schema.Key(f.Name)] = i
	}
	cols := make([]column, len(header))
	claimed := map[string]int{}
	idCol, labelCol := -1, -1
	held := map[int]int{} // schema feature -> file column
	for c, h := range header {
		k := schema.Key(h)
		use := "ignored"
		var target string
		switch f, isFeat := features[k]; {
		case k == "":
		case k == schema.Key(s.ID):
			cols[c].role, idCol, use, target = roleID, c, "id", s.ID
		case k == schema.Key(s.Label.Column):
			cols[c].role, labelCol, use, target = roleLabel, c, "label", s.Label.Column
		case isFeat:
			cols[c] = column{role: roleFeature, feat: f}
			held[f] = c
			use, target = "feature "+s.Features[f].Name, s.Features[f].Name
		}
		if target != "" {
			if prev, dup := claimed[k]; dup {
				return nil, fmt.Errorf("%s:%d: %s and %s both name the schema's %q", name, hline, colRef(header, prev), colRef(header, c), target)
			}
			claimed[k] = c
		}
		m.Uses = append(m.Uses, Use{Column: h, Use: use})
	}
	if idCol < 0 {
		return nil, fmt.Errorf("%s:%d: no %q column (the schema's id); the header has %s%s", name, hline, s.ID, listHeader(header), delimiterHint(header, delim))
	}
	m.IDColumn = header[idCol]
	if len(held) == 0 {
		var names []string
		for _, f := range s.Features {
			names = append(names, f.Name)
		}
		return nil, fmt.Errorf("%s:%d: none of the schema's features is a column here (it lists %s)", name, hline, strings.Join(names, ", "))
	}
	if labelCol < 0 && s.LabelPolicy() == schema.LabelsEveryHolder {
		return nil, fmt.Errorf("%s:%d: no %q column: this federation needs the label in every file (labels %q)", name, hline, s.Label.Column, schema.LabelsEveryHolder)
	}
	if labelCol >= 0 {
		t.HasLabels = true
		m.LabelColumn = header[labelCol]
	}
	g := 0 // the feature's first column in s.Columns()
	for i, f := range s.Features {
		w := max(1, len(f.Categories))
		if c, ok := held[i]; ok {
			cols[c].off = len(t.Columns)
			for j := range w {
				t.Columns = append(t.Columns, g+j)
			}
			m.Held = append(m.Held, f.Name)
		} else {
			m.NotHeld = append(m.NotHeld, f.Name)
		}
		g += w
	}
	// The schema's label values and the held features' categories, by key.
	labelOf := map[string]float64{}
	for _, v := range s.Label.Positive {
		labelOf[schema.Key(v)] = 1
	}
	for _, v := range s.Label.Negative {
		labelOf[schema.Key(v)] = -1
	}
	categories := map[int]map[string]int{}
	for f := range held {
		if cs := s.Features[f].Categories; cs != nil {
			cm := map[string]int{}
			for j, c := range cs {
				cm[schema.Key(c)] = j
			}
			categories[f] = cm
		}
	}
	mean := s.MissingRule() == schema.MissingMean
	firstLabel := map[string]int{} // label key -> index in m.LabelValues

	// The rows.
	width := len(t.Columns)
	var data []float64
	idLine := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		if blank(rec) {
			continue // an empty spreadsheet row exports as delimiters only
		}
		at := func(c int) int { l, _ := cr.FieldPos(c); return l }
		line := at(0)
		if len(rec) < len(header) {
			return nil, fmt.Errorf("%s:%d: %s: missing: the row has %d fields, the header %d", name, at(len(rec)-1), colRef(header, len(rec)), len(rec), len(header))
		}
		if len(rec) > len(header) {
			return nil, fmt.Errorf("%s:%d: %s: beyond the header: the row has %d fields, the header %d", name, at(len(header)), colRef(header, len(header)), len(rec), len(header))
		}
		id := strings.TrimSpace(rec[idCol])
		if missing(id) {
			return nil, fmt.Errorf("%s:%d: %s: no record id (%q)", name, at(idCol), colRef(header, idCol), rec[idCol])
		}
		if prev, dup := idLine[id]; dup {
			return nil, fmt.Errorf("%s:%d: %s: id %q is already the id of line %d", name, at(idCol), colRef(header, idCol), id, prev)
		}
		idLine[id] = line
		row := len(t.IDs)
		y := 0.0
		if labelCol >= 0 {
			cell := strings.TrimSpace(rec[labelCol])
			k := schema.Key(cell)
			v, listed := labelOf[k]
			switch {
			case listed:
				y = v
			case missing(cell):
			case len(s.Label.Negative) == 0:
				y = -1
			default:
				return nil, fmt.Errorf("%s:%d: %s: label %q is not a value the schema lists (positive %s; negative %s)", name, at(labelCol), colRef(header, labelCol), cell, quoteList(s.Label.Positive), quoteList(s.Label.Negative))
			}
			if y != 0 {
				if i, seen := firstLabel[k]; seen {
					m.LabelValues[i].Count++
				} else {
					firstLabel[k] = len(m.LabelValues)
					m.LabelValues = append(m.LabelValues, LabelValue{Text: cell, Class: int(y), Count: 1})
				}
				m.Labelled++
			}
		}
		base, missed := len(data), len(t.Missing)
		data = slices.Grow(data, width)[:base+width]
		clear(data[base:])
		for c, col := range cols {
			if col.role != roleFeature {
				continue
			}
			cell := rec[c]
			cm, categorical := categories[col.feat]
			if categorical {
				if j, ok := cm[schema.Key(cell)]; ok {
					data[base+col.off+j] = 1
					continue
				}
			}
			if missing(cell) {
				if !mean {
					return nil, fmt.Errorf("%s:%d: %s: a missing value (%q), and the schema's missing rule is %q", name, at(c), colRef(header, c), cell, s.MissingRule())
				}
				if !categorical {
					t.Missing = append(t.Missing, Cell{Row: row, Col: col.off})
				}
				m.Filled++
				continue
			}
			if categorical {
				return nil, fmt.Errorf("%s:%d: %s: %q is not a category the schema lists (%s)", name, at(c), colRef(header, c), strings.TrimSpace(cell), quoteList(s.Features[col.feat].Categories))
			}
			v, err := number(cell, delim)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %q %v", name, at(c), colRef(header, c), cell, err)
			}
			data[base+col.off] = v
		}
		slices.SortFunc(t.Missing[missed:], func(a, b Cell) int { return a.Col - b.Col }) // the file's column order may differ
		t.IDs = append(t.IDs, id)
		t.Lines = append(t.Lines, line)
		t.Labels = append(t.Labels, y)
	}
	if len(t.IDs) == 0 {
		return nil, fmt.Errorf("%s:%d: a header but no data rows", name, hline)
	}
	t.X = &dataset.Matrix{Rows: len(t.IDs), Cols: width, Data: data}
	m.Rows = len(t.IDs)
	return t, nil
}

// number parses a numeric cell. With ';' or tab separating the fields a
// spreadsheet in many locales writes a decimal comma: "1,5" is 1.5.
func number(cell string, delim rune) (float64, error) {
	v := strings.TrimSpace(cell)
	if delim != ',' && strings.Count(v, ",") == 1 && !strings.Contains(v, ".") {
		v = strings.Replace(v, ",", ".", 1)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, errors.New("is not a number")
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("is not a finite number")
	}
	return f, nil
}

// headerLine reads up to the end of the first non-empty line outside
// quotes, the text the delimiter is found from.
func headerLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	quoted, empty := false, true
	for {
		b, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		buf = append(buf, b)
		switch {
		case b == '"':
			quoted, empty = !quoted, false
		case b == '\n' && !quoted:
			if !empty {
				return buf, nil
			}
		case b != '\r':
			empty = false
		}
	}
}

// sniff picks the most frequent of ',', ';' and tab outside quotes; a tie
// goes to the earlier of the three.
func sniff(head []byte) rune {
	var n [3]int
	quoted := false
	for _, b := range head {
		switch b {
		case '"':
			quoted = !quoted
		case ',', ';', '\t':
			if !quoted {
				n[strings.IndexByte(",;\t", b)]++
			}
		}
	}
	best := 0
	for i := 1; i < 3; i++ {
		if n[i] > n[best] {
			best = i
		}
	}
	return rune(",;\t"[best])
}

// delimiterHint suggests the delimiter may be wrong when the whole header
// came out as one column holding another delimiter.
func delimiterHint(header []string, delim rune) string {
	if len(header) == 1 && strings.ContainsAny(header[0], ",;\t") {
		return fmt.Sprintf(" (one column: the file is read as %s-separated)", delimiterName(delim))
	}
	return ""
}

func blank(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// colRef names a file column by its header text and 1-based position.
func colRef(header []string, c int) string {
	if c < len(header) && header[c] != "" {
		return fmt.Sprintf("column %q (%d)", header[c], c+1)
	}
	return fmt.Sprintf("column %d", c+1)
}

// listHeader lists the header's names, the first 20 of a wide one.
func listHeader(header []string) string {
	const most = 20
	var q []string
	for c, h := range header[:min(len(header), most)] {
		if h == "" {
			q = append(q, fmt.Sprintf("(column %d)", c+1))
		} else {
			q = append(q, strconv.Quote(h))
		}
	}
	out := strings.Join(q, ", ")
	if len(header) > most {
		out += fmt.Sprintf(" and %d more", len(header)-most)
	}
	return out
}

func quoteList(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// csvError names the file and line of a CSV syntax error.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %w (byte %d of the line)", name, pe.Line, pe.Err, pe.Column)
	}
	return fmt.Errorf("%s: %w", name, err)
}
