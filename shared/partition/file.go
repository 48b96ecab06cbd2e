package partition

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/hyfed/hyfed/shared/dataset"
)

// Block files. Both formats start with a magic line so that a participant
// cannot load a plain data set (with local feature numbers) by mistake:
//
//	# hyfed-block v1 features=<M> cols=<ranges>      LIBSVM
//	<label> <idx>:<val> ... # <record id>[ heldout]
//
//	# hyfed-block v1 features=<M>                    CSV
//	id,label,heldout,f<idx>,...
//	<id>,<label>,<0|1>,<val>,...
//
// Feature indexes are 1-based and global (the federation's numbering), so
// the blocks of one federation agree on what feature 785 is. cols lists the
// block's features as ascending ranges ("1-14,29-42,785"); LIBSVM lines omit
// zeros, so cols is what tells a block's features apart from its non-zeros.
// Values are written with strconv 'g' -1 and read back exactly.
const blockMagic = "# hyfed-block v1"

// maxBlockColumns bounds the columns a LIBSVM header may declare: a few
// bytes of ranges can ask for millions of features. 2^26 is more than the
// widest public LIBSVM sets (kdd2010: 29.9M). A variable so that the fuzz
// test can lower it.
var maxBlockColumns = 1 << 26

// Formats of WriteFiles.
const (
	FormatLIBSVM = "libsvm"
	FormatCSV    = "csv"
)

