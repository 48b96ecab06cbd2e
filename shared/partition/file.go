package partition

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
)

const blockMagic = "# hyfed-block v1"

// WriteLIBSVM writes a block as LIBSVM text: a header line naming the
// federation's feature count and the block's columns, then one line per
// sample with 1-based global feature indexes and the record id as comment.
func WriteLIBSVM(w io.Writer, b *Block) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s features=%d cols=%s\n", blockMagic, b.NumFeatures, ranges(b.Features))
	for r := range b.IDs {
		bw.WriteString(label(b.Y[r]))
		idx, val := b.X.Row(r)
		for c, v := range val {
			j := c
			if idx != nil {
				j = int(idx[c])
			}
			if v == 0 {
				continue
			}
			fmt.Fprintf(bw, " %d:%s", b.Features[j]+1, strconv.FormatFloat(v, 'g', -1, 64))
		}
		bw.WriteString(" # " + b.IDs[r])
		if b.Heldout[r] {
			bw.WriteString(" heldout")
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WriteCSV writes a block as CSV: the header line, then id, label,
// heldout and one column f<index> per feature (1-based global indexes).
func WriteCSV(w io.Writer, b *Block) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s features=%d\nid,label,heldout", blockMagic, b.NumFeatures)
	for _, f := range b.Features {
		fmt.Fprintf(bw, ",f%d", f+1)
	}
	bw.WriteByte('\n')
	for r := range b.IDs {
		if strings.ContainsAny(b.IDs[r], ",\"\n") {
			return fmt.Errorf("record id %q cannot go into CSV unquoted", b.IDs[r])
		}
		h := "0"
		if b.Heldout[r] {
			h = "1"
		}
		bw.WriteString(b.IDs[r] + "," + label(b.Y[r]) + "," + h)
		row := make([]float64, len(b.Features))
		idx, val := b.X.Row(r)
		for c, v := range val {
			if idx != nil {
				row[idx[c]] = v
			} else {
				row[c] = v
			}
		}
		for _, v := range row {
			bw.WriteString("," + strconv.FormatFloat(v, 'g', -1, 64))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func label(y float64) string {
	if y > 0 {
		return "+1"
	}
	return "-1"
}

// ranges writes ascending 0-based indexes as 1-based compact ranges.
func ranges(f []int) string {
	var parts []string
	for i := 0; i < len(f); {
		j := i
		for j+1 < len(f) && f[j+1] == f[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(f[i]+1))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", f[i]+1, f[j]+1))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func parseRanges(s string, m int) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(p, "-")
		lo, err := strconv.Atoi(a)
		if err != nil {
			return nil, fmt.Errorf("column range %q", p)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(b); err != nil {
				return nil, fmt.Errorf("column range %q", p)
			}
		}
		if lo < 1 || hi < lo || hi > m || (len(out) > 0 && lo-1 <= out[len(out)-1]) {
			return nil, fmt.Errorf("column range %q out of order or outside 1..%d", p, m)
		}
		if hi-lo > 10_000_000 {
			return nil, fmt.Errorf("column range %q too large", p)
		}
		for j := lo; j <= hi; j++ {
			out = append(out, j-1)
		}
	}
	return out, nil
}

// ReadBlock reads a block file written by WriteLIBSVM or WriteCSV. Errors
// read "<name>:<line>: field <k or column>: <what>".
func ReadBlock(r io.Reader, name string) (*Block, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	first, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:1: %w", name, err)
	}
	head := strings.Fields(first)
	if !strings.HasPrefix(first, blockMagic) {
		return nil, fmt.Errorf("%s:1: not a hyfed block file (want a first line %q; write one with `hyfed partition`)", name, blockMagic)
	}
	attrs := map[string]string{}
	for _, f := range head[3:] {
		k, v, _ := strings.Cut(f, "=")
		attrs[k] = v
	}
	m, err := strconv.Atoi(attrs["features"])
	if err != nil || m < 1 || m > 100_000_000 {
		return nil, fmt.Errorf("%s:1: field features: %q is not a feature count", name, attrs["features"])
	}
	if cols, ok := attrs["cols"]; ok {
		feats, err := parseRanges(cols, m)
		if err != nil {
			return nil, fmt.Errorf("%s:1: field cols: %v", name, err)
		}
		return readLIBSVMBlock(br, name, m, feats)
	}
	return readCSVBlock(br, name, m)
}

func readLIBSVMBlock(br *bufio.Reader, name string, m int, feats []int) (*Block, error) {
	b := &Block{NumFeatures: m, Features: feats, X: dataset.NewSparseBuilder(len(feats))}
	local := make(map[int]int32, len(feats))
	for c, f := range feats {
		local[f] = int32(c)
	}
	seen := map[string]bool{}
	var idx []int32
	var val []float64
	for line := 2; ; line++ {
		text, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if text == "" && err != nil {
			break
		}
		t := strings.TrimSpace(text)
		if t != "" {
			body, comment, ok := strings.Cut(t, "#")
			cf := strings.Fields(comment)
			if !ok || len(cf) == 0 {
				return nil, fmt.Errorf("%s:%d: no record id comment (# id)", name, line)
			}
			id := cf[0]
			if seen[id] {
				return nil, fmt.Errorf("%s:%d: record id %q appears twice", name, line, id)
			}
			seen[id] = true
			held := len(cf) > 1 && cf[1] == "heldout"
			fields := strings.Fields(body)
			if len(fields) == 0 {
				return nil, fmt.Errorf("%s:%d: field 1: no label", name, line)
			}
			y, perr := strconv.ParseFloat(fields[0], 64)
			if perr != nil || (y != 1 && y != -1) {
				return nil, fmt.Errorf("%s:%d: field 1: label %q is not +1 or -1", name, line, fields[0])
			}
			idx, val = idx[:0], val[:0]
			for k, f := range fields[1:] {
				a, v, ok := strings.Cut(f, ":")
				j, e1 := strconv.Atoi(a)
				x, e2 := strconv.ParseFloat(v, 64)
				if !ok || e1 != nil || e2 != nil || math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("%s:%d: field %d: %q is not index:finite-value", name, line, k+2, f)
				}
				c, ok := local[j-1]
				if !ok {
					return nil, fmt.Errorf("%s:%d: field %d: feature %d is not among the block's columns", name, line, k+2, j)
				}
				if len(idx) > 0 && c <= idx[len(idx)-1] {
					return nil, fmt.Errorf("%s:%d: field %d: feature %d does not ascend", name, line, k+2, j)
				}
				idx = append(idx, c)
				val = append(val, x)
			}
			b.X.AppendRow(idx, val)
			b.IDs = append(b.IDs, id)
			b.Y = append(b.Y, y)
			b.Heldout = append(b.Heldout, held)
		}
		if err != nil {
			break
		}
	}
	if len(b.IDs) == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	return b, b.Validate()
}

func readCSVBlock(br *bufio.Reader, name string, m int) (*Block, error) {
	header, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:2: %w", name, err)
	}
	cols := strings.Split(strings.TrimSpace(header), ",")
	if len(cols) < 4 || cols[0] != "id" || cols[1] != "label" || cols[2] != "heldout" {
		return nil, fmt.Errorf("%s:2: header must start id,label,heldout and name feature columns f<index>", name)
	}
	b := &Block{NumFeatures: m}
	for _, c := range cols[3:] {
		j, err := strconv.Atoi(strings.TrimPrefix(c, "f"))
		if !strings.HasPrefix(c, "f") || err != nil || j < 1 || j > m || (len(b.Features) > 0 && j-1 <= b.Features[len(b.Features)-1]) {
			return nil, fmt.Errorf("%s:2: field %s: not an ascending feature column f1..f%d", name, c, m)
		}
		b.Features = append(b.Features, j-1)
	}
	var data []float64
	seen := map[string]bool{}
	for line := 3; ; line++ {
		text, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if text == "" && err != nil {
			break
		}
		if t := strings.TrimSpace(text); t != "" {
			f := strings.Split(t, ",")
			if len(f) != len(cols) {
				return nil, fmt.Errorf("%s:%d: %d fields, the header has %d", name, line, len(f), len(cols))
			}
			if f[0] == "" || seen[f[0]] {
				return nil, fmt.Errorf("%s:%d: field id: %q is empty or repeated", name, line, f[0])
			}
			seen[f[0]] = true
			y, perr := strconv.ParseFloat(f[1], 64)
			if perr != nil || (y != 1 && y != -1) {
				return nil, fmt.Errorf("%s:%d: field label: %q is not +1 or -1", name, line, f[1])
			}
			if f[2] != "0" && f[2] != "1" {
				return nil, fmt.Errorf("%s:%d: field heldout: %q is not 0 or 1", name, line, f[2])
			}
			for c, v := range f[3:] {
				x, perr := strconv.ParseFloat(v, 64)
				if perr != nil || math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("%s:%d: field %s: %q is not a finite number", name, line, cols[c+3], v)
				}
				data = append(data, x)
			}
			b.IDs = append(b.IDs, f[0])
			b.Y = append(b.Y, y)
			b.Heldout = append(b.Heldout, f[2] == "1")
		}
		if err != nil {
			break
		}
	}
	if len(b.IDs) == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	b.X = &dataset.Matrix{Rows: len(b.IDs), Cols: len(b.Features), Data: data}
	return b, b.Validate()
}

// WriteFiles writes one file per block into dir (client-<k>.libsvm or
// .csv) and returns the paths.
func WriteFiles(dir, format string, blocks []Block) ([]string, error) {
	if format != "libsvm" && format != "csv" {
		return nil, fmt.Errorf("format %q: want libsvm or csv", format)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	width := len(strconv.Itoa(len(blocks) - 1))
	var paths []string
	for k := range blocks {
		p := filepath.Join(dir, fmt.Sprintf("client-%0*d.%s", width, k, format))
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		if format == "csv" {
			err = WriteCSV(f, &blocks[k])
		} else {
			err = WriteLIBSVM(f, &blocks[k])
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
