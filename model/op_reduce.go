package model

import (
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "ArgMax", Since: 1, Fold: true}, buildArgMax)
}

// ArgAttrs are the attributes of ArgMax and ArgMin.
type ArgAttrs struct {
	Axis            int64 `onnx:"axis"`
	KeepDims        bool  `onnx:"keepdims" default:"true"`
	SelectLastIndex bool  `onnx:"select_last_index"`
}

func buildArgMax(n *node, at *ArgAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	axis, keep, last := at.Axis, at.KeepDims, at.SelectLastIndex
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.Rank() == 0 {
			return nil, inputErrorf("ArgMax needs rank >= 1")
		}
		a, err := normAxis(axis, x.Rank())
		if err != nil {
			return nil, err
		}
		if x.Shape[a] == 0 {
			return nil, inputErrorf("ArgMax over an empty axis")
		}
		if x.DType == tensor.Bool {
			return nil, inputErrorf("ArgMax does not take BOOL")
		}
		v := x.Float64s()
		outer, dim, inner := 1, x.Shape[a], 1
		for i, d := range x.Shape {
			if i < a {
				outer *= d
			} else if i > a {
				inner *= d
			}
		}
		out := make([]int64, outer*inner)
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				base := o*dim*inner + j
				best := 0
				for i := 1; i < dim; i++ {
					c, b := v[base+i*inner], v[base+best*inner]
					if c > b || last && c == b {
						best = i
					}
				}
				out[o*inner+j] = int64(best)
			}
		}
		shape := slices.Clone(x.Shape)
		if keep {
			shape[a] = 1
		} else {
			shape = slices.Delete(shape, a, a+1)
		}
		return tensor.From(shape, out), nil
	}), nil
}
