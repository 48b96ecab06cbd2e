// Package solve holds the numerics of a HyFDCA round, as functions over
// slices with no protocol in them: a sample group's dual subproblem solved
// by coordinate ascent against a model of its picks' Gram (Group, and the
// models Gram, Rows and CenteredRows), the server's step across groups
// (GroupQP, GroupStepLimit, FallToCoupling) and the steps a line search
// prices (Candidates). docs/design.md, "The step rules", has the math;
// shared/protocol gathers the numbers and sends the results.
package solve
