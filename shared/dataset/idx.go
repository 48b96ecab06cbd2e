package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
)

// maxIDXValues bounds what an idx header may ask us to allocate.
const maxIDXValues = 1 << 30

// gunzipMaybe returns a reader that inflates gzip data and passes other
// data through.
func gunzipMaybe(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// ReadIDX reads an idx3-ubyte image file and an idx1-ubyte label file (as
// MNIST and Fashion-MNIST ship them, gzip or not): pixels scaled by 1/255
// and the raw labels.
func ReadIDX(images, labels io.Reader, name string) (x *Matrix, raw []float64, w, h int, err error) {
	ir, err := gunzipMaybe(images)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: %w", name, err)
	}
	var ih [4]uint32
	if err := binary.Read(ir, binary.BigEndian, &ih); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: header: %w", name, err)
	}
	if ih[0] != 0x803 {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: magic %#x, want 0x803 (idx3 unsigned bytes)", name, ih[0])
	}
	n, rows, cols := int(ih[1]), int(ih[2]), int(ih[3])
	if n == 0 || rows == 0 || cols == 0 || uint64(ih[1])*uint64(ih[2])*uint64(ih[3]) > maxIDXValues {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: %d images of %dx%d is empty or too large", name, n, rows, cols)
	}
	lr, err := gunzipMaybe(labels)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: %w", name, err)
	}
	var lh [2]uint32
	if err := binary.Read(lr, binary.BigEndian, &lh); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: header: %w", name, err)
	}
	if lh[0] != 0x801 {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: magic %#x, want 0x801 (idx1 unsigned bytes)", name, lh[0])
	}
	if int(lh[1]) != n {
		return nil, nil, 0, 0, fmt.Errorf("%s: %d labels for %d images", name, lh[1], n)
	}
	pix := make([]byte, n*rows*cols)
	if _, err := io.ReadFull(ir, pix); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: %w", name, err)
	}
	lab := make([]byte, n)
	if _, err := io.ReadFull(lr, lab); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: %w", name, err)
	}
	x = NewDense(n, rows*cols)
	for i, p := range pix {
		x.Data[i] = float64(p) / 255
	}
	raw = make([]float64, n)
	for i, l := range lab {
		raw[i] = float64(l)
	}
	return x, raw, cols, rows, nil
}
