package norm

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "MeanVarianceNormalization", Since: 9, Fold: true}, buildMVN)
}

// MVNAttrs are MeanVarianceNormalization's attributes.
type MVNAttrs struct {
	Axes []int64 `onnx:"axes" default:"0,2,3"`
}

// mvnOp is a compiled MeanVarianceNormalization.
type mvnOp struct{ axes []int64 }

func buildMVN(n *ops.Node, at *MVNAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return &mvnOp{axes: slices.Clone(at.Axes)}, nil
}

func (o *mvnOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if !isFloatType(x.DType) {
		return nil, ops.InputErrorf("MeanVarianceNormalization does not take %v", x.DType)
	}
	kept := slices.Clone(x.Shape)
	for _, a := range o.axes {
		ax, err := ops.NormAxis(a, x.Rank())
		if err != nil {
			return nil, err
		}
		kept[ax] = 1
	}
	if x.Len() == 0 {
		return []*tensor.Tensor{x}, nil
	}
	groups := ops.ProdInts(kept)
	st := tensor.BroadcastStrides(kept, x.Shape)
	v := x.Float64s()
	sum, sq, cnt := make([]float64, groups), make([]float64, groups), make([]float64, groups)
	it := tensor.NewIter(x.Shape, st)
	for i := 0; it.Next(); i++ {
		if i%ops.TickEvery == 0 {
			if err := c.Tick(ops.TickEvery); err != nil {
				return nil, err
			}
		}
		sum[it.Off(0)] += v[i]
		cnt[it.Off(0)]++
	}
	for g := range sum {
		sum[g] /= cnt[g] // the mean
	}
	it = tensor.NewIter(x.Shape, st)
	for i := 0; it.Next(); i++ {
		if i%ops.TickEvery == 0 {
			if err := c.Tick(ops.TickEvery); err != nil {
				return nil, err
			}
		}
		d := v[i] - sum[it.Off(0)]
		sq[it.Off(0)] += d * d
	}
	for g := range sq {
		sq[g] = math.Sqrt(sq[g]/cnt[g]) + 1e-9 // ONNX's function adds 1e-9 to the deviation
	}
	it = tensor.NewIter(x.Shape, st)
	for i := 0; it.Next(); i++ {
		if i%ops.TickEvery == 0 {
			if err := c.Tick(ops.TickEvery); err != nil {
				return nil, err
			}
		}
		v[i] = (v[i] - sum[it.Off(0)]) / sq[it.Off(0)]
	}
	return []*tensor.Tensor{ops.FromFloat64s(x.DType, x.Shape, v)}, nil
}
