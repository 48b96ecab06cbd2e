package gram_test

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/gram"
)

// Two picks whose rows are (1, 1) and (1, -1): the first feature is the
// one they share. With one shared direction priced at 10 and the rest at
// 1, moving both picks alike costs 10 times their Gram's price, moving
// them apart costs it once.
func ExampleSplit() {
	a := []float64{2, 0, 0, 2} // X X^T
	s := gram.Split(a, 2, 1, 1, 10)
	alike := s[0] + s[1] + s[2] + s[3] // d = (1, 1): A's price 4
	apart := s[0] - s[1] - s[2] + s[3] // d = (1, -1): A's price 4
	fmt.Printf("%.3g %.3g\n", alike, apart)
	// Output: 40 4
}
