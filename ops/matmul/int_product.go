package matmul

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// intProduct is the integer product (A - za)·(B - zb) of MatMulInteger and
// QLinearMatMul with a constant 2-D B and zero point zb: B - zb is packed
// once, at load, for the int8 kernels, and each request's A runs on them
// as the bytes it is. The zero point of A comes off exactly, through B's
// column sums; nothing is widened to int32 per request.
type intProduct struct {
	k, n int
	w    *gemm.QWeights
}

// newIntProduct prepares the product for node n whose B is input bi and
// B's zero point input zi, or returns nil when they are not constants of
// a shape and type the kernels take (the node then runs the general way).
// It tells n's compiler that the operator holds them and reports the
// product among the model's layers.
func newIntProduct(n *ops.Node, bi, zi int) *intProduct {
	b := n.Const(bi)
	if b == nil || b.Rank() != 2 || b.DType != tensor.Int8 && b.DType != tensor.Uint8 {
		return nil
	}
	var zp *tensor.Tensor
	if zi < len(n.Inputs) && n.Inputs[zi] != "" {
		if zp = n.Const(zi); zp == nil || zp.DType != b.DType {
			return nil
		}
	}
	k, cols := b.Shape[0], b.Shape[1]
	if k > gemm.MaxQK {
		return nil
	}
	var z []int64
	if zp != nil {
		z, _ = zp.Int64s()
		if len(z) != 1 && (zp.Rank() != 1 || len(z) != cols) {
			return nil
		}
	}
	bv, _ := b.Int64s()
	q := make([]int32, len(bv))
	for i, v := range bv {
		switch len(z) {
		case 0:
		case 1:
			v -= z[0]
		default:
			v -= z[i%cols]
		}
		q[i] = int32(v)
	}
	w, err := gemm.PackQInt(k, cols, q, quant.PerTensor, []float32{1})
	if err != nil {
		return nil
	}
	n.HoldInputs(bi)
	if zp != nil {
		n.HoldInputs(zi)
	}
	n.AddLayer(k, cols, "int8 "+b.DType.String()+" weights (integer product)")
	return &intProduct{k: k, n: cols, w: w}
}

// run returns (a - azp)·(B - zb) as INT32 for a of shape [..., M, K] (or
// [K]), on c's engine; azp is absent, a scalar, or one zero point per row
// of a's last two dimensions, of a's type.
func (p *intProduct) run(c *ops.Context, a, azp *tensor.Tensor) (*tensor.Tensor, error) {
	if a.DType != tensor.Uint8 && a.DType != tensor.Int8 {
		return nil, ops.InputErrorf("integer matmul takes INT8 or UINT8, got %v", a.DType)
	}
	if a.Rank() == 0 || a.Shape[a.Rank()-1] != p.k {
		return nil, ops.InputErrorf("MatMul inner dimensions differ: %s × [%d,%d]", tensor.ShapeString(a.Shape), p.k, p.n)
	}
	rows := 1
	if a.Rank() >= 2 {
		rows = a.Shape[a.Rank()-2]
	}
	m, err := tensor.NumElements(a.Shape[:a.Rank()-1])
	if err != nil {
		return nil, err
	}
	var z []int64
	if azp != nil {
		if azp.DType != a.DType {
			return nil, ops.InputErrorf("zero point type %v differs from %v", azp.DType, a.DType)
		}
		z, _ = azp.Int64s()
		if len(z) > 1 && len(z) != rows {
			return nil, ops.InputErrorf("zero point has %d entries, want 1 or %d", len(z), rows)
		}
	}
	shape := append(append([]int(nil), a.Shape[:a.Rank()-1]...), p.n)
	size, err := tensor.NumElements(shape)
	if err != nil {
		return nil, err
	}
	var qa gemm.QRows
	shift := int64(0)
	switch d := a.Data.(type) {
	case []uint8:
		err = qa.LoadU8(d, m, p.k, p.k)
	case []int8:
		err, shift = qa.LoadS8(d, m, p.k, p.k), 128 // loaded as a+128
	}
	if err != nil {
		return nil, err
	}
	out := make([]int32, size)
	if err := c.Tick(m * p.n * max(p.k, 1)); err != nil {
		return nil, err
	}
	if err := c.Engine().QMatMulInt32(&qa, p.w, out, p.n); err != nil {
		return nil, err
	}
	cs := p.w.ColSums()
	for i := 0; i < m; i++ {
		zi := shift
		switch len(z) {
		case 0:
		case 1:
			zi += z[0]
		default:
			zi += z[i%rows]
		}
		if zi == 0 {
			continue
		}
		if err := c.Tick(p.n); err != nil {
			return nil, err
		}
		row := out[i*p.n : (i+1)*p.n]
		for j := range row {
			row[j] -= int32(zi) * cs[j] // wraps as the int32 product does
		}
	}
	return &tensor.Tensor{DType: tensor.Int32, Shape: shape, Data: out}, nil
}
