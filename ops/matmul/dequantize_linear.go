package matmul

import (
	"math"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "DequantizeLinear", Since: 10, Fold: true}, buildDequantizeLinear)
}

// DequantizeAttrs are the attributes of DequantizeLinear.
type DequantizeAttrs struct {
	Axis        int64 `onnx:"axis" default:"1"`
	BlockSize   int64 `onnx:"block_size"`
	OutputDType int64 `onnx:"output_dtype"`
}

// dequantizeLinear is a compiled DequantizeLinear: y = (x - zero_point)·
// scale in float32, scales per tensor, per axis or blocked. Of constant
// inputs that fit the int8 kernels it keeps the integer weights (an
// ops.QDQSource): the products reading its output run on them.
type dequantizeLinear struct {
	axis, block int64
	qdq         *ops.QDQWeight
}

func buildDequantizeLinear(n *ops.Node, at *DequantizeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if od := at.OutputDType; od != 0 && od != int64(onnxpb.Float) {
		return nil, ops.Unsupportedf("DequantizeLinear output_dtype %v", onnxpb.DataType(od))
	}
	d := &dequantizeLinear{axis: at.Axis, block: at.BlockSize}
	if allConst(n) {
		d.qdq = qdqWeights(n.Consts, d.axis, d.block)
	}
	return d, nil
}

// QDQWeight returns the integer weights behind the output, when the
// inputs are constants the int8 kernels take, or nil (ops.QDQSource).
func (d *dequantizeLinear) QDQWeight() *ops.QDQWeight { return d.qdq }

func (d *dequantizeLinear) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, scale := in[0], in[1]
	ss, ok := scale.Data.([]float32)
	if !ok {
		return nil, ops.InputErrorf("DequantizeLinear takes an FP32 scale, got %v", scale.DType)
	}
	if _, _, ok := IntRange(x.DType); !ok {
		return nil, ops.InputErrorf("DequantizeLinear does not take %v", x.DType)
	}
	var zp []float64
	if len(in) > 2 && in[2] != nil {
		if in[2].DType != x.DType || !sameDims(in[2].Shape, scale.Shape) {
			return nil, ops.InputErrorf("zero point %v%s does not match x %v and scale %s", in[2].DType, tensor.ShapeString(in[2].Shape), x.DType, tensor.ShapeString(scale.Shape))
		}
		zp = in[2].Float64s()
	}
	idx, err := scaleIndex(x.Shape, scale.Shape, d.axis, d.block)
	if err != nil {
		return nil, err
	}
	xv := x.Float64s()
	out := make([]float32, len(xv))
	err = c.InPieces(len(xv), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v, s := xv[i], idx(i)
			if zp != nil {
				v -= zp[s]
			}
			out[i] = float32(v) * ss[s]
		}
	})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{tensor.From(x.Shape, out)}, nil
}

// allConst reports whether every input of n is known at load.
func allConst(n *ops.Node) bool {
	for i := range n.Inputs {
		if n.Const(i) == nil {
			return false
		}
	}
	return true
}

// qdqWeights returns the integer weights of a DequantizeLinear of
// constant inputs, when they fit the int8 kernels: a 2-D INT8 or UINT8
// tensor, zero points absent or of its type (per tensor, or per column of
// the 2-D weight; per row when transposed, as Gemm's transB has it), a
// scale per tensor or per column. Values less their zero points span
// [-255, 255]; the kernels take those outside [-127, 127] in parts.
func qdqWeights(in []*tensor.Tensor, axis int64, block int64) *ops.QDQWeight {
	x, scale := in[0], in[1]
	ss, ok := scale.Data.([]float32)
	if !ok || x.Rank() != 2 || block != 0 || x.DType != tensor.Int8 && x.DType != tensor.Uint8 {
		return nil
	}
	w := &ops.QDQWeight{Rows: x.Shape[0], Cols: x.Shape[1], Scales: ss}
	switch {
	case len(ss) == 1 && scale.Rank() <= 1:
		w.PerTensor = true
	case scale.Rank() == 1:
		a, err := ops.NormAxis(axis, 2)
		if err != nil || ss == nil || len(ss) != x.Shape[a] {
			return nil
		}
		w.Axis = a
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
	w.Q = make([]int32, len(xv))
	for i, v := range xv {
		switch {
		case z == nil:
		case w.PerTensor:
			v -= z[0]
		case w.Axis == 1:
			v -= z[i%w.Cols]
		default:
			v -= z[i/w.Cols]
		}
		w.Q[i] = int32(v)
	}
	return w
}
