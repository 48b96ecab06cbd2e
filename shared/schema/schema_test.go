package schema

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

const example = `{"id": "patient_id",
 "label": {"column": "outcome", "positive": ["yes"], "negative": ["no"]},
 "features": [{"name": "age"}, {"name": "smoker", "categories": ["never", "current"]}],
 "intercept": true, "labels": "every-holder", "missing": "refuse", "heldout": 0.1}`

func TestParseExample(t *testing.T) {
	s, err := Parse(strings.NewReader(example))
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "patient_id" || s.Label.Column != "outcome" || len(s.Features) != 2 || !s.HasIntercept() ||
		s.LabelPolicy() != LabelsEveryHolder || s.MissingRule() != MissingRefuse || s.Heldout != 0.1 {
		t.Fatalf("%+v", s)
	}
}

func TestDefaults(t *testing.T) {
	s, err := Parse(strings.NewReader(`{"id": "id", "label": {"column": "y", "positive": ["1"]}, "features": [{"name": "x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasIntercept() || s.LabelPolicy() != LabelsEveryHolder || s.MissingRule() != MissingRefuse || s.Heldout != 0 {
		t.Fatalf("defaults: intercept %v labels %q missing %q heldout %v", s.HasIntercept(), s.LabelPolicy(), s.MissingRule(), s.Heldout)
	}
}

// schemaWith is a valid schema's JSON with one member replaced or added.
func schemaWith(member, value string) string {
	m := map[string]string{
		"id":       `"patient_id"`,
		"label":    `{"column": "outcome", "positive": ["yes"], "negative": ["no"]}`,
		"features": `[{"name": "age"}, {"name": "smoker", "categories": ["never", "current"]}]`,
	}
	m[member] = value
	var parts []string
	for _, k := range []string{"id", "label", "features", "intercept", "labels", "missing", "heldout", "extra"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%q: %s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",\n") + "}"
}

func TestParseRefusals(t *testing.T) {
	long := `"` + strings.Repeat("n", maxName+1) + `"`
	for _, tc := range []struct{ name, in, want string }{
		{"empty input", "", "schema: EOF"},
		{"not JSON", "id: x", "schema: line 1: invalid character"},
		{"syntax error line", "{\"id\": \"a\",\n\"label\": {,}}", "schema: line 2: invalid character ','"},
		{"type error line", "{\"id\": \"a\",\n\n \"label\": 5}", "schema: line 3: json: cannot unmarshal number"},
		{"unknown field", schemaWith("extra", "1"), `schema: json: unknown field "extra"`},
		{"unknown label field", schemaWith("label", `{"column": "y", "positive": ["1"], "negatives": ["0"]}`), `unknown field "negatives"`},
		{"text after", example + " x", "schema: text after the JSON object"},
		{"second object", example + " {}", "schema: text after the JSON object"},
		{"null", "null", "schema: id column: empty name"},
		{"too long", example + strings.Repeat(" ", MaxBytes), fmt.Sprintf("schema: more than %d bytes", MaxBytes)},
		{"no id", schemaWith("id", `""`), "schema: id column: empty name"},
		{"blank id", schemaWith("id", `"  "`), "schema: id column: empty name"},
		{"long id", schemaWith("id", long), fmt.Sprintf("schema: id column: a name of %d bytes (at most %d)", maxName+1, maxName)},
		{"no label column", schemaWith("label", `{"positive": ["1"]}`), "schema: label column: empty name"},
		{"label column is the id", schemaWith("label", `{"column": " Patient_ID", "positive": ["1"]}`), `schema: label column " Patient_ID": the name is already the id column`},
		{"no positive", schemaWith("label", `{"column": "y", "negative": ["0"]}`), `schema: label: "positive" lists no value`},
		{"empty positive list", schemaWith("label", `{"column": "y", "positive": []}`), `schema: label: "positive" lists no value`},
		{"empty positive", schemaWith("label", `{"column": "y", "positive": ["1", " "]}`), "schema: label: an empty positive value"},
		{"empty negative", schemaWith("label", `{"column": "y", "positive": ["1"], "negative": [""]}`), "schema: label: an empty negative value"},
		{"positive twice", schemaWith("label", `{"column": "y", "positive": ["yes", " YES"]}`), `schema: label: value " YES" is listed twice (positive and positive)`},
		{"positive and negative", schemaWith("label", `{"column": "y", "positive": ["yes"], "negative": ["Yes"]}`), `schema: label: value "Yes" is listed twice (positive and negative)`},
		{"no features", schemaWith("features", `[]`), "schema: no features"},
		{"features null", schemaWith("features", `null`), "schema: no features"},
		{"feature without name", schemaWith("features", `[{"name": "a"}, {"categories": ["x"]}]`), "schema: feature 2: empty name"},
		{"long feature name", schemaWith("features", `[{"name": `+long+`}]`), "schema: feature 1: a name of 257 bytes"},
		{"feature named as the id", schemaWith("features", `[{"name": "PATIENT_ID"}]`), `schema: feature 1 "PATIENT_ID": the name is already the id column`},
		{"feature named as the label", schemaWith("features", `[{"name": "outcome "}]`), `schema: feature 1 "outcome ": the name is already the label column`},
		{"feature twice", schemaWith("features", `[{"name": "age"}, {"name": "bmi"}, {"name": "Age"}]`), `schema: feature 3 "Age": the name is already the feature 1`},
		{"empty category list", schemaWith("features", `[{"name": "s", "categories": []}]`), `schema: feature "s": an empty category list`},
		{"empty category", schemaWith("features", `[{"name": "s", "categories": ["a", " "]}]`), `schema: feature "s": an empty category`},
		{"category twice", schemaWith("features", `[{"name": "s", "categories": ["a", "b", " A"]}]`), `schema: feature "s": category " A" listed twice`},
		{"label policy", schemaWith("labels", `"everyone"`), `schema: labels "everyone": want "every-holder" or "shared-with-co-holders"`},
		{"missing rule", schemaWith("missing", `"zero"`), `schema: missing "zero": want "refuse" or "mean"`},
		{"heldout negative", schemaWith("heldout", `-0.1`), "schema: heldout -0.1: want a share in [0, 0.9]"},
		{"heldout too big", schemaWith("heldout", `0.95`), "schema: heldout 0.95: want a share in [0, 0.9]"},
		{"heldout huge", schemaWith("heldout", `1e300`), "schema: heldout 1e+300"},
		{"intercept not a bool", schemaWith("intercept", `"yes"`), "cannot unmarshal string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("parsed %+v", s)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %v\nwant it to hold\n  %s", err, tc.want)
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestParseReadError(t *testing.T) {
	if _, err := Parse(failingReader{}); err == nil || err.Error() != "schema: disk on fire" {
		t.Fatalf("got %v", err)
	}
}

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"example", example},
		{"intercept off", schemaWith("intercept", "false")},
		{"shared labels", schemaWith("labels", `"shared-with-co-holders"`)},
		{"mean", schemaWith("missing", `"mean"`)},
		{"heldout bounds", schemaWith("heldout", "0.9")},
		{"name of maxName bytes", schemaWith("id", `"`+strings.Repeat("i", maxName)+`"`)},
		// The same text may be a label value, a category and a name: only
		// names share one space.
		{"values are not names", schemaWith("features", `[{"name": "yes", "categories": ["yes", "outcome"]}]`)},
		{"one category", schemaWith("features", `[{"name": "s", "categories": ["only"]}]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(tc.in)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestValidateOutsideJSON(t *testing.T) {
	ok := func() *Schema {
		return &Schema{ID: "id", Label: Label{Column: "y", Positive: []string{"1"}}, Features: []Feature{{Name: "x"}}}
	}
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	s := ok()
	s.Heldout = math.NaN()
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "heldout NaN") {
		t.Fatalf("NaN heldout: %v", err)
	}
	s = ok()
	s.Heldout = math.Inf(1)
	if err := s.Validate(); err == nil {
		t.Fatal("infinite heldout accepted")
	}
	// MaxColumns, reached with categories (the same 1024 in every feature,
	// so that the schema stays small).
	cats := make([]string, 1024)
	for i := range cats {
		cats[i] = fmt.Sprint("c", i)
	}
	s = ok()
	s.Features = nil
	for i := range MaxColumns / 1024 {
		s.Features = append(s.Features, Feature{Name: fmt.Sprint("f", i), Categories: cats})
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("exactly MaxColumns: %v", err)
	}
	if s.NumColumns() != MaxColumns+1 || s.InterceptColumn() != MaxColumns {
		t.Fatalf("NumColumns %d, InterceptColumn %d", s.NumColumns(), s.InterceptColumn())
	}
	s.Features = append(s.Features, Feature{Name: "one more"})
	if err := s.Validate(); err == nil || err.Error() != fmt.Sprintf("schema: more than %d feature columns", MaxColumns) {
		t.Fatalf("MaxColumns+1: %v", err)
	}
	s.Features[len(s.Features)-1] = Feature{Name: "more", Categories: cats}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("MaxColumns+1024: %v", err)
	}
}

func TestColumns(t *testing.T) {
	yes, no := true, false
	feats := []Feature{{Name: "age"}, {Name: "Smoker", Categories: []string{"never", "Current"}}, {Name: "bmi"}}
	for _, tc := range []struct {
		name      string
		features  []Feature
		intercept *bool
		want      []Column
		icol      int
	}{
		{"categories, intercept by default", feats, nil, []Column{
			{Name: "age", Feature: 0},
			{Name: "Smoker=never", Feature: 1, Category: "never"},
			{Name: "Smoker=Current", Feature: 1, Category: "Current"},
			{Name: "bmi", Feature: 2},
			{Name: InterceptName, Feature: -1},
		}, 4},
		{"intercept on", feats[:1], &yes, []Column{{Name: "age", Feature: 0}, {Name: InterceptName, Feature: -1}}, 1},
		{"intercept off", feats, &no, []Column{
			{Name: "age", Feature: 0},
			{Name: "Smoker=never", Feature: 1, Category: "never"},
			{Name: "Smoker=Current", Feature: 1, Category: "Current"},
			{Name: "bmi", Feature: 2},
		}, -1},
		{"categorical only, off", feats[1:2], &no, []Column{
			{Name: "Smoker=never", Feature: 0, Category: "never"},
			{Name: "Smoker=Current", Feature: 0, Category: "Current"},
		}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Schema{ID: "id", Label: Label{Column: "y", Positive: []string{"1"}}, Features: tc.features, Intercept: tc.intercept}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			got := s.Columns()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Columns()\n  %+v\nwant\n  %+v", got, tc.want)
			}
			if s.NumColumns() != len(tc.want) || s.InterceptColumn() != tc.icol || s.HasIntercept() != (tc.icol >= 0) {
				t.Fatalf("NumColumns %d InterceptColumn %d HasIntercept %v", s.NumColumns(), s.InterceptColumn(), s.HasIntercept())
			}
			for _, c := range got {
				if c.Categorical() != (c.Category != "") || (c.Feature < 0) != (c.Name == InterceptName) {
					t.Fatalf("column %+v", c)
				}
			}
		})
	}
}

