package table

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/schema"
)

// update rewrites the golden mappings under testdata/:
//
//	go test ./shared/table -run TestMappingGolden -update
var update = flag.Bool("update", false, "rewrite the golden mappings in testdata/")

// The federation of the tests. Its columns: age 0, glucose 1, smoker=never
// 2, smoker=former 3, smoker=current 4, bmi 5, blood_pressure 6, the
// intercept 7.
const testSchemaJSON = `{"id": "patient_id",
 "label": {"column": "outcome", "positive": ["yes"], "negative": ["no"]},
 "features": [{"name": "age"}, {"name": "glucose"},
  {"name": "smoker", "categories": ["never", "former", "current"]},
  {"name": "bmi"}, {"name": "blood_pressure"}],
 "missing": "mean"}`

// Schema variants, by name; the fuzz target picks them by number.
var variants = []string{"mean", "refuse", "shared", "no-negatives", "no-intercept", "na-listed"}

func testSchema(t testing.TB, variant string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse(strings.NewReader(testSchemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	switch variant {
	case "mean":
	case "refuse":
		s.Missing = schema.MissingRefuse
	case "shared":
		s.Labels = schema.LabelsShared
	case "no-negatives":
		s.Label.Negative = nil
	case "no-intercept":
		no := false
		s.Intercept = &no
	case "na-listed": // values that read as "no value" unless the schema lists them
		s.Missing = schema.MissingRefuse
		s.Label.Negative = []string{"no", "N/A"}
		s.Features[2].Categories = []string{"never", "former", "current", "none"}
	default:
		t.Fatalf("no schema variant %q", variant)
	}
	return s
}

// A semicolon export as a spreadsheet writes it: a byte order mark, CRLF,
// quoted cells holding the delimiter and a line break, decimal commas, the
// columns in an order of the file's own, a column the schema does not
// know, a blank label and blank rows at the end.
const semicolonFile = "\ufeff\"Smoker\";BMI;notes;patient_id;Outcome;glucose\r\n" +
	"never;\"22,5\";\"a; b\";p1;yes;5,5\r\n" +
	"Current;31;\"two\r\nlines\";p2;NO;NA\r\n" +
	"former;1e1;x;\"p;3\";;7\r\n" +
	"NEVER ; 20 ;;p4;Yes;-0,25\r\n" +
	";;;;;\r\n" +
	"\r\n"

var readCases = []struct {
	name, variant, in string
	delim             rune
	// want
	gotDelim    rune
	ids         []string
	lines       []int
	labels      []float64
	hasLabels   bool
	columns     []int
	x           [][]float64
	missing     []Cell
	labelValues []LabelValue
	uses        []Use
	held        []string
	notHeld     []string
	filled      int
}{
	{
		name: "semicolon", variant: "mean", in: semicolonFile,
		gotDelim: ';',
		ids:      []string{"p1", "p2", "p;3", "p4"},
		lines:    []int{2, 3, 5, 6},
		labels:   []float64{1, -1, 0, 1}, hasLabels: true,
		columns: []int{1, 2, 3, 4, 5},
		x: [][]float64{
			{5.5, 1, 0, 0, 22.5},
			{0, 0, 0, 1, 31},
			{7, 0, 1, 0, 10},
			{-0.25, 1, 0, 0, 20},
		},
		missing:     []Cell{{1, 0}},
		labelValues: []LabelValue{{"yes", 1, 2}, {"NO", -1, 1}},
		uses: []Use{{"Smoker", "feature smoker"}, {"BMI", "feature bmi"}, {"notes", "ignored"},
			{"patient_id", "id"}, {"Outcome", "label"}, {"glucose", "feature glucose"}},
		held:    []string{"glucose", "smoker", "bmi"},
		notHeld: []string{"age", "blood_pressure"},
		filled:  1,
	},
	{
		name: "tab", variant: "no-negatives",
		in:       "patient_id\tage\tblood_pressure\toutcome\n a \t40\t1,5\tYES\nb\t50\t120\t\nc\t1e-3\t0\tmaybe\n",
		gotDelim: '\t',
		ids:      []string{"a", "b", "c"},
		lines:    []int{2, 3, 4},
		labels:   []float64{1, 0, -1}, hasLabels: true,
		columns:     []int{0, 6},
		x:           [][]float64{{40, 1.5}, {50, 120}, {0.001, 0}},
		labelValues: []LabelValue{{"YES", 1, 1}, {"maybe", -1, 1}},
		uses:        []Use{{"patient_id", "id"}, {"age", "feature age"}, {"blood_pressure", "feature blood_pressure"}, {"outcome", "label"}},
		held:        []string{"age", "blood_pressure"},
		notHeld:     []string{"glucose", "smoker", "bmi"},
	},
	{
		name: "no label column", variant: "shared",
		in:       "patient_id,smoker,,age\nq1,former,x,\"1.5\"\nq2,?,y,NaN\n",
		gotDelim: ',',
		ids:      []string{"q1", "q2"},
		lines:    []int{2, 3},
		labels:   []float64{0, 0},
		columns:  []int{0, 2, 3, 4},
		x:        [][]float64{{1.5, 0, 1, 0}, {0, 0, 0, 0}},
		missing:  []Cell{{1, 0}},
		uses:     []Use{{"patient_id", "id"}, {"smoker", "feature smoker"}, {"", "ignored"}, {"age", "feature age"}},
		held:     []string{"age", "smoker"},
		notHeld:  []string{"glucose", "bmi", "blood_pressure"},
		filled:   2,
	},
	{
		// More commas than semicolons in the header: only the override
		// reads it right.
		name: "delimiter override", variant: "shared", delim: ';',
		in:       "patient_id;a,b,c,d;glucose\nz;1,2;3,25\n",
		gotDelim: ';',
		ids:      []string{"z"},
		lines:    []int{2},
		labels:   []float64{0},
		columns:  []int{1},
		x:        [][]float64{{3.25}},
		uses:     []Use{{"patient_id", "id"}, {"a,b,c,d", "ignored"}, {"glucose", "feature glucose"}},
		held:     []string{"glucose"},
		notHeld:  []string{"age", "smoker", "bmi", "blood_pressure"},
	},
	{
		name: "every feature, no intercept", variant: "no-intercept",
		in:       "blood_pressure,bmi,smoker,glucose,age,patient_id,outcome\n1,2,current,3,4,r,no\n",
		gotDelim: ',',
		ids:      []string{"r"},
		lines:    []int{2},
		labels:   []float64{-1}, hasLabels: true,
		columns:     []int{0, 1, 2, 3, 4, 5, 6},
		x:           [][]float64{{4, 3, 0, 0, 1, 2, 1}},
		labelValues: []LabelValue{{"no", -1, 1}},
		uses: []Use{{"blood_pressure", "feature blood_pressure"}, {"bmi", "feature bmi"}, {"smoker", "feature smoker"},
			{"glucose", "feature glucose"}, {"age", "feature age"}, {"patient_id", "id"}, {"outcome", "label"}},
		held: []string{"age", "glucose", "smoker", "bmi", "blood_pressure"},
	},
	{
		// A schema value that looks like "no value" is the schema's value.
		name: "listed values win over missing", variant: "na-listed",
		in:       "patient_id,outcome,smoker\n\"1\",n/a,NONE\n2,,never\n",
		gotDelim: ',',
		ids:      []string{"1", "2"},
		lines:    []int{2, 3},
		labels:   []float64{-1, 0}, hasLabels: true,
		columns:     []int{2, 3, 4, 5},
		x:           [][]float64{{0, 0, 0, 1}, {1, 0, 0, 0}},
		labelValues: []LabelValue{{"n/a", -1, 1}},
		uses:        []Use{{"patient_id", "id"}, {"outcome", "label"}, {"smoker", "feature smoker"}},
		held:        []string{"smoker"},
		notHeld:     []string{"age", "glucose", "bmi", "blood_pressure"},
	},
	{
		// Missing cells in file order unlike the schema's: still row-major.
		name: "missing cells in order", variant: "mean",
		in:       "patient_id,outcome,bmi,age\na,yes,,\nb,no,NA,1\n",
		gotDelim: ',',
		ids:      []string{"a", "b"},
		lines:    []int{2, 3},
		labels:   []float64{1, -1}, hasLabels: true,
		columns:     []int{0, 5},
		x:           [][]float64{{0, 0}, {1, 0}},
		missing:     []Cell{{0, 0}, {0, 1}, {1, 1}},
		labelValues: []LabelValue{{"yes", 1, 1}, {"no", -1, 1}},
		uses:        []Use{{"patient_id", "id"}, {"outcome", "label"}, {"bmi", "feature bmi"}, {"age", "feature age"}},
		held:        []string{"age", "bmi"},
		notHeld:     []string{"glucose", "smoker", "blood_pressure"},
		filled:      3,
	},
}

func TestRead(t *testing.T) {
	for _, tc := range readCases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSchema(t, tc.variant)
			tb, err := Read(strings.NewReader(tc.in), "in.csv", s, Options{Delimiter: tc.delim})
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, tb, s)
			m := tb.Mapping
			for _, c := range []struct {
				what      string
				got, want any
			}{
				{"delimiter", tb.Delimiter, tc.gotDelim},
				{"ids", tb.IDs, tc.ids},
				{"lines", tb.Lines, tc.lines},
				{"labels", tb.Labels, tc.labels},
				{"has labels", tb.HasLabels, tc.hasLabels},
				{"columns", tb.Columns, tc.columns},
				{"x", rows(tb), tc.x},
				{"missing", tb.Missing, tc.missing},
				{"label values", m.LabelValues, tc.labelValues},
				{"uses", m.Uses, tc.uses},
				{"held", m.Held, tc.held},
				{"not held", m.NotHeld, tc.notHeld},
				{"filled", m.Filled, tc.filled},
				{"rows", m.Rows, len(tc.ids)},
				{"file", m.File + tb.File, "in.csvin.csv"},
				{"mapping delimiter", m.Delimiter, delimiterName(tc.gotDelim)},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s: got %#v, want %#v", c.what, c.got, c.want)
				}
			}
		})
	}
}

