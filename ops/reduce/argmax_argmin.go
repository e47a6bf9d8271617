package reduce

import (
	"cmp"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "ArgMax", Since: 1, Fold: true}, argBuilder("ArgMax", true))
	ops.Register(ops.Descriptor{Type: "ArgMin", Since: 1, Fold: true}, argBuilder("ArgMin", false))
}

// ArgAttrs are the attributes of ArgMax and ArgMin.
type ArgAttrs struct {
	Axis            int64 `onnx:"axis"`
	KeepDims        bool  `onnx:"keepdims" default:"true"`
	SelectLastIndex bool  `onnx:"select_last_index"`
}

// argExtreme is a compiled ArgMax (largest) or ArgMin: along axis, the
// index of the first largest (smallest) entry, or with last the last.
type argExtreme struct {
	op                  string
	axis                int64
	keep, last, largest bool
}

// argBuilder builds ArgMax (largest) or ArgMin.
func argBuilder(op string, largest bool) func(n *ops.Node, at *ArgAttrs) (ops.Operator, error) {
	return func(n *ops.Node, at *ArgAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return &argExtreme{op: op, axis: at.Axis, keep: at.KeepDims, last: at.SelectLastIndex, largest: largest}, nil
	}
}

// Run computes ArgMax or ArgMin of in[0]. Values compare exactly in their
// own type (F16 and BF16 through float32, which holds them exactly); the
// numeric types of the operators' schema are accepted.
func (a *argExtreme) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, op := in[0], a.op
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("%s needs rank >= 1", op)
	}
	ax, err := ops.NormAxis(a.axis, x.Rank())
	if err != nil {
		return nil, err
	}
	if x.Shape[ax] == 0 {
		return nil, ops.InputErrorf("%s over an empty axis", op)
	}
	l := argLines{c: c, dim: x.Shape[ax], inner: dimsProduct(x.Shape[ax+1:]), largest: a.largest, last: a.last}
	out := make([]int64, dimsProduct(x.Shape[:ax])*l.inner)
	switch d := x.Data.(type) {
	case []float32:
		err = argIndex(out, d, l)
	case []float64:
		err = argIndex(out, d, l)
	case []tensor.F16:
		err = argIndex(out, tensor.HalfToFloat32(d), l)
	case []tensor.BF16:
		err = argIndex(out, tensor.HalfToFloat32(d), l)
	case []int8:
		err = argIndex(out, d, l)
	case []uint8:
		err = argIndex(out, d, l)
	case []int16:
		err = argIndex(out, d, l)
	case []uint16:
		err = argIndex(out, d, l)
	case []int32:
		err = argIndex(out, d, l)
	case []uint32:
		err = argIndex(out, d, l)
	case []int64:
		err = argIndex(out, d, l)
	case []uint64:
		err = argIndex(out, d, l)
	default:
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	if err != nil {
		return nil, err
	}
	shape := slices.Clone(x.Shape)
	if a.keep {
		shape[ax] = 1
	} else {
		shape = slices.Delete(shape, ax, ax+1)
	}
	return []*tensor.Tensor{tensor.From(shape, out)}, nil
}

// dimsProduct multiplies dimensions of a tensor that exists and is not
// empty, so the product cannot exceed its element count.
func dimsProduct(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}

// argLines are the lines ArgMax or ArgMin searches: dim values each, at
// stride inner; largest or smallest, and with last the last among equals.
type argLines struct {
	c             *ops.Context
	dim, inner    int
	largest, last bool
}

// argIndex sets out[o·inner + j], for each line of dim values of d (line
// o·dim·inner + j, stride inner), to the index of its largest (or
// smallest) value: the first among equals, or with last the last. A NaN
// beats every number, as in numpy's argmax and argmin (the ONNX reference
// evaluator's): the first NaN, or with last the last. It looks at the
// run's deadline about every ops.TickEvery values (ops.Context.Tick).
func argIndex[T cmp.Ordered](out []int64, d []T, l argLines) error {
	dim, inner, largest, last := l.dim, l.inner, l.largest, l.last
	for k := range out {
		base := k/inner*dim*inner + k%inner
		best, bv := 0, d[base]
		for lo := 1; lo < dim; lo += ops.TickEvery {
			hi := min(dim, lo+ops.TickEvery)
			for i := lo; i < hi; i++ {
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
			if err := l.c.Tick(hi - lo); err != nil {
				return err
			}
		}
		out[k] = int64(best)
		if err := l.c.Tick(1); err != nil { // the line's first value
			return err
		}
	}
	return nil
}
