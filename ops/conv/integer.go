package conv

import (
	"fmt"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/ops"
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

// intWeights are integer weights prepared for exact products: for each
// group, the K×N matrix of w − w_zero_point in the rows' order (kernel
// offset, input channel).
type intWeights struct {
	k, n   int
	packed []*gemm.QWeights
}

// prepareIntWeights prepares w (M×Cg×kernel, INT8 or UINT8) with zero
// points wzp (nil, one, or M values).
func prepareIntWeights(w *tensor.Tensor, wzp *tensor.Tensor, group int) (*intWeights, error) {
	shape := w.Shape
	m, cg, kk := shape[0], shape[1], ops.ProdInts(shape[2:])
	mg := m / group
	raw, err := w.Int64s()
	if err != nil {
		return nil, err
	}
	zps, err := zeroPoints("w", wzp, w.DType, m)
	if err != nil {
		return nil, err
	}
	iw := &intWeights{k: kk * cg, n: mg}
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
		// Each value lies in [−255, 255]: packed for QMatMulInt32.
		p, err := gemm.PackQInt(iw.k, mg, q, quant.PerChannel, ones)
		if err != nil {
			return nil, err
		}
		iw.packed = append(iw.packed, p)
	}
	return iw, nil
}

// zeroPoints returns a zero point tensor's values: one, or n (per output
// channel); a nil tensor is zero.
func zeroPoints(what string, zp *tensor.Tensor, dt tensor.DataType, n int) ([]int64, error) {
	if zp == nil {
		return []int64{0}, nil
	}
	if zp.DType != dt {
		return nil, ops.InputErrorf("%s_zero_point is %v, %s is %v", what, zp.DType, what, dt)
	}
	v, err := zp.Int64s()
	if err != nil {
		return nil, err
	}
	if zp.Rank() > 1 || len(v) != 1 && len(v) != n || len(v) == 0 {
		return nil, ops.InputErrorf("%s_zero_point %s must be a scalar or hold %d values", what, tensor.ShapeString(zp.Shape), n)
	}
	return v, nil
}

// intTypes checks an integer convolution's x and w types.
func intTypes(op string, x, w tensor.DataType) error {
	if x != tensor.Uint8 && x != tensor.Int8 {
		return ops.InputErrorf("%s takes UINT8 or INT8 x, got %v", op, x)
	}
	if w != tensor.Uint8 && w != tensor.Int8 {
		return ops.InputErrorf("%s takes UINT8 or INT8 w, got %v", op, w)
	}
	return nil
}

// run computes acc (Batch×M×Out) = Σ (x − xzp)·(w − wzp) exactly.
func (iw *intWeights) run(c *ops.Context, g *Geometry, x *tensor.Tensor, xzp int64, acc []int32) error {
	switch d := x.Data.(type) {
	case []uint8:
		return intRun(c, iw, g, d, uint8(xzp), xzp, acc)
	case []int8:
		// the engine stores int8 rows as x+128: the zero point grows by 128
		return intRun(c, iw, g, d, int8(xzp), xzp+128, acc)
	}
	return ops.InputErrorf("integer convolution of %v", x.DType)
}

func intRun[T uint8 | int8](c *ops.Context, iw *intWeights, g *Geometry, x []T, pad T, zp int64, acc []int32) error {
	inSize, outSize := g.InSize(), g.OutSize()
	mg := g.mg()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	taps := newTaps(g)
	tile := tileRows(max(iw.k, iw.n))
	tiles := (outSize + tile - 1) / tile
	xt := make([]T, inSize*g.C)
	for b := 0; b < g.Batch; b++ {
		kernels.TransposeCols(xt, x[b*g.C*inSize:(b+1)*g.C*inSize], g.C, inSize, 0, 0, inSize)
		ab := acc[b*g.M*outSize : (b+1)*g.M*outSize]
		err := run(c, tiles*g.Group, outSize*iw.k*g.M, func(e *gemm.Engine, s *scratch, task int) error {
			gi, p0 := task/tiles, task%tiles*tile
			n := min(tile, outSize-p0)
			var err error
			switch rows := any(xt).(type) {
			case []uint8:
				s.bytes = grow(s.bytes, n*iw.k)
				gather(taps, s.bytes, rows, gi, p0, n, uint8(pad))
				err = s.qrows.LoadU8(s.bytes, n, iw.k, iw.k)
			case []int8:
				s.sbytes = grow(s.sbytes, n*iw.k)
				gather(taps, s.sbytes, rows, gi, p0, n, int8(pad))
				err = s.qrows.LoadS8(s.sbytes, n, iw.k, iw.k)
			}
			if err != nil {
				return err
			}
			s.ints = grow(s.ints, n*mg)
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

// holdIntWeight prepares a constant integer weight w with zero points wzp
// of node n, and reports the layer. It returns nil for a weight it does
// not hold (each run checks it).
func holdIntWeight(n *ops.Node, w, wzp *tensor.Tensor, group int) (*intWeights, error) {
	if w == nil || w.Rank() < 3 || w.DType != tensor.Uint8 && w.DType != tensor.Int8 || w.Shape[0]%group != 0 {
		return nil, nil // checked per call
	}
	if ops.ProdInts(w.Shape) == 0 {
		return nil, nil
	}
	iw, err := prepareIntWeights(w, wzp, group)
	if err != nil {
		return nil, err
	}
	kernels := "int8 exact"
	if group > 1 {
		kernels += fmt.Sprintf(", %d groups", group)
	}
	n.AddLayer(iw.k, iw.n, kernels)
	return iw, nil
}

// intConv is what ConvInteger and QLinearConv share: the attributes and
// the weight the kernels hold, if any (heldShape its shape).
type intConv struct {
	at        *ConvAttrs
	held      *intWeights
	heldShape []int
}

// sums checks an integer convolution's operands and returns its exact
// int32 sums (Batch×M×Out) and output shape.
func (ic *intConv) sums(c *ops.Context, op string, x, xzp, w, wzp *tensor.Tensor) ([]int32, []int, error) {
	at, held, wShape := ic.at, ic.held, ic.heldShape
	if held == nil {
		if w == nil {
			return nil, nil, ops.InputErrorf("%s has no weight", op)
		}
		wShape = w.Shape
		if err := intTypes(op, x.DType, w.DType); err != nil {
			return nil, nil, err
		}
	} else if err := intTypes(op, x.DType, tensor.Int8); err != nil {
		return nil, nil, err
	}
	g, err := forwardGeometry(op, x.Shape, wShape, at.AutoPad, int(at.Group), at.KernelShape, at.Strides, at.Dilations, at.Pads)
	if err != nil {
		return nil, nil, err
	}
	xz, err := zeroPoints("x", xzp, x.DType, 1)
	if err != nil {
		return nil, nil, err
	}
	if held == nil {
		if held, err = prepareIntWeights(w, wzp, g.Group); err != nil {
			return nil, nil, err
		}
	}
	shape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(shape)
	acc := make([]int32, size)
	if held.k == 0 {
		return acc, shape, nil
	}
	if err := held.run(c, g, x, xz[0], acc); err != nil {
		return nil, nil, err
	}
	return acc, shape, nil
}
