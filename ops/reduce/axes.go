package reduce

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Reduction is the attribute struct of a reduction in either form; the
// gradient code uses it to recover which axes a node reduced.
type Reduction interface {
	// ReducedAxes marks the axes of a rank-r input the node reduces,
	// given its axes input (nil when absent or in the attribute form).
	ReducedAxes(rank int, axes *tensor.Tensor) ([]bool, error)
	// Keep reports whether reduced axes stay as dimensions of size 1.
	Keep() bool
}

// ReduceAttrs are the attributes of the reductions while the axes are an
// attribute (ReduceSum before opset 13, the others before 18).
type ReduceAttrs struct {
	Axes     []int64 `onnx:"axes"` // nil: every axis
	KeepDims bool    `onnx:"keepdims" default:"true"`
}

// ReduceInputAttrs are their attributes once the axes are an input.
type ReduceInputAttrs struct {
	KeepDims          bool `onnx:"keepdims" default:"true"`
	NoopWithEmptyAxes bool `onnx:"noop_with_empty_axes"`
}

// ReducedAxes implements Reduction: no axes means every axis.
func (a *ReduceAttrs) ReducedAxes(rank int, _ *tensor.Tensor) ([]bool, error) {
	return reducedAxes(rank, a.Axes, false)
}

// Keep implements Reduction.
func (a *ReduceAttrs) Keep() bool { return a.KeepDims }

// ReducedAxes implements Reduction: absent or empty axes mean every axis,
// or none with noop_with_empty_axes.
func (a *ReduceInputAttrs) ReducedAxes(rank int, axes *tensor.Tensor) ([]bool, error) {
	var list []int64
	if axes != nil {
		if axes.DType != tensor.Int64 || axes.Rank() > 1 {
			return nil, ops.InputErrorf("the axes input must be a 1-D INT64 tensor, got %v%s", axes.DType, tensor.ShapeString(axes.Shape))
		}
		list = axes.Data.([]int64)
	}
	return reducedAxes(rank, list, a.NoopWithEmptyAxes)
}

// Keep implements Reduction.
func (a *ReduceInputAttrs) Keep() bool { return a.KeepDims }

func reducedAxes(rank int, axes []int64, noop bool) ([]bool, error) {
	red := make([]bool, rank)
	if len(axes) == 0 {
		if !noop {
			for i := range red {
				red[i] = true
			}
		}
		return red, nil
	}
	for _, ax := range axes {
		a, err := ops.NormAxis(ax, rank)
		if err != nil {
			return nil, err
		}
		if red[a] {
			return nil, ops.InputErrorf("axis %d is reduced twice", ax)
		}
		red[a] = true
	}
	return red, nil
}
