package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// BitCast (opset 26) reinterprets each element's bytes as another type of
// the same size: little-endian, as ONNX stores tensors.
func init() {
	ops.Register(ops.Descriptor{Type: "BitCast", Since: 26, Fold: true}, buildBitCast)
}

// BitCastAttrs are BitCast's attributes.
type BitCastAttrs struct {
	To int64 `onnx:"to"`
}

// bitCast is a compiled BitCast: its target type.
type bitCast struct{ to tensor.DataType }

func buildBitCast(n *ops.Node, at *BitCastAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	to, err := onnx.DataTypeFromONNX(onnxpb.DataType(at.To))
	if err != nil {
		return nil, err
	}
	if to == tensor.String {
		return nil, fmt.Errorf("BitCast cannot produce strings")
	}
	return bitCast{to: to}, nil
}

func (b bitCast) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, to := in[0], b.to
	if x.DType == tensor.String || x.DType.Size() != to.Size() {
		return nil, ops.InputErrorf("BitCast cannot reinterpret %v as %v: element sizes differ", x.DType, to)
	}
	// piece by piece through little-endian bytes
	n := x.Len()
	from, mv := MoverOf(x.DType), MoverOf(to)
	out := mv.Alloc(n)
	var raw []byte
	err := c.InPieces(n, func(lo, hi int) {
		raw = tensor.AppendLittleEndian(raw[:0], &tensor.Tensor{DType: x.DType, Shape: []int{hi - lo}, Data: from.slice(x.Data, lo, hi)})
		mv.CopyN(out, lo, tensor.FromLittleEndian(to, raw, hi-lo), 0, hi-lo)
	})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: to, Shape: x.Shape, Data: out}}, nil
}