func TestReadSemicolonMapping(t *testing.T) {
	tb, err := Read(strings.NewReader(semicolonFile), "hospital_a.csv", testSchema(t, "mean"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := tb.Mapping
	if m.IDColumn != "patient_id" || m.LabelColumn != "Outcome" || m.Labelled != 3 || m.Rows != 4 {
		t.Fatalf("mapping %+v", m)
	}
	js, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"file":"hospital_a.csv"`, `"delimiter":"semicolon"`, `"rows":4`, `"labelled":3`,
		`"id_column":"patient_id"`, `"label_column":"Outcome"`, `"label_values":[{"text":"yes","class":1,"count":2}`,
		`"columns":[{"column":"Smoker","use":"feature smoker"}`, `"held":["glucose","smoker","bmi"]`,
		`"not_held":["age","blood_pressure"]`, `"filled":1`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("JSON lacks %s:\n%s", key, js)
		}
	}
	// No label column: the label fields are left out.
	tb, err = Read(strings.NewReader("patient_id,age\na,1\n"), "b.csv", testSchema(t, "shared"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if js, _ := json.Marshal(&tb.Mapping); strings.Contains(string(js), "label_") {
		t.Errorf("JSON of a file without labels: %s", js)
	}
}

func TestReadDelimiterFound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rune
	}{
		{"patient_id,outcome,age\na,yes,1\n", ','},
		{"patient_id;outcome;age\na;yes;1\n", ';'},
		{"patient_id\toutcome\tage\na\tyes\t1\n", '\t'},
		{"patient_id,\"x;y;z\",age\na,q,1\n", ','},           // ';' inside quotes does not count
		{"\n\r\npatient_id;outcome;age\na;yes;1\n", ';'},     // leading empty lines
		{"patient_id;outcome,age;glucose\na;yes,1;2\n", ';'}, // 2 against 1
		{"patient_id,age;x;y,glucose\na,1;2;3,4\n", ','},     // a tie: comma first
		{"patient_id\tage\tglucose;x\na\t1\t2;3\n", '\t'},    // tab over semicolon
	} {
		s := testSchema(t, "shared")
		tb, err := Read(strings.NewReader(tc.in), "d.csv", s, Options{})
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if tb.Delimiter != tc.want {
			t.Errorf("%q: delimiter %q, want %q", tc.in, tb.Delimiter, tc.want)
		}
	}
}

func TestParseDelimiter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rune
		ok   bool
	}{
		{"", 0, true}, {",", ',', true}, {"comma", ',', true}, {" Comma ", ',', true},
		{";", ';', true}, {"semicolon", ';', true}, {"SEMICOLON", ';', true},
		{"tab", '\t', true}, {"\t", '\t', true}, {`\t`, '\t', true}, {"TAB", '\t', true},
		{"|", 0, false}, {"pipe", 0, false}, {",;", 0, false}, {"space", 0, false},
	} {
		got, err := ParseDelimiter(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDelimiter(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "want comma, semicolon or tab") {
			t.Errorf("ParseDelimiter(%q): %v", tc.in, err)
		}
	}
}

const header = "patient_id,outcome,age,smoker,notes\n"

var errorCases = []struct {
	name, variant, in string
	want              string // the message starts with "bad.csv:<line>:" and holds this
}{
	{"empty file", "mean", "", "bad.csv:1: an empty file: no header row"},
	{"only a byte order mark and empty lines", "mean", "\ufeff\n\r\n\n", "bad.csv:1: an empty file"},
	{"no id column", "mean", "id,outcome,age,\na,yes,1,\n", `bad.csv:1: no "patient_id" column (the schema's id); the header has "id", "outcome", "age", (column 4)`},
	{"no id column, wrong delimiter", "mean", "patient_id;outcome;age\na;yes;1\n", `bad.csv:1: no "patient_id" column (the schema's id); the header has "patient_id;outcome;age" (one column: the file is read as comma-separated)`},
	{"no id column, one column", "mean", "\"patient_id;outcome;age\"\na\n", `the header has "patient_id;outcome;age" (one column: the file is read as comma-separated)`},
	{"two columns for one feature", "mean", "patient_id,Age,outcome, age \np,1,yes,2\n", `bad.csv:1: column "Age" (2) and column "age" (4) both name the schema's "age"`},
	{"two id columns", "mean", "Patient_ID,age,outcome,patient_id\np,1,yes,q\n", `bad.csv:1: column "Patient_ID" (1) and column "patient_id" (4) both name the schema's "patient_id"`},
	{"two label columns", "mean", "patient_id,age,outcome,OUTCOME\np,1,yes,no\n", `bad.csv:1: column "outcome" (3) and column "OUTCOME" (4) both name the schema's "outcome"`},
	{"too few fields", "mean", header + "p1,yes,1,never,x\np2,no,2\n", `bad.csv:3: column "smoker" (4): missing: the row has 3 fields, the header 5`},
	{"too many fields", "mean", header + "p1,yes,1,never,x,y\n", `bad.csv:2: column 6: beyond the header: the row has 6 fields, the header 5`},
	{"empty id", "mean", header + "p1,yes,1,never,x\n ,no,2,never,x\n", `bad.csv:3: column "patient_id" (1): no record id (" ")`},
	{"id NA", "mean", header + "NA,no,2,never,x\n", `bad.csv:2: column "patient_id" (1): no record id ("NA")`},
	{"duplicate id", "mean", header + "p1,yes,1,never,x\np2,no,2,never,x\n\" p1\",no,3,never,x\n", `bad.csv:4: column "patient_id" (1): id "p1" is already the id of line 2`},
	{"label not listed", "mean", header + "p1,maybe,1,never,x\n", `bad.csv:2: column "outcome" (2): label "maybe" is not a value the schema lists (positive "yes"; negative "no")`},
	{"not a number", "mean", header + "p1,yes,abc,never,x\n", `bad.csv:2: column "age" (3): "abc" is not a number`},
	{"infinity", "mean", header + "p1,yes,-Inf,never,x\n", `bad.csv:2: column "age" (3): "-Inf" is not a finite number`},
	{"overflow", "mean", header + "p1,yes,1e999,never,x\n", `bad.csv:2: column "age" (3): "1e999" is not a finite number`},
	{"decimal comma with comma delimiter", "mean", header + "p1,yes,\"1,5\",never,x\n", `bad.csv:2: column "age" (3): "1,5" is not a number`},
	{"decimal comma and dot", "mean", "patient_id;outcome;age\np1;yes;1.000,5\n", `bad.csv:2: column "age" (3): "1.000,5" is not a number`},
	{"category not listed", "mean", header + "p1,yes,1,sometimes,x\n", `bad.csv:2: column "smoker" (4): "sometimes" is not a category the schema lists ("never", "former", "current")`},
	{"missing number, refuse", "refuse", header + "p1,yes,NA,never,x\n", `bad.csv:2: column "age" (3): a missing value ("NA"), and the schema's missing rule is "refuse"`},
	{"missing category, refuse", "refuse", header + "p1,yes,1,,x\n", `bad.csv:2: column "smoker" (4): a missing value (""), and the schema's missing rule is "refuse"`},
	{"no features", "mean", "patient_id,outcome,notes\np,yes,x\n", `bad.csv:1: none of the schema's features is a column here (it lists age, glucose, smoker, bmi, blood_pressure)`},
	{"no label column, every holder", "mean", "patient_id,age\np,1\n", `bad.csv:1: no "outcome" column: this federation needs the label in every file (labels "every-holder")`},
	{"no data rows", "mean", header, "bad.csv:1: a header but no data rows"},
	{"only blank rows", "mean", header + ",,,,\r\n\n , ,,,\n", "bad.csv:1: a header but no data rows"},
	{"bare quote", "mean", header + "p1,ye\"s,1,never,x\n", `bad.csv:2: bare " in non-quoted-field`},
	{"unterminated quote", "mean", header + "p1,\"yes,1,never,x\n", `bad.csv:2: extraneous or missing " in quoted-field`},
	// A cell's own line, after a quoted line break earlier in the row.
	{"line of a cell", "mean", "patient_id,notes,outcome,age\np1,\"a\nb\",yes,zz\n", `bad.csv:3: column "age" (4): "zz" is not a number`},
	{"bad delimiter option", "mean", header, `bad.csv: delimiter '|': want comma, semicolon or tab`},
}

// errorDelimiters are the cases' Options.Delimiter, where not 0.
var errorDelimiters = map[string]rune{"no id column, wrong delimiter": ',', "bad delimiter option": '|'}

func TestReadErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Delimiter: errorDelimiters[tc.name]}
			_, err := Read(strings.NewReader(tc.in), "bad.csv", testSchema(t, tc.variant), o)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "bad.csv:") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %v\nwant it to hold\n  %s", err, tc.want)
			}
		})
	}
}