// WriteLIBSVM writes b as a LIBSVM block file: the magic line with the
// federation's feature count and the block's columns, then one line per
// sample with 1-based global feature indexes, zeros omitted, and the record
// id (and "heldout") as the comment.
func WriteLIBSVM(w io.Writer, b *Block) error {
	if err := writable(b, false); err != nil {
		return fmt.Errorf("write libsvm block: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	line := fmt.Appendf(nil, "%s features=%d cols=%s\n", blockMagic, b.NumFeatures, FormatRanges(b.Features))
	if _, err := bw.Write(line); err != nil {
		return fmt.Errorf("write libsvm block: %w", err)
	}
	for r := range b.IDs {
		line = appendLabel(line[:0], b.Y[r])
		idx, val := b.X.Row(r)
		for e, v := range val {
			if v == 0 {
				continue
			}
			c := e
			if b.X.IsSparse() {
				c = int(idx[e])
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("write libsvm block: sample %q feature %d is %v", b.IDs[r], b.Features[c]+1, v)
			}
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(b.Features[c])+1, 10)
			line = append(line, ':')
			line = strconv.AppendFloat(line, v, 'g', -1, 64)
		}
		line = append(line, " # "...)
		line = append(line, b.IDs[r]...)
		if b.Heldout[r] {
			line = append(line, " heldout"...)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("write libsvm block: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write libsvm block: %w", err)
	}
	return nil
}

// WriteCSV writes b as a CSV block file: the magic line, the header
// id,label,heldout,f<idx>... with 1-based global feature indexes, then one
// row per sample with every value, zeros included.
func WriteCSV(w io.Writer, b *Block) error {
	if err := writable(b, true); err != nil {
		return fmt.Errorf("write csv block: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	line := fmt.Appendf(nil, "%s features=%d\nid,label,heldout", blockMagic, b.NumFeatures)
	for _, f := range b.Features {
		line = append(line, ",f"...)
		line = strconv.AppendInt(line, int64(f)+1, 10)
	}
	line = append(line, '\n')
	if _, err := bw.Write(line); err != nil {
		return fmt.Errorf("write csv block: %w", err)
	}
	var buf []float64
	for r := range b.IDs {
		line = append(line[:0], b.IDs[r]...)
		line = append(line, ',')
		line = appendLabel(line, b.Y[r])
		if b.Heldout[r] {
			line = append(line, ",1"...)
		} else {
			line = append(line, ",0"...)
		}
		var val []float64
		val, buf = rowValues(b, r, buf)
		for c, v := range val {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("write csv block: sample %q feature %d is %v", b.IDs[r], b.Features[c]+1, v)
			}
			line = append(line, ',')
			line = strconv.AppendFloat(line, v, 'g', -1, 64)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("write csv block: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write csv block: %w", err)
	}
	return nil
}

// writable checks what the block formats cannot carry: ids must be
// non-empty words (the LIBSVM comment is split at spaces), and in CSV
// also free of commas and quotes (the reader does not unquote).
func writable(b *Block, csv bool) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if b.N() == 0 {
		return errors.New("block has no samples")
	}
	if b.NumFeatures > math.MaxInt32 {
		return fmt.Errorf("%d features: block files number features up to %d", b.NumFeatures, math.MaxInt32)
	}
	for _, id := range b.IDs {
		if msg := badID(id, csv); msg != "" {
			return fmt.Errorf("record id %q %s", id, msg)
		}
	}
	return nil
}

// badID says why id cannot be written, or "".
func badID(id string, csv bool) string {
	if id == "" {
		return "is empty"
	}
	if strings.IndexFunc(id, unicode.IsSpace) >= 0 {
		return "contains white space"
	}
	if csv && strings.ContainsAny(id, ",\"") {
		return "contains a comma or quote"
	}
	return ""
}

func appendLabel(line []byte, y float64) []byte {
	if y > 0 {
		return append(line, "+1"...)
	}
	return append(line, "-1"...)
}

// FormatRanges writes ascending 0-based indexes as 1-based compact ranges
// ("1-14,29-42,785"), as block files list their columns.
func FormatRanges(f []int) string {
	var sb strings.Builder
	for i := 0; i < len(f); {
		j := i
		for j+1 < len(f) && f[j+1] == f[j]+1 {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(f[i] + 1))
		if j > i {
			sb.WriteByte('-')
			sb.WriteString(strconv.Itoa(f[j] + 1))
		}
		i = j + 1
	}
	return sb.String()
}

// parseIndex reads a 1-based feature number: decimal digits only (no sign),
// 1 to MaxInt32.
func parseIndex(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v, v >= 1 && v <= math.MaxInt32
}

// parseRanges reads FormatRanges' output back as 0-based indexes, checking
// that the ranges ascend within 1..m.
func parseRanges(s string, m int) ([]int, error) {
	if s == "" {
		return []int{}, nil // a block may hold no feature (sparse grid, tiny rows)
	}
	type span struct{ lo, hi int }
	var spans []span
	total, prev := 0, 0
	for _, p := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(p, "-")
		lo, ok := parseIndex(a)
		hi, ok2 := lo, true
		if isRange {
			hi, ok2 = parseIndex(b)
		}
		switch {
		case !ok || !ok2:
			return nil, fmt.Errorf("%q is not a feature number or range a-b of numbers from 1", p)
		case hi < lo:
			return nil, fmt.Errorf("range %q runs backwards", p)
		case hi > m:
			return nil, fmt.Errorf("range %q goes past feature %d", p, m)
		case lo <= prev:
			return nil, fmt.Errorf("range %q does not ascend (previous ends at %d)", p, prev)
		}
		total += hi - lo + 1
		if total > maxBlockColumns {
			return nil, fmt.Errorf("more than %d columns", maxBlockColumns)
		}
		spans = append(spans, span{lo, hi})
		prev = hi
	}
	out := make([]int, 0, total)
	for _, sp := range spans {
		for j := sp.lo; j <= sp.hi; j++ {
			out = append(out, j-1)
		}
	}
	return out, nil
}

// lineReader yields the lines of a block file with their numbers. It reads
// with bufio.Reader.ReadString, which has no line length limit: a CSV row
// of a wide block is long.
type lineReader struct {
	br   *bufio.Reader
	name string
	no   int // number of the line last returned
	done bool
}

// next returns the next non-blank line, trimmed; ok is false at the end.
func (l *lineReader) next(skipBlank bool) (text string, ok bool, err error) {
	for !l.done {
		s, rerr := l.br.ReadString('\n')
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				return "", false, fmt.Errorf("%s:%d: %w", l.name, l.no+1, rerr)
			}
			l.done = true
			if s == "" {
				break
			}
		}
		l.no++
		text = strings.TrimSpace(s)
		if text != "" || !skipBlank {
			return text, true, nil
		}
	}
	return "", false, nil
}

