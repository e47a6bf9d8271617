package matmul

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.QuantizeDequantize is what the graph compiler's "qdq"
// rewrite makes of an activation's QuantizeLinear -> DequantizeLinear
// pair (what static QDQ quantizers such as ONNX Runtime's quantize_static
// put after every quantized activation):
//
//	q = QuantizeLinear(x, qs, qz)      per tensor, to INT8 or UINT8
//	y = DequantizeLinear(q, ds, dz)    per tensor, the same integer type
//
// Inputs: x (FP32), qs (FP32 scalar), qz (INT8 or UINT8 scalar, or
// absent: UINT8 0), ds (FP32 scalar), dz (of qz's type, or absent: 0),
// the four constants. One pass computes, per element, what the two nodes
// do, each step the same float operation:
//
//	r = clamp(roundEven(float64(x / qs)) + qz, lo, hi)   (as QuantizeLinear)
//	q = the integer type's conversion of r                (as its Cast)
//	y = float32(float64(q) - dz) · ds                     (as DequantizeLinear)
//
// so the node's output is the pair's bit for bit (quant.FakeQuant, which
// the fused convolution's output stage shares), on the engine's vector
// kernels (quant.FakeQuant.ApplyVector).

// QDQCost is one element's cost of a pair (see ops.ScalarCost), as this
// step and a fused convolution's input stage run it: four vector passes
// (one a division) and a scalar check.
const QDQCost = 4 * ops.VectorCost

func init() {
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "QuantizeDequantize", Since: 1, Fold: true}, buildQuantizeDequantize)
}

// quantizeDequantize is a compiled quantserve.QuantizeDequantize: the
// pair's arithmetic is quant.FakeQuant's.
type quantizeDequantize struct {
	fq *quant.FakeQuant
}

func buildQuantizeDequantize(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckCounts(5, 5, 1, 1); err != nil {
		return nil, err
	}
	if err := n.RequireInputs(1); err != nil {
		return nil, err
	}
	scalar := func(i int) (*tensor.Tensor, bool) {
		t := n.Const(i)
		if t == nil {
			return nil, n.Inputs[i] == ""
		}
		return t, t.Len() == 1 && t.Rank() <= 1
	}
	qs, ok1 := scalar(1)
	qz, ok2 := scalar(2)
	ds, ok3 := scalar(3)
	dz, ok4 := scalar(4)
	if !ok1 || !ok2 || !ok3 || !ok4 || qs == nil || ds == nil {
		return nil, ops.Unsupportedf("QuantizeDequantize takes constant per-tensor scales and zero points")
	}
	qsv, ok1 := qs.Data.([]float32)
	dsv, ok2 := ds.Data.([]float32)
	if !ok1 || !ok2 {
		return nil, ops.Unsupportedf("QuantizeDequantize takes FP32 scales")
	}
	dt := tensor.Uint8
	var qzv, dzv float64
	if qz != nil {
		dt, qzv = qz.DType, qz.Float64s()[0]
	}
	if dz != nil {
		if dz.DType != dt {
			return nil, ops.Unsupportedf("QuantizeDequantize zero points of types %v and %v", dt, dz.DType)
		}
		dzv = dz.Float64s()[0]
	}
	if dt != tensor.Uint8 && dt != tensor.Int8 {
		return nil, ops.Unsupportedf("QuantizeDequantize to %v", dt)
	}
	return &quantizeDequantize{fq: quant.NewFakeQuant(qsv[0], qzv, dsv[0], dzv, dt == tensor.Int8)}, nil
}

func (f *quantizeDequantize) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, ok := in[0].Data.([]float32)
	if !ok {
		return nil, ops.InputErrorf("QuantizeLinear takes FP32 x, got %v", in[0].DType)
	}
	out := c.Float32Output(len(x))
	tb := c.Engine().Table()
	k := tb.FakeQuantKernels()
	err := c.ParallelRows(len(x), QDQCost, func(lo, hi int) { f.fq.ApplyVector(out[lo:hi], x[lo:hi], k) })
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Float32, Shape: in[0].Shape, Data: out}}, nil
}
