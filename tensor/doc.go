// Package tensor defines the dense tensors that flow through quantserve:
// a data type from the Open Inference Protocol's list, a shape, and a typed
// Go slice holding the elements in row-major order.
//
// Element counts are computed with overflow checks (NumElements), so a
// shape that arrives over the network can never make a caller allocate more
// than it asked to bound.
package tensor
