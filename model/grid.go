package model

import (
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// A static QDQ file says on which grid each quantized activation lies:
// the output of a DequantizeLinear of 8-bit integers with a scalar scale
// and zero point is (q − zp)·scale for integers q of the type. A
// convolution on int8 kernels that reads such a value quantizes it with
// those parameters (gemm.GridActivations): each value gives back its
// integer, as ONNX Runtime's QLinearConv reads the integers themselves,
// where per-row parameters of its own would round the grid to another
// (and re-read every row's range). The grid is followed through the
// operators that only select or move values (a max pool whose windows
// all overlap its input, the shape operators), and out of the rewrites'
// forms of the pair (quantserve.QuantizeDequantize, a FusedConv ending
// with one).

// valueGrid is a grid as the int8 kernels take it: the scale, and the zero
// point as an unsigned byte (an INT8 pair's plus 128, its integers
// shifted alike).
type valueGrid struct {
	scale float32
	zp    int32
}

// gridOfOutput returns the grid of pn's first output, n its compiled node
// and in the grids of its inputs (nil: none known), or nil.
func gridOfOutput(pn *onnxpb.Node, n *node, in []*valueGrid) *valueGrid {
	first := func() *valueGrid {
		if len(in) == 0 {
			return nil
		}
		return in[0]
	}
	switch d := normDomain(pn.Domain); {
	case d == "" && pn.OpType == "DequantizeLinear":
		if len(n.consts) != 3 || n.attrs["block_size"] != nil {
			return nil // without a zero point, the integers' type is not known here
		}
		return newGrid(n.consts[1], n.consts[2])
	case d == rewriteDomain && pn.OpType == "QuantizeDequantize":
		if len(n.consts) != 5 {
			return nil
		}
		if n.consts[4] != nil {
			return newGrid(n.consts[3], n.consts[4])
		}
		// No dequantize zero point: 0 of the pair's type, the quantize
		// zero point's (UINT8 without one).
		zero := tensor.Scalar(uint8(0))
		if qz := n.consts[2]; qz != nil && qz.DType == tensor.Int8 {
			zero = tensor.Scalar(int8(0))
		}
		return newGrid(n.consts[3], zero)
	case d == rewriteDomain && pn.OpType == "FusedConv":
		s, z, typ := n.attrs["qdq_scales"], n.attrs["qdq_zero_points"], n.attrs["qdq_type"]
		if s == nil || z == nil || typ == nil || len(s.Floats) != 2 || len(z.Ints) != 2 {
			return nil
		}
		switch string(typ.S) {
		case "uint8":
			return gridOf(s.Floats[1], z.Ints[1])
		case "int8":
			return gridOf(s.Floats[1], z.Ints[1]+128)
		}
	case (d == "" || d == rewriteDomain) && pn.OpType == "MaxPool":
		if isMaxPool2D(pn) && maxPoolWindowsInside(pn) {
			return first()
		}
	case movesValues(pn):
		return first()
	}
	return nil
}

// newGrid returns the grid of a DequantizeLinear with scalar constants
// scale and zp (UINT8 or INT8), or nil.
func newGrid(scale, zp *tensor.Tensor) *valueGrid {
	if scale == nil || zp == nil || scale.DType != tensor.Float32 || scale.Len() != 1 || zp.Len() != 1 {
		return nil
	}
	s := scale.Data.([]float32)[0]
	switch zp.DType {
	case tensor.Uint8:
		return gridOf(s, int64(zp.Data.([]uint8)[0]))
	case tensor.Int8:
		return gridOf(s, int64(zp.Data.([]int8)[0])+128)
	}
	return nil
}

// gridOf returns the grid of scale and byte zero point zp, or nil when the
// kernels cannot take it (gemm.GridActivations).
func gridOf(scale float32, zp int64) *valueGrid {
	if !(scale > 0) || scale > math.MaxFloat32 || zp < 0 || zp > 255 {
		return nil
	}
	return &valueGrid{scale: scale, zp: int32(zp)}
}

// gridActivations returns how a convolution on int8 kernels quantizes
// the grid its input lies on, or nil: the input is on none, the node is
// not a convolution, or the engine's table does not multiply the whole
// byte range exactly (dispatch.Table.FullRange).
func (n *node) gridActivations() *gemm.Activations {
	g := n.inGrid
	if g == nil || !n.opts.Exec.Table().FullRange {
		return nil
	}
	if d := normDomain(n.pb.Domain); !(d == "" && n.pb.OpType == "Conv" || d == rewriteDomain && n.pb.OpType == "FusedConv") {
		return nil
	}
	a, err := gemm.GridActivations(g.scale, g.zp)
	if err != nil {
		return nil
	}
	return a
}
