package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// idxPair writes n images of w x h pixels (pixel k of the stream is k%256)
// and their labels (i%10), gzip-compressed if gz.
func idxPair(n, w, h int, gz bool) (images, labels []byte) {
	var im, lb bytes.Buffer
	binary.Write(&im, binary.BigEndian, [4]uint32{0x803, uint32(n), uint32(h), uint32(w)})
	for i := 0; i < n*w*h; i++ {
		im.WriteByte(byte(i % 256))
	}
	binary.Write(&lb, binary.BigEndian, [2]uint32{0x801, uint32(n)})
	for i := 0; i < n; i++ {
		lb.WriteByte(byte(i % 10))
	}
	if !gz {
		return im.Bytes(), lb.Bytes()
	}
	return gzipBytes(im.Bytes()), gzipBytes(lb.Bytes())
}

func gzipBytes(b []byte) []byte {
	var out bytes.Buffer
	z := gzip.NewWriter(&out)
	z.Write(b)
	z.Close()
	return out.Bytes()
}

func TestReadIDXRoundTrip(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprint("gzip=", gz), func(t *testing.T) {
			const n, w, h = 3, 4, 2
			im, lb := idxPair(n, w, h, gz)
			x, raw, gw, gh, err := ReadIDX(bytes.NewReader(im), bytes.NewReader(lb), "tiny")
			if err != nil {
				t.Fatal(err)
			}
			if x.Rows != n || x.Cols != w*h || gw != w || gh != h || x.IsSparse() || fmt.Sprint(raw) != "[0 1 2]" {
				t.Fatalf("%dx%d image %dx%d labels %v", x.Rows, x.Cols, gw, gh, raw)
			}
			for k, v := range x.Data {
				if v != float64(k%256)/255 {
					t.Fatalf("pixel %d = %v", k, v)
				}
			}
		})
	}
}

func TestReadIDXErrors(t *testing.T) {
	im, lb := idxPair(3, 4, 2, false)
	edit := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	zim, _ := idxPair(3, 4, 2, true)
	corrupt := bytes.Clone(zim)
	corrupt[len(corrupt)-6] ^= 0xff // the CRC-32 in the gzip trailer
	for _, tc := range []struct {
		name   string
		im, lb []byte
		want   string
	}{
		{"empty images", nil, lb, "t: images: header: file too short"},
		{"short header", im[:10], lb, "t: images: header: file too short"},
		{"image magic", edit(im, 0, 0x801), lb, "t: images: magic 0x00000801, want 0x00000803"},
		{"float images", edit(im, 0, 0x0d03), lb, "t: images: magic"},
		{"no images", edit(im, 4, 0), lb, "t: images: 0 images of 2x4 is empty"},
		{"zero width", edit(im, 12, 0), lb, "t: images: 3 images of 2x0 is empty"},
		{"absurd count", edit(im, 4, 1<<30), lb, "t: images: 1073741824 images of 2x4 is empty or beyond 1000000000 pixels"},
		{"overflowing dims", edit(edit(edit(im, 4, 1<<31), 8, 1<<31), 12, 1<<31), lb, "t: images: 2147483648 images of 2147483648x2147483648"},
		{"just over the cap", edit(edit(edit(im, 4, 1000), 8, 1000), 12, 1001), lb, "t: images: 1000 images of 1000x1001 is empty or beyond 1000000000 pixels"},
		{"label magic", im, edit(lb, 0, 0x803), "t: labels: magic 0x00000803, want 0x00000801"},
		{"label count", im, edit(lb, 4, 2), "t: 2 labels for 3 images"},
		{"short labels header", im, lb[:5], "t: labels: header: file too short"},
		{"truncated images", im[:30], lb, "t: images: truncated: 14 of 24 bytes"},
		{"truncated labels", im, lb[:10], "t: labels: truncated: 2 of 3 bytes"},
		{"trailing image bytes", append(bytes.Clone(im), 7), lb, "t: images: data beyond the 24 bytes"},
		{"trailing label bytes", im, append(bytes.Clone(lb), 7), "t: labels: data beyond the 3 bytes"},
		{"bad gzip checksum", corrupt, lb, "t: images: gzip: invalid checksum"},
		{"bad gzip header", []byte{0x1f, 0x8b, 0, 0}, lb, "t: images: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, _, err := ReadIDX(bytes.NewReader(tc.im), bytes.NewReader(tc.lb), "t")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want prefix %q", err, tc.want)
			}
		})
	}
}

// A header announcing a billion pixels over a short stream must fail
// without allocating for them.
func TestReadIDXLyingHeaderAllocatesLittle(t *testing.T) {
	im, lb := idxPair(1, 1000, 1000, false)
	binary.BigEndian.PutUint32(im[4:], 1000)
	binary.BigEndian.PutUint32(lb[4:], 1000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, _, _, err := ReadIDX(bytes.NewReader(im), bytes.NewReader(lb), "t")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("got %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("allocated %d MB for a 1 MB stream", grew>>20)
	}
}
