// Package logic holds the ONNX comparison, logic and selection operators:
// Equal, Less, Greater, LessOrEqual and GreaterOrEqual; And, Or, Xor and
// Not on BOOL tensors; IsNaN and IsInf; and Where. Opset 7 brought numpy
// broadcasting to all of them (before it a broadcast attribute chose the
// old rules); later versions widened the types (Equal on strings from 19).
package logic
