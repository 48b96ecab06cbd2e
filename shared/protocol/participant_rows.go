package protocol

import (
	"github.com/hyfed/hyfed/shared/gram"
	"github.com/hyfed/hyfed/shared/solve"
)

// A sample group with a single holder (every horizontal partition's, and
// any group whose samples one participant holds whole) has nothing to add
// up: its holder's partial Gram is the group's Gram. Its holder seals none
// (the server gets no Gram chunk of the group and returns none) and solves
// from what it holds:
//
//   - on sparse rows, where a row's non-zeros are fewer than half the picks,
//     against the rows themselves (gram.SplitRows and the row models
//     below): a coordinate costs the row's non-zeros, not a Gram row, and
//     nobody forms the Gram;
//   - otherwise against the Gram it computes, quantized as a sealed sum of
//     it would open, so that the numbers are those of a group with other
//     holders.
//
// The other holders of a group agree without talking because they solve
// the same subproblem from the same numbers; a group with one holder has
// nobody to agree with, so the row form's rounding is free to differ from
// the Gram form's.

// onRows reports whether the participant solves group g's picks on its
// rows: it holds the group alone, with the bias feature (the Gram form adds
// the bias's part by the formula), and its rows are sparse with fewer
// non-zeros than half the picks.
func (p *Participant) onRows(g int, picks []int) bool {
	x := p.block.X
	if !p.sole[g] || !x.IsSparse() || len(picks) == 0 || p.setup.Config.BiasValue != 0 && p.biasColumn() < 0 {
		return false
	}
	nnz := 0
	for _, i := range picks {
		idx, _ := x.Row(i)
		nnz += len(idx)
	}
	return 2*nnz < len(picks)*len(picks)
}

// solveRows solves group g's subproblem on the holder's rows: the first
// direction against SplitRows' model (or sigma X X^T without shared
// directions), and under group steps the centered one from where it leads
// (as onGramSum does with a Gram).
func (p *Participant) solveRows(picks []int, sigma, sigmaShared float64, centered, once bool) (delta, cent []float64) {
	x := p.block.X
	shared := p.setup.Config.SharedDirections.Count()
	sub := p.sub(picks)
	if shared > 0 {
		delta = solve.Group(sub, solve.NewRows(x, picks, gram.SplitRows(x, picks, x.Cols, shared, sigma, sigmaShared)), 1, nil, nil)
	} else {
		delta = solve.Group(sub, solve.NewRows(x, picks, gram.RowModel{Sr: 1}), sigma, nil, nil)
	}
	if once {
		quantize(delta)
	}
	if !centered {
		return delta, nil
	}
	w := make([]float64, x.Cols)
	for k, i := range picks {
		x.AddRowTo(i, delta[k], w)
	}
	zoff := make([]float64, len(picks))
	for k, i := range picks {
		zoff[k] = x.Dot(i, w) / p.lambdaN
	}
	cent = solve.Group(sub, solve.NewCenteredRows(x, picks), sigma, delta, zoff)
	if once {
		quantize(cent)
	}
	return delta, cent
}
