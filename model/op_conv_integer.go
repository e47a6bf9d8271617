package model

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// ConvInteger and QLinearConv run exactly on the int8 kernels, as implicit
// GEMMs like Conv's: the im2col rows are the input's own bytes (the
// padding holds x_zero_point, so it adds nothing), loaded into the
// engine's rows as they are; the weights less their zero points,
// w − w_zero_point in [−255, 255], are packed as integer weights, which
// the engine splits into int8 parts; the int32 sums are exact (modulo
// 2^32, as the operators allow) on every table. The activation zero point
// comes off each output as x_zero_point·Σ_k (w − w_zero_point).

func init() {
	register(Descriptor{Type: "ConvInteger", Since: 10, Fold: true}, buildConvInteger)
	register(Descriptor{Type: "QLinearConv", Since: 10, Fold: true}, buildQLinearConv)
}

// convIntWeights are integer weights prepared for exact products: for
// each group, the K×N matrix of w − w_zero_point in the rows' order
// (kernel offset, input channel).
type convIntWeights struct {
	k, n   int
	packed []*gemm.QWeights
}

// prepareConvIntWeights prepares w (M×Cg×kernel, INT8 or UINT8) with zero
// points wzp (nil, one, or M values).
func prepareConvIntWeights(w *tensor.Tensor, wzp *tensor.Tensor, group int) (*convIntWeights, error) {
	shape := w.Shape
	m, cg, kk := shape[0], shape[1], convProd(shape[2:])
	mg := m / group
	raw, err := w.Int64s()
	if err != nil {
		return nil, err
	}
	zps, err := convZeroPoints("w", wzp, w.DType, m)
	if err != nil {
		return nil, err
	}
	iw := &convIntWeights{k: kk * cg, n: mg}
	ones := make([]float32, mg)
	for i := range ones {
		ones[i] = 1
	}
	for gi := 0; gi < group; gi++ {
		q := make([]int32, iw.k*mg)
		for co := 0; co < mg; co++ {
			z := zps[(gi*mg+co)%len(zps)]
			for ci := 0; ci < cg; ci++ {
				for kidx := 0; kidx < kk; kidx++ {
					q[(kidx*cg+ci)*mg+co] = int32(raw[((gi*mg+co)*cg+ci)*kk+kidx] - z)
				}
			}
		}
		p, err := convPackQInt(iw.k, mg, q, ones)
		if err != nil {
			return nil, err
		}
		iw.packed = append(iw.packed, p)
	}
	return iw, nil
}

// convPackQInt packs integer weights (each in [−255, 255]) for
// QMatMulInt32.
func convPackQInt(k, n int, q []int32, ones []float32) (*gemm.QWeights, error) {
	return gemm.PackQInt(k, n, q, quant.PerChannel, ones)
}

// convZeroPoints returns a zero point tensor's values: one, or n (per
// output channel); a nil tensor is zero.
func convZeroPoints(what string, zp *tensor.Tensor, dt tensor.DataType, n int) ([]int64, error) {
	if zp == nil {
		return []int64{0}, nil
	}
	if zp.DType != dt {
		return nil, inputErrorf("%s_zero_point is %v, %s is %v", what, zp.DType, what, dt)
	}
	v, err := zp.Int64s()
	if err != nil {
		return nil, err
	}
	if zp.Rank() > 1 || len(v) != 1 && len(v) != n || len(v) == 0 {
		return nil, inputErrorf("%s_zero_point %s must be a scalar or hold %d values", what, tensor.ShapeString(zp.Shape), n)
	}
	return v, nil
}

// convIntTypes checks an integer convolution's x and w types.
func convIntTypes(op string, x, w tensor.DataType) error {
	if x != tensor.Uint8 && x != tensor.Int8 {
		return inputErrorf("%s takes UINT8 or INT8 x, got %v", op, x)
	}
	if w != tensor.Uint8 && w != tensor.Int8 {
		return inputErrorf("%s takes UINT8 or INT8 w, got %v", op, w)
	}
	return nil
}

// run computes acc (Batch×M×Out) = Σ (x − xzp)·(w − wzp) exactly.
func (iw *convIntWeights) run(e *gemm.Engine, g *ConvGeometry, x *tensor.Tensor, xzp int64, acc []int32) error {
	switch d := x.Data.(type) {
	case []uint8:
		return convIntRun(e, iw, g, d, uint8(xzp), xzp, acc)
	case []int8:
		// the engine stores int8 rows as x+128: the zero point grows by 128
		return convIntRun(e, iw, g, d, int8(xzp), xzp+128, acc)
	}
	return inputErrorf("integer convolution of %v", x.DType)
}

