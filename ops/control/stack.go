package control

import (
	"reflect"
	"slices"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// outputTypes returns the element types a graph declares for its outputs
// (Invalid where it declares none), for empty scan outputs.
func outputTypes(g *onnxpb.Graph) []tensor.DataType {
	out := make([]tensor.DataType, len(g.Outputs))
	for i, vi := range g.Outputs {
		if vi.Type != nil && vi.Type.Kind == onnxpb.TypeTensor {
			out[i], _ = onnx.DataTypeFromONNX(vi.Type.ElemType)
		}
	}
	return out
}

// indexAxis returns x[..., i, ...] along axis: a tensor of rank one less.
func indexAxis(x *tensor.Tensor, axis, i int) *tensor.Tensor {
	outer, inner := 1, 1
	for _, d := range x.Shape[:axis] {
		outer *= d
	}
	for _, d := range x.Shape[axis+1:] {
		inner *= d
	}
	dim := x.Shape[axis]
	shape := slices.Concat(x.Shape[:axis], x.Shape[axis+1:])
	if outer == 1 {
		v := reflect.ValueOf(x.Data).Slice(i*inner, (i+1)*inner).Interface()
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: v}
	}
	out, _ := tensor.MakeSlice(x.DType, outer*inner)
	dst, src := reflect.ValueOf(out), reflect.ValueOf(x.Data)
	for o := 0; o < outer; o++ {
		reflect.Copy(dst.Slice(o*inner, (o+1)*inner), src.Slice((o*dim+i)*inner, (o*dim+i+1)*inner))
	}
	return &tensor.Tensor{DType: x.DType, Shape: shape, Data: out}
}

// stackTensors stacks parts of one shape and type along a new axis. With
// no parts it returns an empty [0] tensor of type dt.
func stackTensors(parts []*tensor.Tensor, axis int, dt tensor.DataType) (*tensor.Tensor, error) {
	if len(parts) == 0 {
		if dt == tensor.Invalid {
			dt = tensor.Float32
		}
		return tensor.New(dt, []int{0})
	}
	first := parts[0]
	for _, p := range parts[1:] {
		if p.DType != first.DType || !ops.EqualShape(p.Shape, first.Shape) {
			return nil, ops.InputErrorf("values to stack differ: %v%s and %v%s", first.DType, tensor.ShapeString(first.Shape), p.DType, tensor.ShapeString(p.Shape))
		}
	}
	if axis > first.Rank() {
		return nil, ops.InputErrorf("stacking axis %d for rank %d", axis, first.Rank())
	}
	shape := slices.Concat(first.Shape[:axis], []int{len(parts)}, first.Shape[axis:])
	total, err := tensor.NumElements(shape)
	if err != nil {
		return nil, err
	}
	outer, inner := 1, 1
	for _, d := range first.Shape[:axis] {
		outer *= d
	}
	for _, d := range first.Shape[axis:] {
		inner *= d
	}
	out, _ := tensor.MakeSlice(first.DType, total)
	dst := reflect.ValueOf(out)
	for k, p := range parts {
		src := reflect.ValueOf(p.Data)
		for o := 0; o < outer; o++ {
			at := (o*len(parts) + k) * inner
			reflect.Copy(dst.Slice(at, at+inner), src.Slice(o*inner, (o+1)*inner))
		}
	}
	return &tensor.Tensor{DType: first.DType, Shape: shape, Data: out}, nil
}
