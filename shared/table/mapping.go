package table

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Mapping is what the page and the CLI show before anything is sent: how
// the file's columns were read against the schema.
type Mapping struct {
	File        string `json:"file"`
	Delimiter   string `json:"delimiter"` // "comma", "semicolon", "tab"
	Rows        int    `json:"rows"`
	Labelled    int    `json:"labelled"`
	IDColumn    string `json:"id_column"` // the file's header text for it
	LabelColumn string `json:"label_column,omitempty"`
	// LabelValues: each distinct label text (as first seen), its class and
	// count, in order of first appearance.
	LabelValues []LabelValue `json:"label_values,omitempty"`
	Uses        []Use        `json:"columns"`  // every file column in file order
	Held        []string     `json:"held"`     // schema feature names this file holds, schema order
	NotHeld     []string     `json:"not_held"` // schema feature names it does not hold
	Filled      int          `json:"filled"`   // missing cells the federation's mean will fill
}

// LabelValue is one distinct label text of the file; Class is +1 or -1.
type LabelValue struct {
	Text  string `json:"text"`
	Class int    `json:"class"`
	Count int    `json:"count"`
}

// Use says what one file column is: "id", "label", "feature <schema
// name>" or "ignored".
type Use struct {
	Column string `json:"column"`
	Use    string `json:"use"`
}

// String is the mapping as plain text for the CLI, one line per column.
func (m *Mapping) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%s-separated), %d labelled", m.File, count(m.Rows, "row"), m.Delimiter, m.Labelled)
	if m.LabelColumn == "" {
		b.WriteString(" (no label column)")
	}
	b.WriteByte('\n')
	for c, u := range m.Uses {
		fmt.Fprintf(&b, "  %s -> %s", columnText(u.Column, c), u.Use)
		if u.Use == "label" {
			var vs []string
			for _, v := range m.LabelValues {
				vs = append(vs, fmt.Sprintf("%q = %+d (%s)", v.Text, v.Class, count(v.Count, "row")))
			}
			if blank := m.Rows - m.Labelled; blank > 0 {
				vs = append(vs, fmt.Sprintf("blank (%s)", count(blank, "row")))
			}
			b.WriteString(": " + strings.Join(vs, ", "))
		}
		b.WriteByte('\n')
	}
	if len(m.NotHeld) > 0 {
		fmt.Fprintf(&b, "you do not hold: %s\n", strings.Join(m.NotHeld, ", "))
	}
	if m.Filled > 0 {
		fmt.Fprintf(&b, "missing: the federation's mean fills %s\n", count(m.Filled, "cell"))
	}
	return b.String()
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// columnText shows a header name as it is, quoted only where spaces at its
// ends or unprintable characters would hide something.
func columnText(h string, c int) string {
	if h == "" {
		return fmt.Sprintf("(column %d)", c+1)
	}
	if strings.TrimSpace(h) != h || strings.Contains(h, " -> ") || strings.IndexFunc(h, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(h)
	}
	return h
}
