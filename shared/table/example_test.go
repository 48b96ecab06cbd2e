package table_test

import (
	"fmt"
	"strings"

	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/table"
)

func ExampleRead() {
	s, err := schema.Parse(strings.NewReader(`{"id": "patient_id",
		"label": {"column": "outcome", "positive": ["yes"], "negative": ["no"]},
		"features": [{"name": "age"}, {"name": "glucose"}, {"name": "bmi"}, {"name": "blood_pressure"}],
		"labels": "shared-with-co-holders", "missing": "mean"}`))
	if err != nil {
		panic(err)
	}
	// A semicolon export with decimal commas, no label column and a
	// column of notes the federation does not use.
	file := "patient_id;Glucose;BMI;notes\n" +
		"p1;5,5;22,5;\"first visit; fasting\"\n" +
		"p2;6,1;NA;\n"
	t, err := table.Read(strings.NewReader(file), "hospital_b.csv", s, table.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Print(t.Mapping.String())
	fmt.Println(t.Columns, t.X.Data, t.Missing)
	// Output:
	// hospital_b.csv: 2 rows (semicolon-separated), 0 labelled (no label column)
	//   patient_id -> id
	//   Glucose -> feature glucose
	//   BMI -> feature bmi
	//   notes -> ignored
	// you do not hold: age, blood_pressure
	// missing: the federation's mean fills 1 cell
	// [1 2] [5.5 22.5 6.1 0] [{1 1}]
}

func ExampleParseDelimiter() {
	for _, v := range []string{"", "semicolon", `\t`, "|"} {
		d, err := table.ParseDelimiter(v)
		fmt.Printf("%q %q %v\n", v, d, err)
	}
	// Output:
	// "" '\x00' <nil>
	// "semicolon" ';' <nil>
	// "\\t" '\t' <nil>
	// "|" '\x00' delimiter "|": want comma, semicolon or tab
}
