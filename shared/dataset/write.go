package dataset

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteLIBSVM writes the samples of d that keep selects (all if nil) as
// plain LIBSVM text, "<+1|-1> idx:val ..." with 1-based indexes and zeros
// left out: no comments or header, so that LIBLINEAR's tools read it too.
// Values are written exactly (strconv 'g' -1). It returns the count.
func WriteLIBSVM(w io.Writer, d *Dataset, keep func(i int) bool) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	n := 0
	for i := 0; i < d.N(); i++ {
		if keep != nil && !keep(i) {
			continue
		}
		line = line[:0]
		if d.Y[i] > 0 {
			line = append(line, "+1"...)
		} else {
			line = append(line, "-1"...)
		}
		idx, val := d.X.Row(i)
		for k, v := range val {
			if v == 0 {
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return n, fmt.Errorf("write libsvm: sample %s feature %d is %v", d.IDs[i], k+1, v)
			}
			j := k
			if d.X.IsSparse() {
				j = int(idx[k])
			}
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(j)+1, 10)
			line = append(line, ':')
			line = strconv.AppendFloat(line, v, 'g', -1, 64)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return n, fmt.Errorf("write libsvm: %w", err)
		}
		n++
	}
	return n, bw.Flush()
}