func TestMappingGolden(t *testing.T) {
	for _, tc := range []struct{ golden, variant, file, in string }{
		{"semicolon", "mean", "hospital_a.csv", semicolonFile},
		{"tab", "no-negatives", "hospital_b.tsv", readCases[1].in},
		{"no_label", "shared", "hospital_c.csv", "patient_id,smoker,\" odd name \",age,blood_pressure,glucose,bmi\nq1,former,x,1,2,3,4\nq2,?,y,NaN,5,6,7\n"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			tb, err := Read(strings.NewReader(tc.in), tc.file, testSchema(t, tc.variant), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := tb.Mapping.String()
			path := filepath.Join("testdata", tc.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./shared/table -run TestMappingGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("mapping text changed (-update rewrites %s):\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}

// rows returns X as a slice of rows.
func rows(tb *Table) [][]float64 {
	var out [][]float64
	for i := range tb.X.Rows {
		_, v := tb.X.Row(i)
		out = append(out, append([]float64(nil), v...))
	}
	return out
}

// checkInvariants checks what every successful Read promises.
func checkInvariants(t testing.TB, tb *Table, s *schema.Schema) {
	t.Helper()
	n := len(tb.IDs)
	if n == 0 || len(tb.Lines) != n || len(tb.Labels) != n || tb.X == nil || tb.X.Rows != n {
		t.Fatalf("%d ids, %d lines, %d labels, X %+v", n, len(tb.Lines), len(tb.Labels), tb.X)
	}
	if tb.X.IsSparse() || tb.X.Cols != len(tb.Columns) || tb.X.Validate() != nil {
		t.Fatalf("X %dx%d sparse %v for %d columns", tb.X.Rows, tb.X.Cols, tb.X.IsSparse(), len(tb.Columns))
	}
	if len(tb.Columns) == 0 {
		t.Fatal("no columns")
	}
	for k, c := range tb.Columns {
		if c < 0 || c >= s.NumColumns() || c == s.InterceptColumn() || (k > 0 && tb.Columns[k-1] >= c) {
			t.Fatalf("columns %v (%d in all, intercept %d)", tb.Columns, s.NumColumns(), s.InterceptColumn())
		}
	}
	seen := map[string]bool{}
	labelled := 0
	for i, id := range tb.IDs {
		if id == "" || id != strings.TrimSpace(id) || seen[id] {
			t.Fatalf("id %q (row %d)", id, i)
		}
		seen[id] = true
		if y := tb.Labels[i]; y != 1 && y != -1 && y != 0 {
			t.Fatalf("label %v", y)
		} else if y != 0 {
			labelled++
		}
		if !tb.HasLabels && tb.Labels[i] != 0 {
			t.Fatal("a label without a label column")
		}
		if i > 0 && tb.Lines[i] <= tb.Lines[i-1] {
			t.Fatalf("lines %v", tb.Lines)
		}
	}
	for _, v := range tb.X.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("value %v", v)
		}
	}
	prev := -1
	for _, c := range tb.Missing {
		if c.Row < 0 || c.Row >= n || c.Col < 0 || c.Col >= len(tb.Columns) || tb.X.At(c.Row, c.Col) != 0 || c.Row*len(tb.Columns)+c.Col <= prev {
			t.Fatalf("missing %v", tb.Missing)
		}
		prev = c.Row*len(tb.Columns) + c.Col
	}
	m := tb.Mapping
	counted := 0
	for _, v := range m.LabelValues {
		if v.Class != 1 && v.Class != -1 || v.Count < 1 {
			t.Fatalf("label values %+v", m.LabelValues)
		}
		counted += v.Count
	}
	if m.Rows != n || m.Labelled != labelled || counted != labelled || m.Filled < len(tb.Missing) ||
		len(m.Held)+len(m.NotHeld) != len(s.Features) || (m.LabelColumn != "") != tb.HasLabels || m.IDColumn == "" {
		t.Fatalf("mapping %+v for %d rows, %d labelled, %d missing", m, n, labelled, len(tb.Missing))
	}
	if s.MissingRule() == schema.MissingRefuse && m.Filled != 0 {
		t.Fatalf("filled %d under %q", m.Filled, schema.MissingRefuse)
	}
	if !tb.HasLabels && s.LabelPolicy() == schema.LabelsEveryHolder {
		t.Fatal("no label column under every-holder")
	}
}

func FuzzRead(f *testing.F) {
	for _, tc := range readCases {
		f.Add(tc.in, uint8(0), uint8(0))
	}
	for i, tc := range errorCases {
		f.Add(tc.in, uint8(i), uint8(i))
	}
	f.Add("patient_id;outcome;smoker\n\"a\"\"b\";yes;former\n", uint8(2), uint8(2))
	f.Fuzz(func(t *testing.T, in string, variant, delim uint8) {
		s := testSchema(t, variants[int(variant)%len(variants)])
		d := []rune{0, ',', ';', '\t'}[delim%4]
		tb, err := Read(strings.NewReader(in), "fuzz.csv", s, Options{Delimiter: d})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		checkInvariants(t, tb, s)
		if d != 0 && tb.Delimiter != d {
			t.Fatalf("delimiter %q, asked %q", tb.Delimiter, d)
		}
		_ = tb.Mapping.String()
	})
}
