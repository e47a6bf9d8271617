package pool

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "MaxUnpool", Since: 9, Fold: true}, buildMaxUnpool)
}

// MaxUnpoolAttrs are MaxUnpool's attributes.
type MaxUnpoolAttrs struct {
	KernelShape []int64 `onnx:"kernel_shape"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`
}

// maxUnpoolOp is a compiled MaxUnpool.
type maxUnpoolOp struct{ spec *spec }

func buildMaxUnpool(n *ops.Node, at *MaxUnpoolAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	s, err := newSpec("MaxUnpool", "NOTSET", at.KernelShape, at.Pads, at.Strides, nil, false)
	if err != nil {
		return nil, err
	}
	return &maxUnpoolOp{spec: s}, nil
}

func (o *maxUnpoolOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	spec := o.spec
	r := len(spec.kernel)
	x, ind := in[0], in[1]
	if x.Rank() != r+2 {
		return nil, ops.InputErrorf("MaxUnpool with a %d-D kernel takes a rank-%d input, got shape %v", r, r+2, x.Shape)
	}
	if slices.ContainsFunc(x.Shape, func(d int) bool { return d > tensor.MaxElements }) {
		return nil, ops.InputErrorf("MaxUnpool input shape %v has a dimension over %d", x.Shape, tensor.MaxElements)
	}
	if !ops.EqualShape(ind.Shape, x.Shape) {
		return nil, ops.InputErrorf("MaxUnpool indices have shape %v, the input %v", ind.Shape, x.Shape)
	}
	iv, ok := ind.Data.([]int64)
	if !ok {
		return nil, ops.InputErrorf("MaxUnpool indices must be INT64, got %v", ind.DType)
	}
	// The unpooled shape: the input MaxPool read, as its windows tell.
	inferred := slices.Clone(x.Shape)
	for i := 0; i < r; i++ {
		if x.Shape[i+2] == 0 {
			inferred[i+2] = 0
			continue
		}
		inferred[i+2] = (x.Shape[i+2]-1)*spec.strides[i] - spec.pads[i] - spec.pads[i+r] + spec.kernel[i]
		if inferred[i+2] < 1 {
			return nil, ops.InputErrorf("MaxUnpool of input %v: pads leave spatial dimension %d empty", x.Shape, i)
		}
	}
	out := inferred
	if len(in) > 2 && in[2] != nil {
		os, err := in[2].Int64s()
		if err != nil || in[2].Rank() != 1 || len(os) != x.Rank() {
			return nil, ops.InputErrorf("MaxUnpool output_shape must be a 1-D integer tensor of %d values, got %v %v", x.Rank(), in[2].DType, in[2].Shape)
		}
		out = make([]int, len(os))
		for i, d := range os {
			if d < int64(inferred[i]) || d > tensor.MaxElements || i < 2 && d != int64(inferred[i]) {
				return nil, ops.InputErrorf("MaxUnpool output_shape %v cannot hold the unpooled shape %v", os, inferred)
			}
			out[i] = int(d)
		}
	}
	total, err := tensor.NumElements(inferred)
	if err != nil {
		return nil, ops.InputErrorf("MaxUnpool output %v: %v", inferred, err)
	}
	if _, err := tensor.NumElements(out); err != nil {
		return nil, ops.InputErrorf("MaxUnpool output %v: %v", out, err)
	}
	for _, v := range iv {
		if v < 0 || v >= int64(total) {
			return nil, ops.InputErrorf("MaxUnpool index %d is outside the unpooled shape %v", v, inferred)
		}
	}
	var data any
	switch d := x.Data.(type) {
	case []float32:
		data, err = unpool(d, iv, inferred, out, c)
	case []float64:
		data, err = unpool(d, iv, inferred, out, c)
	case []tensor.F16:
		data, err = unpool(d, iv, inferred, out, c)
	case []tensor.BF16:
		data, err = unpool(d, iv, inferred, out, c)
	default:
		return nil, ops.InputErrorf("MaxUnpool does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: out, Data: data}}, nil
}

// unpool scatters x to the flat positions idx of a zero tensor of shape
// inferred, then places that tensor at the origin of one of shape out.
func unpool[T tensor.Elem](x []T, idx []int64, inferred, out []int, oc *ops.Context) ([]T, error) {
	y := make([]T, ops.ProdInts(out))
	st := tensor.Strides(out)
	for i, v := range x {
		if i%ops.TickEvery == 0 {
			if err := oc.Tick(ops.TickEvery); err != nil {
				return nil, err
			}
		}
		off, rest := 0, int(idx[i])
		for a := len(inferred) - 1; a >= 0; a-- {
			off += rest % inferred[a] * st[a]
			rest /= inferred[a]
		}
		y[off] = v
	}
	return y, nil
}
