package matmul

import (
	"math"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "QuantizeLinear", Since: 10, Fold: true}, buildQuantizeLinear)
}

// QuantizeAttrs are the attributes of QuantizeLinear.
type QuantizeAttrs struct {
	Axis        int64 `onnx:"axis" default:"1"`
	BlockSize   int64 `onnx:"block_size"`
	OutputDType int64 `onnx:"output_dtype"`
	Saturate    bool  `onnx:"saturate" default:"true"`
	Precision   int64 `onnx:"precision"`
}

// quantizeLinear is a compiled QuantizeLinear: y = saturate(round(x /
// scale) + zero_point), scales per tensor, per axis or blocked, into the
// zero point's integer type (output_dtype's, UINT8 without either).
type quantizeLinear struct {
	axis, block int64
	outType     tensor.DataType
}

func buildQuantizeLinear(n *ops.Node, at *QuantizeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	q := &quantizeLinear{axis: at.Axis, block: at.BlockSize, outType: tensor.Uint8}
	if at.OutputDType != 0 {
		var err error
		if q.outType, err = onnx.DataTypeFromONNX(onnxpb.DataType(at.OutputDType)); err != nil {
			return nil, err
		}
	}
	if _, _, ok := IntRange(q.outType); !ok || q.outType == tensor.Int32 {
		return nil, ops.Unsupportedf("QuantizeLinear to %v", q.outType)
	}
	return q, nil
}

func (q *quantizeLinear) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, scale := in[0], in[1]
	xs, ok1 := x.Data.([]float32)
	ss, ok2 := scale.Data.([]float32)
	if !ok1 || !ok2 {
		return nil, ops.InputErrorf("QuantizeLinear takes FP32 x and scale, got %v and %v", x.DType, scale.DType)
	}
	dt := q.outType
	var zp []float64
	if len(in) > 2 && in[2] != nil {
		dt = in[2].DType
		zp = in[2].Float64s()
		if !sameDims(in[2].Shape, scale.Shape) {
			return nil, ops.InputErrorf("zero point shape %s differs from scale %s", tensor.ShapeString(in[2].Shape), tensor.ShapeString(scale.Shape))
		}
	}
	lo, hi, ok := IntRange(dt)
	if !ok || dt == tensor.Int32 {
		return nil, ops.InputErrorf("QuantizeLinear to %v", dt)
	}
	idx, err := scaleIndex(x.Shape, scale.Shape, q.axis, q.block)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(xs))
	err = c.InPieces(len(xs), func(p, q int) {
		for i := p; i < q; i++ {
			s := idx(i)
			r := math.RoundToEven(float64(xs[i] / ss[s]))
			if zp != nil {
				r += zp[s]
			}
			out[i] = min(max(r, lo), hi)
		}
	})
	if err != nil {
		return nil, err
	}
	return ops.Result(tensorops.CastToContext(c, tensor.From(x.Shape, out), dt))
}

// IntRange returns the range an integer type saturates to (INT8, UINT8,
// INT16, UINT16 and INT32), and false for any other type.
func IntRange(dt tensor.DataType) (lo, hi float64, ok bool) {
	switch dt {
	case tensor.Int8:
		return math.MinInt8, math.MaxInt8, true
	case tensor.Uint8:
		return 0, math.MaxUint8, true
	case tensor.Int16:
		return math.MinInt16, math.MaxInt16, true
	case tensor.Uint16:
		return 0, math.MaxUint16, true
	case tensor.Int32:
		return math.MinInt32, math.MaxInt32, true
	}
	return 0, 0, false
}

// scaleIndex maps each element of a tensor of shape xs to its entry in a
// scale tensor of shape ss: per tensor (one scale), per axis (a 1-D scale
// along axis) or blocked (ss equals xs but for axis, whose size is
// ceil(xs[axis]/block)).
func scaleIndex(xs, ss []int, axis int64, block int64) (func(i int) int, error) {
	n, _ := tensor.NumElements(ss)
	if n == 1 && len(ss) <= 1 {
		return func(int) int { return 0 }, nil
	}
	a, err := ops.NormAxis(axis, len(xs))
	if err != nil {
		return nil, err
	}
	dim, inner := xs[a], 1
	for _, d := range xs[a+1:] {
		inner *= d
	}
	if len(ss) == 1 && block == 0 {
		if ss[0] != dim {
			return nil, ops.InputErrorf("per-axis scale has %d entries, axis %d has %d", ss[0], a, dim)
		}
		return func(i int) int { return i / inner % dim }, nil
	}
	if len(ss) != len(xs) || block <= 0 {
		return nil, ops.InputErrorf("scale shape %s does not fit input %s (block_size %d)", tensor.ShapeString(ss), tensor.ShapeString(xs), block)
	}
	for i := range xs {
		want := xs[i]
		if i == a {
			want = (xs[i] + int(block) - 1) / int(block)
		}
		if ss[i] != want {
			return nil, ops.InputErrorf("blocked scale shape %s does not fit input %s with block_size %d", tensor.ShapeString(ss), tensor.ShapeString(xs), block)
		}
	}
	sdim, b := ss[a], int(block)
	return func(i int) int {
		o, d, j := i/(dim*inner), i/inner%dim, i%inner
		return (o*sdim+d/b)*inner + j
	}, nil
}

// sameDims reports whether a zero point of shape a fits a scale of shape
// b: the same shape, or one value each.
func sameDims(a, b []int) bool {
	na, _ := tensor.NumElements(a)
	nb, _ := tensor.NumElements(b)
	return ops.EqualShape(a, b) || na == 1 && nb == 1
}
