package index

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "EyeLike", Since: 9, Fold: true}, buildEyeLike)
}

// EyeLikeAttrs are EyeLike's attributes.
type EyeLikeAttrs struct {
	DType *int64 `onnx:"dtype"` // nil: the input's type
	K     int64  `onnx:"k"`
}

// eyeLike is a compiled EyeLike: the output's type (Invalid: the
// input's) and the diagonal's offset.
type eyeLike struct {
	dt tensor.DataType
	k  int64
}

func buildEyeLike(n *ops.Node, at *EyeLikeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	var dt tensor.DataType
	if at.DType != nil {
		var err error
		if dt, err = onnx.DataTypeFromONNX(onnxpb.DataType(*at.DType)); err != nil {
			return nil, err
		}
		if dt == tensor.String {
			return nil, fmt.Errorf("EyeLike cannot make a %v tensor", dt)
		}
	}
	return eyeLike{dt: dt, k: at.K}, nil
}

func (op eyeLike) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	out := op.dt
	if out == tensor.Invalid {
		out = x.DType
	}
	if x.Rank() != 2 {
		return nil, ops.InputErrorf("EyeLike needs a 2-D input, got %s", tensor.ShapeString(x.Shape))
	}
	oneVal, err := tensorops.CastTo(tensor.Scalar(int64(1)), out)
	if err != nil {
		return nil, ops.InputErrorf("EyeLike cannot make a %v tensor", out)
	}
	y, size, err := NewTensor(c, out, slices.Clone(x.Shape))
	if err != nil {
		return nil, err
	}
	if size == 0 {
		return out1(y), nil
	}
	mv := tensorops.MoverOf(out)
	rows, cols := x.Shape[0], x.Shape[1]
	k := min(max(op.k, -int64(rows)), int64(cols)) // beyond the matrix: no diagonal
	for i := 0; i < rows; i++ {
		if j := int64(i) + k; j >= 0 && j < int64(cols) {
			mv.Fill(y.Data, i*cols+int(j), 1, oneVal.Data)
		}
		if err := c.Tick(1); err != nil {
			return nil, err
		}
	}
	return out1(y), nil
}
