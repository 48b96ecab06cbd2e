package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadMNISTJSONFixture(t *testing.T) {
	x, raw, ids, err := ReadMNISTJSON("testdata/mnist")
	if err != nil {
		t.Fatal(err)
	}
	// Even digits hold one image, odd digits two.
	if x.Rows != 15 || x.Cols != 784 || len(raw) != 15 || len(ids) != 15 {
		t.Fatalf("%dx%d, %d labels, %d ids", x.Rows, x.Cols, len(raw), len(ids))
	}
	if ids[0] != "digit0-0" || ids[1] != "digit1-0" || ids[2] != "digit1-1" || ids[14] != "digit9-1" {
		t.Errorf("ids %v", ids)
	}
	if raw[0] != 0 || raw[2] != 1 || raw[14] != 9 {
		t.Errorf("labels %v", raw)
	}
	// Digit d has a stroke in column d+3; the second image of a digit
	// starts with 0.5.
	if x.At(0, 28*4+3) != 1 || x.At(14, 28*4+12) != 1 || x.At(2, 0) != 0.5 || x.At(1, 0) != 0 {
		t.Errorf("pixels wrong")
	}
}

func TestReadMNISTJSONErrors(t *testing.T) {
	image := strings.TrimSuffix(strings.Repeat("0.5,", 784), ",")
	for _, tc := range []struct{ name, body, want string }{
		{"short", `{"data":[0.5,0.2]}`, "3.json: 2 values is not a whole, non-zero number of 28x28 images"},
		{"empty", `{"data":[]}`, "3.json: 0 values"},
		{"null", `{"data":null}`, "3.json: no \"data\" array"},
		{"no data", `{"pixels":[1]}`, "3.json: no \"data\" array"},
		{"not json", `{"data":[0.5,`, "3.json: not mnist digit JSON"},
		{"string value", `{"data":["0.5"]}`, "3.json: not mnist digit JSON"},
		{"out of range", `{"data":[` + image[:len(image)-3] + `1.5]}`, "3.json: value 783 (1.5) is not a pixel in [0,1]"},
		{"negative", `{"data":[-0.1,` + image[4:] + `]}`, "3.json: value 0 (-0.1)"},
		{"huge", `{"data":[1e999]}`, "3.json: not mnist digit JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for d := 0; d < 10; d++ {
				body := `{"data":[` + image + `]}`
				if d == 3 {
					body = tc.body
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", d)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, _, _, err := ReadMNISTJSON(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, _, _, err := ReadMNISTJSON(t.TempDir()); err == nil || !strings.Contains(err.Error(), "0.json") {
		t.Errorf("empty dir: %v", err)
	}
}
