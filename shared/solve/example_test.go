package solve_test

import (
	"fmt"

	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/solve"
)

// A group of two picks with orthogonal rows: each pick's dual value moves
// to where its hinge loss is met, as two single SDCA steps would.
func ExampleGroup() {
	gram := []float64{1, 0, 0, 1} // the picks' rows are unit and orthogonal
	s := solve.Sub{Loss: loss.Hinge{}, LambdaN: 1, Y: []float64{1, -1}, Alpha: []float64{0, 0}, Z: []float64{0, 0}}
	d := solve.Group(s, solve.NewGram(gram, 2), 1, nil, nil)
	fmt.Println(d)
	// Output: [1 -1]
}
