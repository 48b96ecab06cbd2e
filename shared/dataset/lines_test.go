package dataset

import (
	"reflect"
	"strings"
	"testing"
)

// TestLines: both file readers record each sample's line, skipping
// comments, blanks and the CSV header, so that later checks can name it.
func TestLines(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		read       func(string) (*Dataset, error)
		want       []int
	}{
		{"libsvm", "# head\n1 1:1\n\n-1 2:1 # b\n1 1:2\n", func(s string) (*Dataset, error) {
			return ReadLIBSVM(strings.NewReader(s), "f", Options{})
		}, []int{2, 4, 5}},
		{"csv", "label,x\n1,1\n\n0,2\n", func(s string) (*Dataset, error) {
			return ReadCSV(strings.NewReader(s), "f.csv", Options{})
		}, []int{2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.read(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Lines, tc.want) {
				t.Fatalf("lines %v, want %v", d.Lines, tc.want)
			}
		})
	}
}
