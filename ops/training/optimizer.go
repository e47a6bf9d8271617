package training

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Domain is the ONNX domain of the optimizer operators.
const Domain = "ai.onnx.preview.training"

// optimizerGroups checks an optimizer node's arity: R, T, then groups
// tensor lists of k tensors each (X, G, and the state), and outs output
// lists of k. It returns k.
func optimizerGroups(n *ops.Node, groups, outs int) (int, error) {
	nin := len(n.Inputs) - 2
	if nin <= 0 || nin%groups != 0 {
		return 0, fmt.Errorf("has %d inputs, takes R, T and %d lists of equal length", len(n.Inputs), groups)
	}
	k := nin / groups
	if len(n.Outputs) != k*outs {
		return 0, fmt.Errorf("optimizes %d tensors, so has %d outputs, not %d", k, k*outs, len(n.Outputs))
	}
	return k, nil
}

// optimizerScalars reads the learning rate R and update count T.
func optimizerScalars(op string, in []*tensor.Tensor) (r float64, t int64, err error) {
	if in[0] == nil || in[1] == nil {
		return 0, 0, ops.InputErrorf("%s needs R and T", op)
	}
	if in[0].Len() != 1 || !in[0].DType.IsFloat() {
		return 0, 0, ops.InputErrorf("%s: R must be one float, got %v %s", op, in[0].DType, tensor.ShapeString(in[0].Shape))
	}
	if in[1].Len() != 1 || in[1].DType != tensor.Int64 {
		return 0, 0, ops.InputErrorf("%s: T must be one INT64, got %v %s", op, in[1].DType, tensor.ShapeString(in[1].Shape))
	}
	return in[0].Float64s()[0], in[1].Data.([]int64)[0], nil
}

// optimizerTensors returns the k tensors of group g as float64 values,
// checking that each matches the shape and type of its X.
func optimizerTensors(op string, in []*tensor.Tensor, k, g int) ([][]float64, error) {
	out := make([][]float64, k)
	for i := range k {
		x, t := in[2+i], in[2+g*k+i]
		if x == nil || t == nil {
			return nil, ops.InputErrorf("%s: tensor %d is missing", op, 2+g*k+i)
		}
		if t.DType != tensor.Float32 && t.DType != tensor.Float64 {
			return nil, ops.InputErrorf("%s takes FP32 or FP64 tensors, got %v", op, t.DType)
		}
		if t.DType != x.DType || !ops.EqualShape(t.Shape, x.Shape) {
			return nil, ops.InputErrorf("%s: input %d is %v %s, its X is %v %s", op, 2+g*k+i, t.DType, tensor.ShapeString(t.Shape), x.DType, tensor.ShapeString(x.Shape))
		}
		out[i] = t.Float64s()
	}
	return out, nil
}

// optimizerOut converts v back to x's type and shape.
func optimizerOut(x *tensor.Tensor, v []float64) *tensor.Tensor {
	if x.DType == tensor.Float64 {
		return &tensor.Tensor{DType: tensor.Float64, Shape: x.Shape, Data: v}
	}
	f := make([]float32, len(v))
	for i, e := range v {
		f[i] = float32(e)
	}
	return &tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: f}
}
