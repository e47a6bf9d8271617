// Package arith holds the ONNX element-wise arithmetic: Add, Sub, Mul and
// Div over operands that broadcast together (numpy rules, walked by
// ops/elem); the variadic Min, Max, Sum and Mean; Pow, Mod, BitShift and
// the bitwise operators; and the unary math functions (Abs, Neg, Sign,
// Sqrt, Exp, Log, Reciprocal, Ceil, Floor, Round, the trigonometric and
// hyperbolic functions, Erf).
//
// Integer arithmetic wraps as numpy's does, and integer division by zero
// is an input error. FP16 and BF16 operands of the binary operators
// compute in float32 and round once; the unary functions compute them in
// float64. float32 Exp and Erf run on float32 approximations within a few
// ulps of math's (Expf, Erf32), which the activations of ops/activation
// share; MapFloat is the float64 walk every other floating-point type
// takes.
//
// Every operator goes piece by piece, at most ops.TickEvery elements
// between two looks at the request (Context.Tick), and stops with the
// request's error once it ends. Walk, Map2 and MapFunc are that walk over
// operands that broadcast together, which ops/activation and ops/logic
// share.
//
// Add and Mul are also exported as functions, for the graph compiler's
// fused convolution.
package arith
