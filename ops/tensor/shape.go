package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Shape", Since: 1, Fold: true}, buildShape)
}

// ShapeAttrs are Shape's attributes (opset 15 on).
type ShapeAttrs struct {
	Start int64 `onnx:"start"`
	End   int64 `onnx:"end" default:"9223372036854775807"`
}

// shapeOf is a compiled Shape: the axes [start, end) whose dimensions it
// outputs, each counted from the end when negative and clamped to the
// input's rank.
type shapeOf struct{ start, end int64 }

func buildShape(n *ops.Node, at *ShapeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return shapeOf{start: at.Start, end: at.End}, nil
}

func (s shapeOf) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	r := int64(x.Rank())
	clampAxis := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return min(max(v, 0), r)
	}
	lo, hi := clampAxis(s.start), clampAxis(s.end)
	dims := []int64{}
	for i := lo; i < hi; i++ {
		dims = append(dims, int64(x.Shape[i]))
	}
	return []*tensor.Tensor{tensor.From([]int{len(dims)}, dims)}, nil
}
