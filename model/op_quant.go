package model

import (
	"math"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// The operators of ONNX Runtime's quantization tools.

func init() {
	register(Descriptor{Type: "QuantizeLinear", Since: 10, Fold: true}, buildQuantizeLinear)
	register(Descriptor{Type: "DequantizeLinear", Since: 10, Fold: true}, buildDequantizeLinear)
	register(Descriptor{Type: "DynamicQuantizeLinear", Since: 11, Fold: true}, buildDynamicQuantizeLinear)
	register(Descriptor{Type: "MatMulInteger", Since: 10, Fold: true}, buildMatMulInteger)
	register(Descriptor{Type: "QLinearMatMul", Since: 10, Fold: true}, buildQLinearMatMul)
}

// QuantizeAttrs are the attributes of QuantizeLinear.
type QuantizeAttrs struct {
	Axis        int64 `onnx:"axis" default:"1"`
	BlockSize   int64 `onnx:"block_size"`
	OutputDType int64 `onnx:"output_dtype"`
	Saturate    bool  `onnx:"saturate" default:"true"`
	Precision   int64 `onnx:"precision"`
}

// DequantizeAttrs are the attributes of DequantizeLinear.
type DequantizeAttrs struct {
	Axis        int64 `onnx:"axis" default:"1"`
	BlockSize   int64 `onnx:"block_size"`
	OutputDType int64 `onnx:"output_dtype"`
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
	a, err := normAxis(axis, len(xs))
	if err != nil {
		return nil, err
	}
	dim, inner := xs[a], 1
	for _, d := range xs[a+1:] {
		inner *= d
	}
	if len(ss) == 1 && block == 0 {
		if ss[0] != dim {
			return nil, inputErrorf("per-axis scale has %d entries, axis %d has %d", ss[0], a, dim)
		}
		return func(i int) int { return i / inner % dim }, nil
	}
	if len(ss) != len(xs) || block <= 0 {
		return nil, inputErrorf("scale shape %s does not fit input %s (block_size %d)", tensor.ShapeString(ss), tensor.ShapeString(xs), block)
	}
	for i := range xs {
		want := xs[i]
		if i == a {
			want = (xs[i] + int(block) - 1) / int(block)
		}
		if ss[i] != want {
			return nil, inputErrorf("blocked scale shape %s does not fit input %s with block_size %d", tensor.ShapeString(ss), tensor.ShapeString(xs), block)
		}
	}
	sdim, b := ss[a], int(block)
	return func(i int) int {
		o, d, j := i/(dim*inner), i/inner%dim, i%inner
		return (o*sdim+d/b)*inner + j
	}, nil
}

// intRange returns the saturation range of an integer type.
func intRange(dt tensor.DataType) (float64, float64, bool) {
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

func float32s(t *tensor.Tensor) ([]float32, bool) {
	d, ok := t.Data.([]float32)
	return d, ok
}

func buildQuantizeLinear(n *node, at *QuantizeAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	axis, block, outAttr := at.Axis, at.BlockSize, at.OutputDType
	outType := tensor.Uint8
	var err error
	if outAttr != 0 {
		if outType, err = DataTypeFromONNX(onnxpb.DataType(outAttr)); err != nil {
			return nil, err
		}
	}
	if _, _, ok := intRange(outType); !ok || outType == tensor.Int32 {
		return nil, unsupportedf("QuantizeLinear to %v", outType)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, scale := in[0], in[1]
		xs, ok1 := float32s(x)
		ss, ok2 := float32s(scale)
		if !ok1 || !ok2 {
			return nil, inputErrorf("QuantizeLinear takes FP32 x and scale, got %v and %v", x.DType, scale.DType)
		}
		dt := outType
		var zp []float64
		if len(in) > 2 && in[2] != nil {
			dt = in[2].DType
			zp = in[2].Float64s()
			if !sameDims(in[2].Shape, scale.Shape) {
				return nil, inputErrorf("zero point shape %s differs from scale %s", tensor.ShapeString(in[2].Shape), tensor.ShapeString(scale.Shape))
			}
		}
		lo, hi, ok := intRange(dt)
		if !ok || dt == tensor.Int32 {
			return nil, inputErrorf("QuantizeLinear to %v", dt)
		}
		idx, err := scaleIndex(x.Shape, scale.Shape, axis, block)
		if err != nil {
			return nil, err
		}
		q := make([]float64, len(xs))
		for i, v := range xs {
			s := idx(i)
			r := math.RoundToEven(float64(v / ss[s]))
			if zp != nil {
				r += zp[s]
			}
			q[i] = min(max(r, lo), hi)
		}
		y, err := castTo(tensor.From(x.Shape, q), dt)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func sameDims(a, b []int) bool {
	na, _ := tensor.NumElements(a)
	nb, _ := tensor.NumElements(b)
	return equalShape(a, b) || na == 1 && nb == 1
}

func buildDequantizeLinear(n *node, at *DequantizeAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	axis, block := at.Axis, at.BlockSize
	if od := at.OutputDType; od != 0 && od != int64(onnxpb.Float) {
		return nil, unsupportedf("DequantizeLinear output_dtype %v", onnxpb.DataType(od))
	}
	if allKnown(n.consts) {
		n.qdqOut = qdqWeights(n.consts, axis, block)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		y, err := dequantizeLinear(in, axis, block)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func dequantizeLinear(in []*tensor.Tensor, axis, block int64) (*tensor.Tensor, error) {
	x, scale := in[0], in[1]
	ss, ok := float32s(scale)
	if !ok {
		return nil, inputErrorf("DequantizeLinear takes an FP32 scale, got %v", scale.DType)
	}
	if _, _, ok := intRange(x.DType); !ok {
		return nil, inputErrorf("DequantizeLinear does not take %v", x.DType)
	}
	var zp []float64
	if len(in) > 2 && in[2] != nil {
		if in[2].DType != x.DType || !sameDims(in[2].Shape, scale.Shape) {
			return nil, inputErrorf("zero point %v%s does not match x %v and scale %s", in[2].DType, tensor.ShapeString(in[2].Shape), x.DType, tensor.ShapeString(scale.Shape))
		}
		zp = in[2].Float64s()
	}
	idx, err := scaleIndex(x.Shape, scale.Shape, axis, block)
	if err != nil {
		return nil, err
	}
	xv := x.Float64s()
	out := make([]float32, len(xv))
	for i, v := range xv {
		s := idx(i)
		if zp != nil {
			v -= zp[s]
		}
		out[i] = float32(v) * ss[s]
	}
	return tensor.From(x.Shape, out), nil
}

// qdqWeights returns the integer weights of a DequantizeLinear of
// constant inputs, when they fit the int8 kernels: a 2-D INT8 or UINT8
// tensor, zero points absent or of its type (per tensor, or per column of
// the 2-D weight; per row when transposed, as Gemm's transB has it), a
// scale per tensor or per column. Values less their zero points span
// [-255, 255]; the kernels take those outside [-127, 127] in parts.
func qdqWeights(in []*tensor.Tensor, axis int64, block int64) *qdqWeight {
	x, scale := in[0], in[1]
	ss, ok := float32s(scale)
	if !ok || x.Rank() != 2 || block != 0 || x.DType != tensor.Int8 && x.DType != tensor.Uint8 {
		return nil
	}
	w := &qdqWeight{rows: x.Shape[0], cols: x.Shape[1], scales: ss}
	switch {
	case len(ss) == 1 && scale.Rank() <= 1:
		w.perTensor = true
	case scale.Rank() == 1:
		a, err := normAxis(axis, 2)
		if err != nil || ss == nil || len(ss) != x.Shape[a] {
			return nil
		}
		w.axis = a
	default:
		return nil
	}
	for _, s := range ss {
		if !(s >= 0) || math.IsInf(float64(s), 0) {
			return nil
		}
	}
	var z []int64
	if len(in) > 2 && in[2] != nil {
		if in[2].DType != x.DType {
			return nil
		}
		z, _ = in[2].Int64s()
		if len(z) != len(ss) {
			return nil
		}
	}
	xv, _ := x.Int64s()
	w.q = make([]int32, len(xv))
	for i, v := range xv {
		switch {
		case z == nil:
		case w.perTensor:
			v -= z[0]
		case w.axis == 1:
			v -= z[i%w.cols]
		default:
			v -= z[i/w.cols]
		}
		w.q[i] = int32(v)
	}
	return w
}

// qdqWeight is a 2-D integer weight less its zero points, with its
// scales, as a QDQ model stores it.
type qdqWeight struct {
	q          []int32
	rows, cols int
	scales     []float32
	perTensor  bool
	axis       int // the axis the scales run along, when not per tensor
}

// intWeights are K×N integer weights (values less zero points) with
// per-tensor or per-channel scales: W = Q·scale.
type intWeights struct {
	K, N   int
	Q      []int32
	Scheme quant.Scheme
	Scales []float32
}

// narrow returns w as int8 quant.Weights when every value is in
// [-127, 127], or nil.
func (w *intWeights) narrow() *quant.Weights {
	q := make([]int8, len(w.Q))
	for i, v := range w.Q {
		if v < -127 || v > 127 {
			return nil
		}
		q[i] = int8(v)
	}
	return &quant.Weights{Scheme: w.Scheme, K: w.K, N: w.N, Q: q, Scales: w.Scales}
}

// weights returns the K×N weights for a product x·W, where W is the
// stored matrix or, with transposed, its transpose; nil when the scales
// run along K.
func (w *qdqWeight) weights(transposed bool) *intWeights {
	k, n, q := w.rows, w.cols, w.q
	axis := w.axis
	if transposed {
		k, n = w.cols, w.rows
		t := make([]int32, len(q))
		for i := 0; i < w.rows; i++ {
			for j := 0; j < w.cols; j++ {
				t[j*w.rows+i] = q[i*w.cols+j]
			}
		}
		q = t
		axis = 1 - axis
	}
	if w.perTensor {
		return &intWeights{Scheme: quant.PerTensor, K: k, N: n, Q: q, Scales: []float32{w.scales[0]}}
	}
	if axis != 1 {
		return nil // scales along K: not a per-channel layout
	}
	return &intWeights{Scheme: quant.PerChannel, K: k, N: n, Q: q, Scales: w.scales}
}

func buildDynamicQuantizeLinear(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 3, 3); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		xs, ok := float32s(in[0])
		if !ok {
			return nil, inputErrorf("DynamicQuantizeLinear takes FP32, got %v", in[0].DType)
		}
		var lo, hi float32
		for _, v := range xs {
			lo, hi = min(lo, v), max(hi, v)
		}
		scale := (hi - lo) / 255
		var zp float32
		if scale != 0 {
			zp = float32(min(max(math.RoundToEven(float64(0-lo/scale)), 0), 255))
		}
		y := make([]uint8, len(xs))
		if scale != 0 {
			for i, v := range xs {
				y[i] = uint8(min(max(math.RoundToEven(float64(v/scale))+float64(zp), 0), 255))
			}
		}
		return []*tensor.Tensor{
			{DType: tensor.Uint8, Shape: in[0].Shape, Data: y},
			tensor.Scalar(scale),
			tensor.Scalar(uint8(zp)),
		}, nil
	}, nil
}

// minusZeroPoint returns x - zp as INT32, zp a scalar or a 1-D tensor along
// the given axis of x (-2: rows of the last two dims, -1: columns).
func minusZeroPoint(x, zp *tensor.Tensor, axis int) (*tensor.Tensor, error) {
	if _, _, ok := intRange(x.DType); !ok || x.DType == tensor.Int32 || x.DType == tensor.Int16 || x.DType == tensor.Uint16 {
		return nil, inputErrorf("integer matmul takes INT8 or UINT8, got %v", x.DType)
	}
	xv, _ := x.Int64s()
	out := make([]int32, len(xv))
	var z []int64
	if zp != nil {
		if zp.DType != x.DType {
			return nil, inputErrorf("zero point type %v differs from %v", zp.DType, x.DType)
		}
		z, _ = zp.Int64s()
	}
	r := x.Rank()
	if r == 0 {
		return nil, inputErrorf("integer matmul needs rank >= 1")
	}
	dim, inner := x.Shape[r-1], 1
	if axis == -2 && r >= 2 {
		dim, inner = x.Shape[r-2], x.Shape[r-1]
	}
	if len(z) > 1 && len(z) != dim {
		return nil, inputErrorf("zero point has %d entries, want 1 or %d", len(z), dim)
	}
	for i, v := range xv {
		switch len(z) {
		case 0:
		case 1:
			v -= z[0]
		default:
			v -= z[i/inner%dim]
		}
		out[i] = int32(v)
	}
	return &tensor.Tensor{DType: tensor.Int32, Shape: x.Shape, Data: out}, nil
}

func buildMatMulInteger(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	exec := n.opts.Exec
	if p := newIntProduct(n, 1, 3); p != nil {
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			var azp *tensor.Tensor
			if len(in) > 2 {
				azp = in[2]
			}
			y, err := p.run(in[0], azp)
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{y}, nil
		}, nil
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var azp, bzp *tensor.Tensor
		if len(in) > 2 {
			azp = in[2]
		}
		if len(in) > 3 {
			bzp = in[3]
		}
		a, err := minusZeroPoint(in[0], azp, -2)
		if err != nil {
			return nil, err
		}
		b, err := minusZeroPoint(in[1], bzp, -1)
		if err != nil {
			return nil, err
		}
		y, err := matmul(exec, a, b)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func buildQLinearMatMul(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(8, 8, 1, 1); err != nil {
		return nil, err
	}
	exec := n.opts.Exec
	p := newIntProduct(n, 3, 5)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var acc *tensor.Tensor
		if p != nil {
			var err error
			if acc, err = p.run(in[0], in[2]); err != nil {
				return nil, err
			}
		} else {
			a, err := minusZeroPoint(in[0], in[2], -2)
			if err != nil {
				return nil, err
			}
			b, err := minusZeroPoint(in[3], in[5], -1)
			if err != nil {
				return nil, err
			}
			if acc, err = matmul(exec, a, b); err != nil {
				return nil, err
			}
		}
		// Scales are FP32, or FP16/BF16 from opset 21 (widened exactly).
		scale := func(t *tensor.Tensor) ([]float32, bool) {
			switch t.DType {
			case tensor.Float16, tensor.BFloat16:
				c, err := castTo(t, tensor.Float32)
				return c.Data.([]float32), err == nil
			}
			return float32s(t)
		}
		as, ok1 := scale(in[1])
		bs, ok2 := scale(in[4])
		ys, ok3 := scale(in[6])
		if !ok1 || !ok2 || !ok3 || len(as) != 1 || len(ys) != 1 || len(bs) == 0 {
			return nil, inputErrorf("QLinearMatMul takes float scales: a and y per tensor, b per tensor or per column")
		}
		yzp := in[7]
		lo, hi, ok := intRange(yzp.DType)
		if !ok || yzp.Len() != 1 {
			return nil, inputErrorf("QLinearMatMul output zero point must be one INT8 or UINT8 value")
		}
		z := yzp.Float64s()[0]
		nCols := acc.Shape[acc.Rank()-1]
		if len(bs) != 1 && len(bs) != nCols {
			return nil, inputErrorf("b_scale has %d entries, want 1 or %d", len(bs), nCols)
		}
		out := make([]float64, acc.Len())
		for i, v := range acc.Data.([]int32) {
			s := bs[0]
			if len(bs) > 1 {
				s = bs[i%nCols]
			}
			m := as[0] * s / ys[0] // float32, as the ONNX reference computes it
			out[i] = min(max(math.RoundToEven(float64(v)*float64(m)+z), lo), hi)
		}
		y, err := castTo(tensor.From(acc.Shape, out), yzp.DType)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}
