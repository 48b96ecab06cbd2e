package vec_test

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/vec"
)

func Example() {
	x := []float64{1, 2, 3}
	y := []float64{4, 5, 6}
	fmt.Println(vec.Dot(x, y))
	vec.Axpy(2, x, y) // y += 2x
	fmt.Println(y)
	// A CSR row (columns 0 and 2) times a dense vector.
	fmt.Println(vec.DotSparse([]int32{0, 2}, []float64{1, 1}, y))
	// Output:
	// 32
	// [6 9 12]
	// 18
}
