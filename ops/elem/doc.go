// Package elem is the walk of element-wise operators over operands that
// broadcast together (numpy rules): a Layout merges the dimensions every
// operand steps through alike into few long runs, and Walk, Map2 and
// MapFunc compute a binary operation run by run, in pieces counted with
// the request's Context.Tick so that a cancelled request stops within
// about ops.TickEvery elements. The math operators (Add, Mul,
// Pow, Mod, PRelu, ...) and the comparison and selection operators of
// ops/logic share it.
package elem
