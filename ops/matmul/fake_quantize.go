package matmul

import (
	"math"

	"github.com/quantserve/quantserve/ops"
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
// so the node's output is the pair's bit for bit; the 256 possible y are
// tabulated at load.

// qdqCost is one element's cost (see ops.ScalarCost): a division.
const qdqCost = ops.ScalarCost / 4

func init() {
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "QuantizeDequantize", Since: 1, Fold: true}, buildQuantizeDequantize)
}

// quantizeDequantize is a compiled quantserve.QuantizeDequantize.
type quantizeDequantize struct {
	scale  float32
	zp     float32 // the quantize zero point, an integer
	lo, hi float32 // the integer type's range
	signed bool
	table  [256]float32 // y by q - lo
	nanTo  int          // the table index a NaN lands on
	inv    float32      // 1/scale, when applyFast may use it (0: it may not)
}

func buildQuantizeDequantize(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(5, 5, 1, 1); err != nil {
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
	lo, hi, _ := IntRange(dt)
	f := &quantizeDequantize{scale: qsv[0], zp: float32(qzv), lo: float32(lo), hi: float32(hi), signed: dt == tensor.Int8}
	for i := range f.table {
		f.table[i] = float32(float64(int(lo)+i)-dzv) * dsv[0]
	}
	nan := math.NaN()
	if f.signed {
		f.nanTo = int(int8(nan)) - int(lo)
	} else {
		f.nanTo = int(uint8(nan)) - int(lo)
	}
	return f, nil
}

func (f *quantizeDequantize) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, ok := in[0].Data.([]float32)
	if !ok {
		return nil, ops.InputErrorf("QuantizeLinear takes FP32 x, got %v", in[0].DType)
	}
	out := make([]float32, len(x))
	err := c.ParallelRows(len(x), qdqCost, func(lo, hi int) { f.apply(out[lo:hi], x[lo:hi]) })
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Float32, Shape: in[0].Shape, Data: out}}, nil
}

// apply computes dst[i] from src[i]. x/qs is QuantizeLinear's own
// float32 division. Below 2^21 in magnitude, adding 1.5·2^23 rounds it
// to an integer half to even, as roundEven does, and leaves that integer
// in the low bits, which are then clamped to [lo - qz, hi - qz]; larger
// quotients and infinities clamp alike, and NaN lands where the integer
// conversion puts it.
func (f *quantizeDequantize) apply(dst, src []float32) {
	dst = dst[:len(src)]
	s := f.scale
	ka, kb := int32(f.lo-f.zp), int32(f.hi-f.zp)
	for i, v := range src {
		t := v / s
		if !(t < 0x1p21 && t > -0x1p21) {
			dst[i] = f.far(t)
			continue
		}
		k := int32(math.Float32bits(t+qdqMagic)) - qdqMagicBits
		dst[i] = f.table[uint8(min(max(k, ka), kb)-ka)]
	}
}

// Rounding by addition: for |t| < 2^22, t + qdqMagic is qdqMagic + roundEven(t)
// exactly, whose bits are qdqMagicBits + roundEven(t).
const (
	qdqMagic     = 0x1.8p23
	qdqMagicBits = 0x4B400000
)

// far returns the value of a quotient beyond ±2^21: a bound, or NaN's.
func (f *quantizeDequantize) far(t float32) float32 {
	switch {
	case t > 0:
		return f.table[255]
	case t < 0:
		return f.table[0]
	}
	return f.table[f.nanTo]
}
