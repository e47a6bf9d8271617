package model

import (
	"math"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	registry["Softmax"] = softmaxBuilder("Softmax", softmax[float32], softmax[float64])
	registry["LogSoftmax"] = softmaxBuilder("LogSoftmax", logSoftmax[float32], logSoftmax[float64])
}

// softmaxBuilder builds Softmax and LogSoftmax. Before opset 13 the input
// is coerced to 2-D at axis (default 1) and normalised over the flattened
// trailing block; from opset 13 it is normalised along axis alone
// (default -1).
func softmaxBuilder(op string, f32 func([]float32, int, int, int) []float32, f64 func([]float64, int, int, int) []float64) opBuilder {
	return func(n *node) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		if err := n.onlyAttrs("axis"); err != nil {
			return nil, err
		}
		legacy := n.opset < 13
		def := int64(-1)
		if legacy {
			def = 1
		}
		axis, err := n.intAttr("axis", def)
		if err != nil {
			return nil, err
		}
		return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
			outer, dim, inner, err := softmaxGeometry(x, axis, legacy)
			if err != nil {
				return nil, err
			}
			var out any
			switch d := x.Data.(type) {
			case []float32:
				out = f32(d, outer, dim, inner)
			case []float64:
				out = f64(d, outer, dim, inner)
			default:
				return nil, inputErrorf("%s does not take %v", op, x.DType)
			}
			return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
		}), nil
	}
}

// softmax normalises x viewed as [outer, dim, inner] along dim, in float64.
func softmax[T float32 | float64](x []T, outer, dim, inner int) []T {
	r := make([]T, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			m := math.Inf(-1)
			for i := 0; i < dim; i++ {
				m = math.Max(m, float64(x[base+i*inner]))
			}
			var sum float64
			for i := 0; i < dim; i++ {
				sum += math.Exp(float64(x[base+i*inner]) - m)
			}
			for i := 0; i < dim; i++ {
				r[base+i*inner] = T(math.Exp(float64(x[base+i*inner])-m) / sum)
			}
		}
	}
	return r
}
