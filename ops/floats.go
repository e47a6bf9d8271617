package ops

import (
	"github.com/quantserve/quantserve/tensor"
)

// RoundFloat64s returns values computed in float64 as a slice of the
// floating-point type dt (FP32, FP16 or BF16), each rounded once; for
// FP64 (and any other type) it returns v itself.
func RoundFloat64s(v []float64, dt tensor.DataType) any {
	switch dt {
	case tensor.Float32:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return f
	case tensor.Float16:
		h := make([]tensor.F16, len(v))
		for i, x := range v {
			h[i] = tensor.F16FromFloat64(x)
		}
		return h
	case tensor.BFloat16:
		h := make([]tensor.BF16, len(v))
		for i, x := range v {
			h[i] = tensor.BF16FromFloat64(x)
		}
		return h
	}
	return v
}
