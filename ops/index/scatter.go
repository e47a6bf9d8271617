package index

import (
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// Scatter (opsets 9–10), ScatterElements and ScatterND: a copy of the
// data with the updates written at the elements (or slices) the indices
// address, in order, or combined with what is there by a reduction.
func init() {
	ops.Register(ops.Descriptor{Type: "Scatter", Since: 9, Fold: true}, buildScatter)
	ops.Register(ops.Descriptor{Type: "ScatterElements", Since: 11, Fold: true}, buildScatterElements)
	ops.Register(ops.Descriptor{Type: "ScatterND", Since: 11, Fold: true}, buildScatterND)
}

// ScatterAttrs are the attributes of Scatter (opset 9–10, deprecated in
// 11 for ScatterElements).
type ScatterAttrs struct {
	Axis int64 `onnx:"axis"`
}

// ScatterElementsAttrs are ScatterElements' attributes: reduction add
// and mul from opset 16, max and min from 18.
type ScatterElementsAttrs struct {
	Axis      int64  `onnx:"axis"`
	Reduction string `onnx:"reduction" default:"none"`
}

// ScatterNDAttrs are ScatterND's attributes (reduction as for
// ScatterElements).
type ScatterNDAttrs struct {
	Reduction string `onnx:"reduction" default:"none"`
}

// checkReduction refuses a scatter reduction the node's opset does not
// define.
func checkReduction(n *ops.Node, red string) error {
	switch {
	case red == "none":
	case (red == "add" || red == "mul") && n.Opset >= 16:
	case (red == "max" || red == "min") && n.Opset >= 18:
	default:
		return ops.Unsupportedf("reduction %q at opset %d", red, n.Opset)
	}
	return nil
}

// scatterElements is a compiled ScatterElements (or Scatter): the axis
// its indices address and its reduction.
type scatterElements struct {
	axis int64
	red  string
}

func buildScatter(n *ops.Node, at *ScatterAttrs) (ops.Operator, error) {
	return buildScatterElements(n, &ScatterElementsAttrs{Axis: at.Axis, Reduction: "none"})
}

func buildScatterElements(n *ops.Node, at *ScatterElementsAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkReduction(n, at.Reduction); err != nil {
		return nil, err
	}
	return scatterElements{axis: at.Axis, red: at.Reduction}, nil
}

func (s scatterElements) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, upd := in[0], in[2]
	if err := ops.SameType("ScatterElements", x, upd); err != nil {
		return nil, err
	}
	if !ops.EqualShape(in[1].Shape, upd.Shape) {
		return nil, ops.InputErrorf("ScatterElements indices %s and updates %s differ in shape", tensor.ShapeString(in[1].Shape), tensor.ShapeString(upd.Shape))
	}
	offs, err := elementOffsets(c, "ScatterElements", x, in[1], s.axis)
	if err != nil {
		return nil, err
	}
	y, err := scatterInto(c, x, offs, upd, 1, s.red)
	if err != nil {
		return nil, err
	}
	return out1(y), nil
}

// scatterND is a compiled ScatterND: its reduction.
type scatterND struct{ red string }

func buildScatterND(n *ops.Node, at *ScatterNDAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkReduction(n, at.Reduction); err != nil {
		return nil, err
	}
	return scatterND{red: at.Reduction}, nil
}

func (s scatterND) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, upd := in[0], in[2]
	if err := ops.SameType("ScatterND", x, upd); err != nil {
		return nil, err
	}
	offs, run, shape, err := ndOffsets(c, "ScatterND", x, in[1], 0)
	if err != nil {
		return nil, err
	}
	if !ops.EqualShape(shape, upd.Shape) {
		return nil, ops.InputErrorf("ScatterND updates have shape %s, the indices address %s", tensor.ShapeString(upd.Shape), tensor.ShapeString(shape))
	}
	y, err := scatterInto(c, x, offs, upd, run, s.red)
	if err != nil {
		return nil, err
	}
	return out1(y), nil
}

// scatterInto returns a copy of x with runs of run elements of upd
// written (or combined by the reduction) at offs, in order.
func scatterInto(oc *ops.Context, x *tensor.Tensor, offs []int, upd *tensor.Tensor, run int, red string) (*tensor.Tensor, error) {
	mv := tensorops.MoverOf(x.DType)
	out, err := clone(oc, mv, x.Data, x.Len())
	if err != nil {
		return nil, err
	}
	y := &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}
	if len(offs) == 0 || run == 0 {
		return y, nil
	}
	if red == "none" {
		if err := put(oc, mv, out, 0, offs, upd.Data, 0, run); err != nil {
			return nil, err
		}
		return y, nil
	}
	switch d := out.(type) {
	case []float32:
		err = scatterReduce(oc, d, upd.Data.([]float32), offs, run, red)
	case []float64:
		err = scatterReduce(oc, d, upd.Data.([]float64), offs, run, red)
	case []int8:
		err = scatterReduce(oc, d, upd.Data.([]int8), offs, run, red)
	case []uint8:
		err = scatterReduce(oc, d, upd.Data.([]uint8), offs, run, red)
	case []int16:
		err = scatterReduce(oc, d, upd.Data.([]int16), offs, run, red)
	case []uint16:
		err = scatterReduce(oc, d, upd.Data.([]uint16), offs, run, red)
	case []int32:
		err = scatterReduce(oc, d, upd.Data.([]int32), offs, run, red)
	case []uint32:
		err = scatterReduce(oc, d, upd.Data.([]uint32), offs, run, red)
	case []int64:
		err = scatterReduce(oc, d, upd.Data.([]int64), offs, run, red)
	case []uint64:
		err = scatterReduce(oc, d, upd.Data.([]uint64), offs, run, red)
	case []tensor.F16:
		f := tensor.HalfToFloat32(d)
		err = scatterReduce(oc, f, tensor.HalfToFloat32(upd.Data.([]tensor.F16)), offs, run, red)
		y.Data = tensor.Float32ToHalf[tensor.F16](f)
	case []tensor.BF16:
		f := tensor.HalfToFloat32(d)
		err = scatterReduce(oc, f, tensor.HalfToFloat32(upd.Data.([]tensor.BF16)), offs, run, red)
		y.Data = tensor.Float32ToHalf[tensor.BF16](f)
	default:
		return nil, ops.InputErrorf("scatter reduction %q does not take %v", red, x.DType)
	}
	if err != nil {
		return nil, err
	}
	return y, nil
}

func scatterReduce[T tensor.Numeric](oc *ops.Context, dst, src []T, offs []int, run int, red string) error {
	var f func(a, b T) T
	switch red {
	case "add":
		f = func(a, b T) T { return a + b }
	case "mul":
		f = func(a, b T) T { return a * b }
	case "max":
		f = func(a, b T) T { return max(a, b) }
	case "min":
		f = func(a, b T) T { return min(a, b) }
	}
	for i, o := range offs {
		d, s := dst[o:o+run], src[i*run:(i+1)*run]
		for lo := 0; lo < run; lo += ops.TickEvery {
			hi := min(lo+ops.TickEvery, run)
			if err := oc.Tick(hi - lo); err != nil {
				return err
			}
			for j := lo; j < hi; j++ {
				d[j] = f(d[j], s[j])
			}
		}
	}
	return nil
}
