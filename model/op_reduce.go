package model

import (
	"cmp"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "ArgMax", Since: 1, Fold: true}, buildArg("ArgMax", true))
	register(Descriptor{Type: "ArgMin", Since: 1, Fold: true}, buildArg("ArgMin", false))
}

// ArgAttrs are the attributes of ArgMax and ArgMin.
type ArgAttrs struct {
	Axis            int64 `onnx:"axis"`
	KeepDims        bool  `onnx:"keepdims" default:"true"`
	SelectLastIndex bool  `onnx:"select_last_index"`
}

// buildArg builds ArgMax (largest) or ArgMin: along axis, the index of
// the first largest (smallest) entry, or with select_last_index the last.
func buildArg(op string, largest bool) func(n *node, at *ArgAttrs) (opFunc, error) {
	return func(n *node, at *ArgAttrs) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		axis, keep, last := at.Axis, at.KeepDims, at.SelectLastIndex
		return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
			return argExtreme(op, x, axis, keep, last, largest)
		}), nil
	}
}

// argExtreme computes ArgMax (largest) or ArgMin of x. Values compare
// exactly in their own type (F16 and BF16 through float32, which holds
// them exactly); the numeric types of the operators' schema are accepted.
func argExtreme(op string, x *tensor.Tensor, axis int64, keep, last, largest bool) (*tensor.Tensor, error) {
	if x.Rank() == 0 {
		return nil, inputErrorf("%s needs rank >= 1", op)
	}
	a, err := normAxis(axis, x.Rank())
	if err != nil {
		return nil, err
	}
	if x.Shape[a] == 0 {
		return nil, inputErrorf("%s over an empty axis", op)
	}
	outer, dim, inner := idxGeometry(x.Shape, a)
	out := make([]int64, outer*inner)
	switch d := x.Data.(type) {
	case []float32:
		argIndex(out, d, dim, inner, largest, last)
	case []float64:
		argIndex(out, d, dim, inner, largest, last)
	case []tensor.F16:
		argIndex(out, tensor.HalfToFloat32(d), dim, inner, largest, last)
	case []tensor.BF16:
		argIndex(out, tensor.HalfToFloat32(d), dim, inner, largest, last)
	case []int8:
		argIndex(out, d, dim, inner, largest, last)
	case []uint8:
		argIndex(out, d, dim, inner, largest, last)
	case []int16:
		argIndex(out, d, dim, inner, largest, last)
	case []uint16:
		argIndex(out, d, dim, inner, largest, last)
	case []int32:
		argIndex(out, d, dim, inner, largest, last)
	case []uint32:
		argIndex(out, d, dim, inner, largest, last)
	case []int64:
		argIndex(out, d, dim, inner, largest, last)
	case []uint64:
		argIndex(out, d, dim, inner, largest, last)
	default:
		return nil, inputErrorf("%s does not take %v", op, x.DType)
	}
	shape := slices.Clone(x.Shape)
	if keep {
		shape[a] = 1
	} else {
		shape = slices.Delete(shape, a, a+1)
	}
	return tensor.From(shape, out), nil
}

// argIndex sets out[o·inner + j], for each line of dim values of d (line
// o·dim·inner + j, stride inner), to the index of its largest (or
// smallest) value: the first among equals, or with last the last. A NaN
// beats every number, as in numpy's argmax and argmin (the ONNX reference
// evaluator's): the first NaN, or with last the last.
func argIndex[T cmp.Ordered](out []int64, d []T, dim, inner int, largest, last bool) {
	for l := range out {
		base := l/inner*dim*inner + l%inner
		best, bv := 0, d[base]
		for i := 1; i < dim; i++ {
			v := d[base+i*inner]
			switch {
			case bv != bv: // a NaN: only a later NaN replaces it, with last
				if last && v != v {
					best, bv = i, v
				}
			case v != v, largest && v > bv, !largest && v < bv, last && v == bv:
				best, bv = i, v
			}
		}
		out[l] = int64(best)
	}
}