func TestLabelOf(t *testing.T) {
	with := &Schema{Label: Label{Column: "y", Positive: []string{"Yes", "1"}, Negative: []string{"no", "0"}}}
	without := &Schema{Label: Label{Column: "y", Positive: []string{"Yes", "1"}}}
	for _, tc := range []struct {
		s    *Schema
		in   string
		y    float64
		ok   bool
		what string
	}{
		{with, "Yes", 1, true, "positive"},
		{with, " YES ", 1, true, "trimmed, case folded"},
		{with, "1", 1, true, "second positive"},
		{with, "no", -1, true, "negative"},
		{with, "\tNO", -1, true, "negative, case folded"},
		{with, "0", -1, true, "second negative"},
		{with, "maybe", 0, false, "listed in neither"},
		{with, "", 0, false, "empty"},
		{with, "  ", 0, false, "blank"},
		{without, "yes", 1, true, "positive"},
		{without, "maybe", -1, true, "anything else is negative"},
		{without, "0", -1, true, "anything else is negative"},
		{without, " ", 0, false, "blank"},
	} {
		y, ok := tc.s.LabelOf(tc.in)
		if y != tc.y || ok != tc.ok {
			t.Errorf("%s: LabelOf(%q) = %v, %v; want %v, %v", tc.what, tc.in, y, ok, tc.y, tc.ok)
		}
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"Age": "age", "  BMI\t": "bmi", "": "", "Smoker=Current": "smoker=current", "ÄRZTIN": "ärztin"} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(example)
	f.Add(schemaWith("intercept", "false"))
	f.Add(schemaWith("features", `[{"name": "s", "categories": ["a", "b", " A"]}]`))
	f.Add(schemaWith("label", `{"column": "y", "positive": ["yes"], "negative": ["Yes"]}`))
	f.Add(schemaWith("heldout", "0.9"))
	f.Add(`{"id": "a", "label": {"column": "b", "positive": ["x"]}, "features": [{"name": "c", "categories": ["1", "2"]}], "labels": "shared-with-co-holders", "missing": "mean"}`)
	f.Add("{\"id\": \"a\",\n\"label\": {,}}")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "schema: ") {
				t.Fatalf("error without the prefix: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed but does not validate: %v", err)
		}
		cols := s.Columns()
		if s.NumColumns() != len(cols) || len(cols) > MaxColumns+1 {
			t.Fatalf("NumColumns %d, %d columns", s.NumColumns(), len(cols))
		}
		if ic := s.InterceptColumn(); ic >= 0 && (ic != len(cols)-1 || cols[ic].Feature != -1) || ic < 0 && s.HasIntercept() {
			t.Fatalf("intercept column %d of %d", ic, len(cols))
		}
		for _, c := range cols {
			if c.Feature >= len(s.Features) {
				t.Fatalf("column %+v", c)
			}
		}
		for _, v := range append(append([]string{}, s.Label.Positive...), s.Label.Negative...) {
			if _, ok := s.LabelOf(v); !ok {
				t.Fatalf("listed label value %q refused", v)
			}
		}
	})
}

