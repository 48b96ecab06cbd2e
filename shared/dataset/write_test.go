package dataset

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteLIBSVM: what it writes reads back to the same samples, values
// exact, the sparse reader's feature count aside (it ends at the last
// non-zero).
func TestWriteLIBSVM(t *testing.T) {
	d, err := ReadCSV(strings.NewReader("label,a,b,c\n1,0.1,0,1e-300\n0,0,0,0\n1,-2.5,3,0.3333333333333333\n"), "t.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := WriteLIBSVM(&buf, d, func(i int) bool { return i != 1 })
	if err != nil || n != 2 {
		t.Fatalf("%d %v", n, err)
	}
	want := "+1 1:0.1 3:1e-300\n+1 1:-2.5 2:3 3:0.3333333333333333\n"
	if buf.String() != want {
		t.Fatalf("wrote\n%s\nwant\n%s", buf.String(), want)
	}
	back, err := ReadLIBSVM(&buf, "back", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for r, i := range []int{0, 2} {
		for j := 0; j < 3; j++ {
			if back.X.At(r, j) != d.X.At(i, j) || back.Y[r] != d.Y[i] {
				t.Fatalf("sample %d feature %d: %v, wrote %v", i, j, back.X.At(r, j), d.X.At(i, j))
			}
		}
	}
}
