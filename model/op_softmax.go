package model

import (
	"math"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	for _, op := range []struct {
		name string
		f32  func([]float32, int, int, int) []float32
		f64  func([]float64, int, int, int) []float64
	}{
		{"Softmax", softmax[float32], softmax[float64]},
		{"LogSoftmax", logSoftmax[float32], logSoftmax[float64]},
	} {
		register(Descriptor{Type: op.name, Since: 1, Until: 12, Fold: true}, func(n *node, at *SoftmaxLegacyAttrs) (opFunc, error) {
			return softmaxBuilder(n, op.name, at.Axis, true, op.f32, op.f64)
		})
		register(Descriptor{Type: op.name, Since: 13, Fold: true}, func(n *node, at *SoftmaxAttrs) (opFunc, error) {
			return softmaxBuilder(n, op.name, at.Axis, false, op.f32, op.f64)
		})
	}
}

// SoftmaxAttrs are the attributes of Softmax and LogSoftmax from opset 13:
// normalised along axis alone.
type SoftmaxAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
}

// SoftmaxLegacyAttrs are their attributes before opset 13: the input is
// coerced to 2-D at axis and normalised over the flattened trailing block.
type SoftmaxLegacyAttrs struct {
	Axis int64 `onnx:"axis" default:"1"`
}

// softmaxBuilder builds Softmax and LogSoftmax; legacy selects the
// pre-13 semantics.
func softmaxBuilder(n *node, op string, axis int64, legacy bool, f32 func([]float32, int, int, int) []float32, f64 func([]float64, int, int, int) []float64) (opFunc, error) {
	{
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		if op == "Softmax" {
			soft := kernelTable(n).SoftmaxRow
			f32 = func(x []float32, outer, dim, inner int) []float32 { return softmax32(x, outer, dim, inner, soft) }
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
			case []tensor.F16, []tensor.BF16: // in float32, rounded once
				r := f32(elemHalfTo32(x).Data.([]float32), outer, dim, inner)
				return elemToHalf(&tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: r}, x.DType), nil
			default:
				return nil, inputErrorf("%s does not take %v", op, x.DType)
			}
			return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
		}), nil
	}
}

// softmax normalises x viewed as [outer, dim, inner] along dim, in
// float64 (float32 runs on the kernels: softmax32).
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

// softmax32 normalises x viewed as [outer, dim, inner] along dim with
// soft, a kernel table's SoftmaxRow; strided rows go through a buffer.
func softmax32(x []float32, outer, dim, inner int, soft func([]float32, float32)) []float32 {
	r := make([]float32, len(x))
	if inner == 1 {
		copy(r, x)
		for o := 0; o < outer; o++ {
			soft(r[o*dim:(o+1)*dim], 1)
		}
		return r
	}
	row := make([]float32, dim)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			for i := range row {
				row[i] = x[base+i*inner]
			}
			soft(row, 1)
			for i, v := range row {
				r[base+i*inner] = v
			}
		}
	}
	return r
}

func softmaxGeometry(x *tensor.Tensor, axis int64, legacy bool) (outer, dim, inner int, err error) {
	if x.Rank() == 0 {
		return 0, 0, 0, inputErrorf("needs a tensor of rank >= 1")
	}
	a, err := normAxis(axis, x.Rank())
	if err != nil {
		return 0, 0, 0, err
	}
	outer, dim, inner = 1, 1, 1
	for i, d := range x.Shape {
		switch {
		case i < a:
			outer *= d
		case i == a || legacy:
			dim *= d
		default:
			inner *= d
		}
	}
	return outer, dim, inner, nil
}

func logSoftmax[T float32 | float64](x []T, outer, dim, inner int) []T {
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
			ls := math.Log(sum)
			for i := 0; i < dim; i++ {
				r[base+i*inner] = T(float64(x[base+i*inner]) - m - ls)
			}
		}
	}
	return r
}