func TestColumnNamesAreDistinct(t *testing.T) {
	for _, text := range []string{
		`{"id":"i","label":{"column":"y","positive":["1"]},"features":[{"name":"a=b"},{"name":"a","categories":["b"]}]}`,
		`{"id":"i","label":{"column":"y","positive":["1"]},"features":[{"name":"(Intercept)"}]}`,
	} {
		if _, err := Parse(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), "two columns") {
			t.Errorf("%s: %v, want two columns named alike refused", text, err)
		}
	}
}

func TestTrailingTextRefused(t *testing.T) {
	for _, text := range []string{`{"id":"i","label":{"column":"y","positive":["1"]},"features":[{"name":"a"}]} }`, `{"id":"i","label":{"column":"y","positive":["1"]},"features":[{"name":"a"}]}]`} {
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("%s: parsed", text)
		}
	}
}

func TestDeclaredScale(t *testing.T) {
	s, err := Parse(strings.NewReader(`{"id":"i","label":{"column":"y","positive":["1"]},"features":[{"name":"px","scale":255},{"name":"age"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cols := s.Columns()
	if cols[0].Scale != 255 || cols[1].Scale != 0 {
		t.Fatalf("columns %+v", cols)
	}
	m := s.Clip(0, Declared(255, 1), 1)
	if got := m.Apply(510); got != 1 {
		t.Errorf("a value twice the declared scale trains as %v, want 1 (clipped)", got)
	}
	if got := m.Apply(127.5); got != 0.5 {
		t.Errorf("127.5 of 255 trains as %v", got)
	}
	if g := s.Divisor(32768); g != 1 {
		t.Errorf("divisor %v", g)
	}
	for _, bad := range []string{`"scale":-1`, `"scale":0.0,"categories":["a"],"x":1`, `"scale":1,"categories":["a"]`} {
		text := `{"id":"i","label":{"column":"y","positive":["1"]},"features":[{"name":"px",` + bad + `}]}`
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}
