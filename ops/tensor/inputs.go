package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// indexList reads a 1-D INT32 or INT64 tensor (Slice's starts, Tile's
// repeats, ...) as int64s.
func indexList(t *tensor.Tensor, what string) ([]int64, error) {
	if t == nil {
		return nil, nil
	}
	if t.DType != tensor.Int64 && t.DType != tensor.Int32 {
		return nil, ops.InputErrorf("%s must be INT32 or INT64, got %v", what, t.DType)
	}
	if t.Rank() > 1 {
		return nil, ops.InputErrorf("%s must be 1-D, got shape %s", what, tensor.ShapeString(t.Shape))
	}
	v, err := t.Int64s()
	if err != nil {
		return nil, ops.InputErrorf("%s: %v", what, err)
	}
	return v, nil
}

// axesInput returns the optional INT64 axes input of Squeeze/Unsqueeze
// (opset 13 on) and whether it is given.
func axesInput(in []*tensor.Tensor) ([]int64, bool, error) {
	if len(in) < 2 || in[1] == nil {
		return nil, false, nil
	}
	a, ok := in[1].Data.([]int64)
	if !ok {
		return nil, false, ops.InputErrorf("axes must be INT64, got %v", in[1].DType)
	}
	return a, true, nil
}
