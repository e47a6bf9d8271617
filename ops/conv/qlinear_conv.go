package conv

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/matmul"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// QLinearConv is the QLinearConv operator: ConvInteger's exact sums,
// plus an INT32 bias, scaled by x_scale·w_scale/y_scale, rounded half to
// even, offset by y_zero_point and saturated to y's type.
var QLinearConv = ops.Op{ops.Register(ops.Descriptor{Type: "QLinearConv", Since: 10, Fold: true}, buildQLinearConv)}

// qlinearConv is a compiled QLinearConv.
type qlinearConv struct{ intConv }

func buildQLinearConv(n *ops.Node, at *ConvAttrs) (ops.Operator, error) {
	if err := n.CheckArity(8, 9, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	op := &qlinearConv{intConv{at: at}}
	if w, wzp := n.Const(3), n.Const(5); w != nil && wzp != nil {
		held, err := holdIntWeight(n, w, wzp, int(at.Group))
		if err != nil {
			return nil, err
		}
		if held != nil {
			op.held, op.heldShape = held, w.Shape
			n.HoldInputs(3, 5)
		}
	}
	return op, nil
}

func (o *qlinearConv) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, xs, xzp, w, ws, wzp, ys, yzp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
	bias := input(in, 8)
	acc, shape, err := o.sums(c, "QLinearConv", x, xzp, w, wzp)
	if err != nil {
		return nil, err
	}
	m := shape[1]
	xsv, ok1 := xs.Data.([]float32)
	wsv, ok2 := ws.Data.([]float32)
	ysv, ok3 := ys.Data.([]float32)
	if !ok1 || !ok2 || !ok3 || len(xsv) != 1 || len(ysv) != 1 || len(wsv) != 1 && len(wsv) != m {
		return nil, ops.InputErrorf("QLinearConv takes FP32 scales: x and y per tensor, w per tensor or per output channel (%d)", m)
	}
	if yzp == nil {
		return nil, ops.InputErrorf("QLinearConv needs y_zero_point")
	}
	lo, hi, ok := matmul.IntRange(yzp.DType)
	if !ok || yzp.DType != tensor.Uint8 && yzp.DType != tensor.Int8 || yzp.Len() != 1 {
		return nil, ops.InputErrorf("QLinearConv y_zero_point must be one UINT8 or INT8 value")
	}
	z := yzp.Float64s()[0]
	var bv []int32
	if bias != nil {
		b, ok := bias.Data.([]int32)
		if !ok || bias.Rank() != 1 || len(b) != m {
			return nil, ops.InputErrorf("QLinearConv bias must be INT32 with %d values, got %v%s", m, bias.DType, tensor.ShapeString(bias.Shape))
		}
		bv = b
	}
	size := ops.ProdInts(shape[2:])
	mult := make([]float64, m)
	for ch := range mult {
		mult[ch] = float64(xsv[0] * wsv[ch%len(wsv)] / ysv[0]) // float32, as ONNX's reference computes it
	}
	out := make([]float64, len(acc))
	for i, v := range acc {
		ch := i / max(size, 1) % m
		if bv != nil {
			v += bv[ch]
		}
		out[i] = min(max(math.RoundToEven(float64(v)*mult[ch]+z), lo), hi)
	}
	return ops.Result(tensorops.CastTo(tensor.From(shape, out), yzp.DType))
}
