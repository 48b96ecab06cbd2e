// Package vec holds the float64 kernels of the participant's hot loops (dot
// products, axpy, their sparse forms) in one fixed order of operations.
//
// Every kernel adds in the order of the plain loop it replaces, term by
// term, so it gives the same bits natively and in WebAssembly, and the
// same bits as before it existed: encrypted runs equal plaintext runs and a
// browser participant computes what a native one does. gonum's
// floats.Dot is not used for that reason: its amd64 assembly sums in
// another order than its generic Go. The loops are unrolled by 8 because Go's
// WebAssembly backend pays heavily per loop iteration (a bounds check and a
// branch on emulated registers): measured under Node, 1.8-3x faster there,
// 1.1-1.6x natively (`go test ./shared/vec -bench .`, and under
// GOOS=js GOARCH=wasm with -exec go_js_wasm_exec).
package vec

// Dot returns x . y, summed left to right; len(y) >= len(x).
func Dot(x, y []float64) float64 {
	y = y[:len(x)]
	s := 0.0
	j := 0
	for ; j+8 <= len(x); j += 8 {
		a := x[j : j+8 : j+8]
		b := y[j : j+8 : j+8]
		s += a[0] * b[0]
		s += a[1] * b[1]
		s += a[2] * b[2]
		s += a[3] * b[3]
		s += a[4] * b[4]
		s += a[5] * b[5]
		s += a[6] * b[6]
		s += a[7] * b[7]
	}
	for ; j < len(x); j++ {
		s += x[j] * y[j]
	}
	return s
}

// Dot4 returns x . y0, x . y1, x . y2 and x . y3, each summed left to right
// as Dot sums it (the same bits); every y has len >= len(x). The four sums
// are independent chains, so the processor overlaps their additions, which
// one Dot cannot (each addition waits for the one before), and x is read
// once for four: a matrix times several vectors runs 2-4x faster
// (BenchmarkDot4).
func Dot4(x, y0, y1, y2, y3 []float64) (s0, s1, s2, s3 float64) {
	n := len(x)
	y0, y1, y2, y3 = y0[:n], y1[:n], y2[:n], y3[:n]
	j := 0
	for ; j+4 <= n; j += 4 {
		a := x[j : j+4 : j+4]
		b0 := y0[j : j+4 : j+4]
		b1 := y1[j : j+4 : j+4]
		b2 := y2[j : j+4 : j+4]
		b3 := y3[j : j+4 : j+4]
		s0 += a[0] * b0[0]
		s1 += a[0] * b1[0]
		s2 += a[0] * b2[0]
		s3 += a[0] * b3[0]
		s0 += a[1] * b0[1]
		s1 += a[1] * b1[1]
		s2 += a[1] * b2[1]
		s3 += a[1] * b3[1]
		s0 += a[2] * b0[2]
		s1 += a[2] * b1[2]
		s2 += a[2] * b2[2]
		s3 += a[2] * b3[2]
		s0 += a[3] * b0[3]
		s1 += a[3] * b1[3]
		s2 += a[3] * b2[3]
		s3 += a[3] * b3[3]
	}
	for ; j < n; j++ {
		s0 += x[j] * y0[j]
		s1 += x[j] * y1[j]
		s2 += x[j] * y2[j]
		s3 += x[j] * y3[j]
	}
	return s0, s1, s2, s3
}

// Axpy adds alpha x to y; len(y) >= len(x).
func Axpy(alpha float64, x, y []float64) {
	y = y[:len(x)]
	j := 0
	for ; j+8 <= len(x); j += 8 {
		a := x[j : j+8 : j+8]
		b := y[j : j+8 : j+8]
		b[0] += alpha * a[0]
		b[1] += alpha * a[1]
		b[2] += alpha * a[2]
		b[3] += alpha * a[3]
		b[4] += alpha * a[4]
		b[5] += alpha * a[5]
		b[6] += alpha * a[6]
		b[7] += alpha * a[7]
	}
	for ; j < len(x); j++ {
		y[j] += alpha * x[j]
	}
}

// Axpy4 sets y += alpha[0] x0, then y += alpha[1] x1, alpha[2] x2 and
// alpha[3] x3, each entry in that order, so with the bits of four Axpys in
// a row; every x has len >= len(y). It reads and writes y once for the
// four: 1.3x faster than four Axpys natively, 1.5x in wasm (BenchmarkAxpy4).
func Axpy4(alpha [4]float64, x0, x1, x2, x3, y []float64) {
	n := len(y)
	x0, x1, x2, x3 = x0[:n], x1[:n], x2[:n], x3[:n]
	a0, a1, a2, a3 := alpha[0], alpha[1], alpha[2], alpha[3]
	j := 0
	for ; j+4 <= n; j += 4 {
		b := y[j : j+4 : j+4]
		p0 := x0[j : j+4 : j+4]
		p1 := x1[j : j+4 : j+4]
		p2 := x2[j : j+4 : j+4]
		p3 := x3[j : j+4 : j+4]
		b[0] = b[0] + a0*p0[0] + a1*p1[0] + a2*p2[0] + a3*p3[0]
		b[1] = b[1] + a0*p0[1] + a1*p1[1] + a2*p2[1] + a3*p3[1]
		b[2] = b[2] + a0*p0[2] + a1*p1[2] + a2*p2[2] + a3*p3[2]
		b[3] = b[3] + a0*p0[3] + a1*p1[3] + a2*p2[3] + a3*p3[3]
	}
	for ; j < n; j++ {
		y[j] = y[j] + a0*x0[j] + a1*x1[j] + a2*x2[j] + a3*x3[j]
	}
}

// DotSparse returns the sum over k of val[k] * w[idx[k]], left to right
// (a CSR row times a dense vector).
func DotSparse(idx []int32, val, w []float64) float64 {
	val = val[:len(idx)]
	s := 0.0
	k := 0
	for ; k+4 <= len(idx); k += 4 {
		i := idx[k : k+4 : k+4]
		v := val[k : k+4 : k+4]
		s += v[0] * w[i[0]]
		s += v[1] * w[i[1]]
		s += v[2] * w[i[2]]
		s += v[3] * w[i[3]]
	}
	for ; k < len(idx); k++ {
		s += val[k] * w[idx[k]]
	}
	return s
}

// AxpySparse adds alpha val[k] to w[idx[k]] for every k.
func AxpySparse(alpha float64, idx []int32, val, w []float64) {
	val = val[:len(idx)]
	k := 0
	for ; k+4 <= len(idx); k += 4 {
		i := idx[k : k+4 : k+4]
		v := val[k : k+4 : k+4]
		w[i[0]] += alpha * v[0]
		w[i[1]] += alpha * v[1]
		w[i[2]] += alpha * v[2]
		w[i[3]] += alpha * v[3]
	}
	for ; k < len(idx); k++ {
		w[idx[k]] += alpha * val[k]
	}
}
