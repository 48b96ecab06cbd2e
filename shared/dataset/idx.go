package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// maxIDXValues bounds the pixel count an idx header may announce.
const maxIDXValues = 1_000_000_000

// gunzipMaybe returns a reader that inflates gzip data and passes other
// data through, so that callers need not trust file names.
func gunzipMaybe(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// ReadIDX reads an idx3-ubyte image file and an idx1-ubyte label file (as
// MNIST and Fashion-MNIST ship them, gzip-compressed or not). It returns
// one row per image, pixels row-major and scaled by 1/255, the raw labels,
// and the image width and height.
func ReadIDX(images, labels io.Reader, name string) (x *Matrix, raw []float64, w, h int, err error) {
	pix, lab, rows, cols, err := readIDXBytes(images, labels, name)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	x = NewDense(len(lab), rows*cols)
	for i, p := range pix {
		x.Data[i] = float64(p) / 255
	}
	raw = make([]float64, len(lab))
	for i, l := range lab {
		raw[i] = float64(l)
	}
	return x, raw, cols, rows, nil
}

// readIDXBytes reads and checks an idx image/label pair, returning pixels
// and labels as stored.
func readIDXBytes(images, labels io.Reader, name string) (pix, lab []byte, rows, cols int, err error) {
	ir, err := gunzipMaybe(images)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: %w", name, err)
	}
	var ih [4]uint32
	if err := binary.Read(ir, binary.BigEndian, &ih); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: header: %w", name, noEOF(err))
	}
	if ih[0] != 0x803 {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: magic %#08x, want 0x00000803 (idx3 unsigned bytes)", name, ih[0])
	}
	n, r, c := uint64(ih[1]), uint64(ih[2]), uint64(ih[3])
	// Each factor is below 2^32, so n*r cannot overflow; test before *c.
	if n == 0 || r == 0 || c == 0 || n*r > maxIDXValues || n*r*c > maxIDXValues {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: %d images of %dx%d is empty or beyond %d pixels", name, n, r, c, maxIDXValues)
	}
	lr, err := gunzipMaybe(labels)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: %w", name, err)
	}
	var lh [2]uint32
	if err := binary.Read(lr, binary.BigEndian, &lh); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: header: %w", name, noEOF(err))
	}
	if lh[0] != 0x801 {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: magic %#08x, want 0x00000801 (idx1 unsigned bytes)", name, lh[0])
	}
	if uint64(lh[1]) != n {
		return nil, nil, 0, 0, fmt.Errorf("%s: %d labels for %d images", name, lh[1], n)
	}
	if pix, err = readExactly(ir, int(n*r*c)); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: images: %w", name, err)
	}
	if lab, err = readExactly(lr, int(n)); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: labels: %w", name, err)
	}
	return pix, lab, int(r), int(c), nil
}

// readExactly reads n bytes and then expects the end of the stream (which
// also makes gzip check its checksum). The buffer grows with the data
// read, so a lying header cannot make us allocate what is not there.
func readExactly(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, 1<<20))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(len(buf), n-len(buf)))
		}
		k, err := r.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+k]
		if errors.Is(err, io.EOF) && len(buf) < n {
			return nil, fmt.Errorf("truncated: %d of %d bytes after the header", len(buf), n)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	var one [1]byte
	k, err := io.ReadFull(r, one[:])
	switch {
	case k > 0:
		return nil, fmt.Errorf("data beyond the %d bytes the header announces", n)
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	return buf, nil
}

// noEOF turns a clean end of stream into an error that says so.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("file too short")
	}
	return err
}
