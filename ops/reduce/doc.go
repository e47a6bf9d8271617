// Package reduce holds the ONNX reductions: ReduceSum, ReduceMean,
// ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSum (the sums),
// ReduceMax and ReduceMin (the extremes), ReduceProd and ReduceLogSumExp,
// which fold the values along some axes into one, and ArgMax and ArgMin,
// which find where along an axis the largest or smallest value is.
//
// Reduction, the interface of the reductions' parsed attributes, tells the
// gradient code which axes a node reduced; RowSumSquares and Block, the
// blocked row sums, serve the normalizations.
package reduce