// errf formats "<name>:<line>: field <field>: <what>" (no field part when
// field is "").
func (l *lineReader) errf(field, format string, args ...any) error {
	if field == "" {
		return fmt.Errorf("%s:%d: %s", l.name, l.no, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%s:%d: field %s: %s", l.name, l.no, field, fmt.Sprintf(format, args...))
}

// ReadBlock reads a block file written by WriteLIBSVM or WriteCSV; the
// magic line tells the format (cols= means LIBSVM). Everything is
// validated: the header, labels (+1 or -1), finite values, features within
// the declared columns and ascending, unique record ids. Blank lines are
// skipped. A LIBSVM block comes back with sparse storage, a CSV block with
// dense storage. Errors read "<name>:<line>: field <k or column>: <what>".
func ReadBlock(r io.Reader, name string) (*Block, error) {
	l := &lineReader{br: bufio.NewReader(r), name: name}
	first, ok, err := l.next(false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s:1: empty file, not a hyfed block file (want a first line %q)", name, blockMagic+" features=...")
	}
	tok := strings.Fields(first)
	if len(tok) < 3 || tok[0] != "#" || tok[1] != "hyfed-block" {
		return nil, l.errf("", "not a hyfed block file (want a first line %q; write blocks with `hyfed partition`)", blockMagic+" features=...")
	}
	if tok[2] != "v1" {
		return nil, l.errf("", "hyfed block version %q, this reader knows v1", tok[2])
	}
	attrs := map[string]string{}
	for _, t := range tok[3:] {
		k, v, ok := strings.Cut(t, "=")
		switch {
		case !ok:
			return nil, l.errf(k, "%q is not key=value", t)
		case k != "features" && k != "cols":
			return nil, l.errf(k, "unknown attribute (features and cols are known)")
		}
		if _, dup := attrs[k]; dup {
			return nil, l.errf(k, "given twice")
		}
		attrs[k] = v
	}
	fs, ok := attrs["features"]
	if !ok {
		return nil, l.errf("features", "missing: the first line must give features=<M>")
	}
	m, ok := parseIndex(fs)
	if !ok {
		return nil, l.errf("features", "%q is not a feature count from 1 to %d", fs, math.MaxInt32)
	}
	var b *Block
	if cols, ok := attrs["cols"]; ok {
		feats, err := parseRanges(cols, m)
		if err != nil {
			return nil, l.errf("cols", "%v", err)
		}
		b, err = readLIBSVMRows(l, m, feats)
		if err != nil {
			return nil, err
		}
	} else {
		if b, err = readCSVRows(l, m); err != nil {
			return nil, err
		}
	}
	if b.N() == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

func readLIBSVMRows(l *lineReader, m int, feats []int) (*Block, error) {
	b := &Block{NumFeatures: m, Features: feats, X: newSparse(len(feats))}
	seen := map[string]int{}
	var idx []int32
	var val []float64
	for {
		text, ok, err := l.next(true)
		if err != nil {
			return nil, err
		}
		if !ok {
			return b, nil
		}
		body, comment, hasComment := strings.Cut(text, "#")
		fields := strings.Fields(body)
		if len(fields) == 0 {
			return nil, l.errf("1", "no label")
		}
		y, err := parseLabel(fields[0])
		if err != nil {
			return nil, l.errf("1", "%v", err)
		}
		idx, val = idx[:0], val[:0]
		next := 0 // features[next:] may still come: entries ascend
		for e, f := range fields[1:] {
			field := strconv.Itoa(e + 2)
			a, v, ok := strings.Cut(f, ":")
			if !ok {
				return nil, l.errf(field, "%q is not index:value", f)
			}
			j, ok := parseIndex(a)
			if !ok {
				return nil, l.errf(field, "feature index %q is not a whole number from 1", a)
			}
			x, err := parseValue(v)
			if err != nil {
				return nil, l.errf(field, "%v", err)
			}
			if len(idx) > 0 && j-1 <= feats[idx[len(idx)-1]] {
				return nil, l.errf(field, "feature %d does not ascend (previous %d)", j, feats[idx[len(idx)-1]]+1)
			}
			c := next + sort.SearchInts(feats[next:], j-1)
			if c == len(feats) || feats[c] != j-1 {
				return nil, l.errf(field, "feature %d is not among the block's columns (cols= in line 1)", j)
			}
			next = c + 1
			idx = append(idx, int32(c))
			val = append(val, x)
		}
		cf := strings.Fields(comment)
		if !hasComment || len(cf) == 0 || len(cf) > 2 || (len(cf) == 2 && cf[1] != "heldout") {
			return nil, l.errf("id", "want the comment \"# <record id>\" or \"# <record id> heldout\" after the values")
		}
		id := cf[0]
		if prev, dup := seen[id]; dup {
			return nil, l.errf("id", "record id %q already on line %d", id, prev)
		}
		seen[id] = l.no
		b.X.AppendRow(idx, val)
		b.IDs = append(b.IDs, id)
		b.Y = append(b.Y, y)
		b.Heldout = append(b.Heldout, len(cf) == 2)
	}
}

func readCSVRows(l *lineReader, m int) (*Block, error) {
	const want = "id,label,heldout,f<index>,..."
	header, ok, err := l.next(true)
	if err != nil {
		return nil, err
	}
	if !ok {
		l.no++
		return nil, l.errf("", "missing CSV header %s (or cols= in line 1 for a LIBSVM block)", want)
	}
	cols := strings.Split(header, ",")
	if len(cols) < 3 || cols[0] != "id" || cols[1] != "label" || cols[2] != "heldout" {
		return nil, l.errf("", "missing CSV header: want %s (or cols= in line 1 for a LIBSVM block)", want)
	}
	b := &Block{NumFeatures: m, Features: make([]int, 0, len(cols)-3)}
	for c, name := range cols[3:] {
		j, ok := parseIndex(strings.TrimPrefix(name, "f"))
		field := strconv.Itoa(c + 4)
		switch {
		case !strings.HasPrefix(name, "f") || !ok:
			return nil, l.errf(field, "column %q is not f<feature number>", name)
		case j > m:
			return nil, l.errf(field, "column %q is past feature %d", name, m)
		case len(b.Features) > 0 && j-1 <= b.Features[len(b.Features)-1]:
			return nil, l.errf(field, "column %q does not ascend (previous f%d)", name, b.Features[len(b.Features)-1]+1)
		}
		b.Features = append(b.Features, j-1)
	}
	var data []float64
	seen := map[string]int{}
	for {
		text, ok, err := l.next(true)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		f := strings.Split(text, ",")
		if len(f) != len(cols) {
			return nil, l.errf("", "%d fields, the header has %d", len(f), len(cols))
		}
		id := f[0]
		if msg := badID(id, true); msg != "" {
			return nil, l.errf("id", "record id %q %s", id, msg)
		}
		if prev, dup := seen[id]; dup {
			return nil, l.errf("id", "record id %q already on line %d", id, prev)
		}
		seen[id] = l.no
		y, err := parseLabel(f[1])
		if err != nil {
			return nil, l.errf("label", "%v", err)
		}
		var held bool
		switch f[2] {
		case "0", "false":
		case "1", "true":
			held = true
		default:
			return nil, l.errf("heldout", "%q is not 0 or 1", f[2])
		}
		for c, v := range f[3:] {
			x, err := parseValue(v)
			if err != nil {
				return nil, l.errf(cols[c+3], "%v", err)
			}
			data = append(data, x)
		}
		b.IDs = append(b.IDs, id)
		b.Y = append(b.Y, y)
		b.Heldout = append(b.Heldout, held)
	}
	if data == nil {
		data = []float64{}
	}
	b.X = &dataset.Matrix{Rows: len(b.IDs), Cols: len(b.Features), Data: data}
	return b, nil
}

func parseLabel(s string) (float64, error) {
	y, err := strconv.ParseFloat(s, 64)
	if err != nil || (y != 1 && y != -1) {
		return 0, fmt.Errorf("label %q is not +1 or -1", s)
	}
	return y, nil
}

func parseValue(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("value %q is not a finite number", s)
	}
	return x, nil
}

// WriteFiles writes one file per block into dir, creating it:
// client-<k>.libsvm or client-<k>.csv with k counting from 0, zero-padded
// to the width of the client count so that the files sort in client order.
// It returns the paths in client order.
func WriteFiles(dir, format string, blocks []Block) ([]string, error) {
	write := WriteLIBSVM
	switch format {
	case FormatLIBSVM:
	case FormatCSV:
		write = WriteCSV
	default:
		return nil, fmt.Errorf("block file format %q: want %s or %s", format, FormatLIBSVM, FormatCSV)
	}
	if len(blocks) == 0 {
		return nil, errors.New("write block files: no blocks")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write block files: %w", err)
	}
	paths := make([]string, 0, len(blocks))
	for k := range blocks {
		p := clientPath(dir, k, len(blocks), format)
		f, err := os.Create(p)
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", k, err)
		}
		err = write(f, &blocks[k])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("client %d: %s: %w", k, p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// clientPath names block k of n in dir: client-<k>.<ext>, k zero-padded
// to the width of n so that the files sort in client order.
func clientPath(dir string, k, n int, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("client-%0*d.%s", len(strconv.Itoa(n)), k, ext))
}