func convIntRun[T uint8 | int8](e *gemm.Engine, iw *convIntWeights, g *ConvGeometry, x []T, pad T, zp int64, acc []int32) error {
	inSize, outSize := g.InSize(), g.OutSize()
	mg := g.mg()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	taps := newConvTaps(g)
	tile := convTileRows(max(iw.k, iw.n))
	tiles := (outSize + tile - 1) / tile
	xt := make([]T, inSize*g.C)
	for b := 0; b < g.Batch; b++ {
		kernels.TransposeCols(xt, x[b*g.C*inSize:(b+1)*g.C*inSize], g.C, inSize, 0, 0, inSize)
		ab := acc[b*g.M*outSize : (b+1)*g.M*outSize]
		err := convRun(e, tiles*g.Group, outSize*iw.k*g.M, func(e *gemm.Engine, s *convScratch, task int) error {
			gi, p0 := task/tiles, task%tiles*tile
			n := min(tile, outSize-p0)
			var err error
			switch rows := any(xt).(type) {
			case []uint8:
				s.bytes = convGrow(s.bytes, n*iw.k)
				convGather(taps, s.bytes, rows, gi, p0, n, uint8(pad))
				err = s.qrows.LoadU8(s.bytes, n, iw.k, iw.k)
			case []int8:
				s.sbytes = convGrow(s.sbytes, n*iw.k)
				convGather(taps, s.sbytes, rows, gi, p0, n, int8(pad))
				err = s.qrows.LoadS8(s.sbytes, n, iw.k, iw.k)
			}
			if err != nil {
				return err
			}
			s.ints = convGrow(s.ints, n*mg)
			w := iw.packed[gi]
			if err := e.QMatMulInt32(&s.qrows, w, s.ints, mg); err != nil {
				return err
			}
			colsum := w.ColSums()
			for co := 0; co < mg; co++ {
				corr := int32(zp) * colsum[co] // wraps as the sums do
				dst := ab[(gi*mg+co)*outSize+p0 : (gi*mg+co)*outSize+p0+n]
				for r := range dst {
					dst[r] = s.ints[r*mg+co] - corr
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// convIntHeld prepares a constant integer weight of node n and records the
// Layer.
func convIntHeld(n *node, w, wzp *tensor.Tensor, group int) (*convIntWeights, error) {
	if w == nil || w.Rank() < 3 || w.DType != tensor.Uint8 && w.DType != tensor.Int8 || w.Shape[0]%group != 0 {
		return nil, nil // checked per call
	}
	if convProd(w.Shape) == 0 {
		return nil, nil
	}
	iw, err := prepareConvIntWeights(w, wzp, group)
	if err != nil {
		return nil, err
	}
	kernels := "int8 exact"
	if group > 1 {
		kernels += fmt.Sprintf(", %d groups", group)
	}
	n.model.Layers = append(n.model.Layers, Layer{Node: n.name, Op: n.pb.OpType, K: iw.k, N: iw.n, Kernels: kernels})
	return iw, nil
}

// convIntCore checks an integer convolution's operands and returns its
// exact int32 sums (Batch×M×Out) and output shape.
func convIntCore(e *gemm.Engine, op string, at *ConvAttrs, held *convIntWeights, heldShape []int, x, xzp, w, wzp *tensor.Tensor) ([]int32, []int, error) {
	wShape := heldShape
	if held == nil {
		if w == nil {
			return nil, nil, inputErrorf("%s has no weight", op)
		}
		wShape = w.Shape
		if err := convIntTypes(op, x.DType, w.DType); err != nil {
			return nil, nil, err
		}
	} else if err := convIntTypes(op, x.DType, tensor.Int8); err != nil {
		return nil, nil, err
	}
	g, err := convGeometry(op, x.Shape, wShape, at.AutoPad, int(at.Group), at.KernelShape, at.Strides, at.Dilations, at.Pads)
	if err != nil {
		return nil, nil, err
	}
	xz, err := convZeroPoints("x", xzp, x.DType, 1)
	if err != nil {
		return nil, nil, err
	}
	if held == nil {
		if held, err = prepareConvIntWeights(w, wzp, g.Group); err != nil {
			return nil, nil, err
		}
	}
	shape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(shape)
	acc := make([]int32, size)
	if held.k == 0 {
		return acc, shape, nil
	}
	if err := held.run(e, g, x, xz[0], acc); err != nil {
		return nil, nil, err
	}
	return acc, shape, nil
}

func buildConvInteger(n *node, at *ConvAttrs) (opFunc, error) {
	if err := n.checkArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	if err := checkConvAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	var held *convIntWeights
	var heldShape []int
	wzpConst := len(n.consts) < 4 || n.pb.Inputs[3] == "" || n.consts[3] != nil
	if w := n.consts[1]; w != nil && wzpConst {
		var wzp *tensor.Tensor
		if len(n.consts) > 3 {
			wzp = n.consts[3]
		}
		var err error
		if held, err = convIntHeld(n, w, wzp, int(at.Group)); err != nil {
			return nil, err
		}
		if held != nil {
			heldShape = w.Shape
			n.unused[1] = true
			if len(n.unused) > 3 {
				n.unused[3] = true
			}
		}
	}
	exec := n.opts.Exec
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var xzp, wzp *tensor.Tensor
		if len(in) > 2 {
			xzp = in[2]
		}
		if len(in) > 3 {
			wzp = in[3]
		}
		acc, shape, err := convIntCore(exec, "ConvInteger", at, held, heldShape, in[0], xzp, in[1], wzp)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{tensor.From(shape, acc)}, nil
	}, nil
}

func buildQLinearConv(n *node, at *ConvAttrs) (opFunc, error) {
	if err := n.checkArity(8, 9, 1, 1); err != nil {
		return nil, err
	}
	if err := checkConvAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	var held *convIntWeights
	var heldShape []int
	if w, wzp := n.consts[3], n.consts[5]; w != nil && wzp != nil {
		var err error
		if held, err = convIntHeld(n, w, wzp, int(at.Group)); err != nil {
			return nil, err
		}
		if held != nil {
			heldShape = w.Shape
			n.unused[3], n.unused[5] = true, true
		}
	}
	exec := n.opts.Exec
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, xs, xzp, w, ws, wzp, ys, yzp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
		var bias *tensor.Tensor
		if len(in) > 8 {
			bias = in[8]
		}
		acc, shape, err := convIntCore(exec, "QLinearConv", at, held, heldShape, x, xzp, w, wzp)
		if err != nil {
			return nil, err
		}
		m := shape[1]
		xsv, ok1 := xs.Data.([]float32)
		wsv, ok2 := ws.Data.([]float32)
		ysv, ok3 := ys.Data.([]float32)
		if !ok1 || !ok2 || !ok3 || len(xsv) != 1 || len(ysv) != 1 || len(wsv) != 1 && len(wsv) != m {
			return nil, inputErrorf("QLinearConv takes FP32 scales: x and y per tensor, w per tensor or per output channel (%d)", m)
		}
		if yzp == nil {
			return nil, inputErrorf("QLinearConv needs y_zero_point")
		}
		lo, hi, ok := matmul.IntRange(yzp.DType)
		if !ok || yzp.DType != tensor.Uint8 && yzp.DType != tensor.Int8 || yzp.Len() != 1 {
			return nil, inputErrorf("QLinearConv y_zero_point must be one UINT8 or INT8 value")
		}
		z := yzp.Float64s()[0]
		var bv []int32
		if bias != nil {
			b, ok := bias.Data.([]int32)
			if !ok || bias.Rank() != 1 || len(b) != m {
				return nil, inputErrorf("QLinearConv bias must be INT32 with %d values, got %v%s", m, bias.DType, tensor.ShapeString(bias.Shape))
			}
			bv = b
		}
		size := convProd(shape[2:])
		mult := make([]float64, m)
		for c := range mult {
			mult[c] = float64(xsv[0] * wsv[c%len(wsv)] / ysv[0]) // float32, as ONNX's reference computes it
		}
		out := make([]float64, len(acc))
		for i, v := range acc {
			c := i / max(size, 1) % m
			if bv != nil {
				v += bv[c]
			}
			out[i] = min(max(math.RoundToEven(float64(v)*mult[c]+z), lo), hi)
		}
		y, err := castTo(tensor.From(shape, out), yzp.DType)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}
