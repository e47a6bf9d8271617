// Package elem is the walk of element-wise operators over operands that
// broadcast together (numpy rules): a Layout merges the dimensions every
// operand steps through alike into few long runs. Walk visits them run by
// run, in pieces counted with the request's Context.Tick so that a
// cancelled request stops within about ops.TickEvery elements; Map2 and
// MapFunc compute a binary operation over contiguous ranges of the
// output split across the engine's cores by ops.Context.ParallelRows,
// looking at the request between chunks. The
// math operators (Add, Mul, Pow, Mod, PRelu, ...) and the comparison and
// selection operators of ops/logic share it.
package elem
