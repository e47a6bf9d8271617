package matmul

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "QLinearMatMul", Since: 10, Fold: true}, buildQLinearMatMul)
}

// qLinearMatMul is a compiled QLinearMatMul: the integer product (A -
// a_zero_point)·(B - b_zero_point), on the int8 kernels when B and its
// zero point are constants they take (p), requantized to y's scale and
// zero point.
type qLinearMatMul struct {
	p *intProduct
}

func buildQLinearMatMul(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(8, 8, 1, 1); err != nil {
		return nil, err
	}
	return &qLinearMatMul{p: newIntProduct(n, 3, 5)}, nil
}

func (q *qLinearMatMul) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var acc *tensor.Tensor
	if q.p != nil {
		var err error
		if acc, err = q.p.run(c, in[0], in[2]); err != nil {
			return nil, err
		}
	} else {
		a, err := minusZeroPoint(c, in[0], in[2], -2)
		if err != nil {
			return nil, err
		}
		b, err := minusZeroPoint(c, in[3], in[5], -1)
		if err != nil {
			return nil, err
		}
		if acc, err = Product(c, "MatMul", a, b); err != nil {
			return nil, err
		}
	}
	as, ok1 := qlinearScale(in[1])
	bs, ok2 := qlinearScale(in[4])
	ys, ok3 := qlinearScale(in[6])
	if !ok1 || !ok2 || !ok3 || len(as) != 1 || len(ys) != 1 || len(bs) == 0 {
		return nil, ops.InputErrorf("QLinearMatMul takes float scales: a and y per tensor, b per tensor or per column")
	}
	yzp := in[7]
	lo, hi, ok := IntRange(yzp.DType)
	if !ok || yzp.Len() != 1 {
		return nil, ops.InputErrorf("QLinearMatMul output zero point must be one INT8 or UINT8 value")
	}
	z := yzp.Float64s()[0]
	nCols := acc.Shape[acc.Rank()-1]
	if len(bs) != 1 && len(bs) != nCols {
		return nil, ops.InputErrorf("b_scale has %d entries, want 1 or %d", len(bs), nCols)
	}
	out := make([]float64, acc.Len())
	av := acc.Data.([]int32)
	err := c.InPieces(len(av), func(p, q int) {
		for i := p; i < q; i++ {
			s := bs[0]
			if len(bs) > 1 {
				s = bs[i%nCols]
			}
			m := as[0] * s / ys[0] // float32, as the ONNX reference computes it
			out[i] = min(max(math.RoundToEven(float64(av[i])*float64(m)+z), lo), hi)
		}
	})
	if err != nil {
		return nil, err
	}
	return ops.Result(tensorops.CastToContext(c, tensor.From(acc.Shape, out), yzp.DType))
}

// qlinearScale returns a scale of QLinearMatMul as float32: FP32, or
// FP16/BF16 from opset 21 (widened exactly).
func qlinearScale(t *tensor.Tensor) ([]float32, bool) {
	switch t.DType {
	case tensor.Float16, tensor.BFloat16:
		c, err := tensorops.CastTo(t, tensor.Float32)
		if err != nil {
			return nil, false
		}
		return c.Data.([]float32), true
	}
	d, ok := t.Data.([]float32)
	return d, ok
}
