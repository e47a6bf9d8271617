package loss

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Attrs are the attributes of NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss.
type Attrs struct {
	IgnoreIndex *int64 `onnx:"ignore_index"`
	Reduction   string `onnx:"reduction" default:"mean"`
}

// reduction is what both losses compile from their attributes: the
// target they ignore, if any, and how they reduce the per-element losses.
type reduction struct {
	ignore      bool
	ignoreIndex int64
	mode        string // "none", "sum" or "mean"
}

// compile checks a loss node with up to maxOut outputs and returns its
// reduction.
func compile(n *ops.Node, at *Attrs, maxOut int) (reduction, error) {
	if err := n.CheckArity(2, 3, 1, maxOut); err != nil {
		return reduction{}, err
	}
	switch at.Reduction {
	case "none", "sum", "mean":
	default:
		return reduction{}, fmt.Errorf("reduction %q is not one of none, sum, mean", at.Reduction)
	}
	r := reduction{mode: at.Reduction}
	if at.IgnoreIndex != nil {
		r.ignore, r.ignoreIndex = true, *at.IgnoreIndex
	}
	return r, nil
}

// geom is a loss's input viewed as (N, C, D) with D = d1·…·dk.
type geom struct {
	n, c, d int
	dtype   tensor.DataType
	target  []int64
	tshape  []int
	weight  []float64 // nil: every class weighs 1
}

// newGeom checks the input x, the target and the optional weight of the
// loss op.
func newGeom(op string, x, target, weight *tensor.Tensor) (*geom, error) {
	if !x.DType.IsFloat() {
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	if x.Rank() < 2 {
		return nil, ops.InputErrorf("%s needs an input of shape (N, C, ...), got %s", op, tensor.ShapeString(x.Shape))
	}
	if target.DType != tensor.Int64 && target.DType != tensor.Int32 {
		return nil, ops.InputErrorf("%s takes INT32 or INT64 targets, got %v", op, target.DType)
	}
	want := append([]int{x.Shape[0]}, x.Shape[2:]...)
	if !ops.EqualShape(target.Shape, want) {
		return nil, ops.InputErrorf("%s: target of shape %s for an input of shape %s (want %s)", op, tensor.ShapeString(target.Shape), tensor.ShapeString(x.Shape), tensor.ShapeString(want))
	}
	t, _ := target.Int64s()
	g := &geom{n: x.Shape[0], c: x.Shape[1], d: 1, dtype: x.DType, target: t, tshape: target.Shape}
	for _, v := range x.Shape[2:] {
		g.d *= v
	}
	if weight != nil {
		if weight.DType != x.DType || weight.Rank() != 1 || weight.Shape[0] != g.c {
			return nil, ops.InputErrorf("%s: weight must be a 1-D %v tensor of %d classes, got %v%s", op, x.DType, g.c, weight.DType, tensor.ShapeString(weight.Shape))
		}
		g.weight = weight.Float64s()
	}
	return g, nil
}

// loss returns the loss given the log-probabilities lp (N, C, D).
func (g *geom) loss(lp []float64, r reduction) (*tensor.Tensor, error) {
	per := make([]float64, g.n*g.d)
	var sum, wsum float64
	for i := 0; i < g.n; i++ {
		for j := 0; j < g.d; j++ {
			t := g.target[i*g.d+j]
			if r.ignore && t == r.ignoreIndex {
				continue
			}
			if t < 0 || t >= int64(g.c) {
				return nil, ops.InputErrorf("target %d is not a class index in [0, %d)", t, g.c)
			}
			w := 1.0
			if g.weight != nil {
				w = g.weight[t]
			}
			l := -lp[(i*g.c+int(t))*g.d+j] * w
			per[i*g.d+j] = l
			sum += l
			wsum += w
		}
	}
	switch r.mode {
	case "none":
		return &tensor.Tensor{DType: g.dtype, Shape: g.tshape, Data: ops.RoundFloat64s(per, g.dtype)}, nil
	case "sum":
		return &tensor.Tensor{DType: g.dtype, Data: ops.RoundFloat64s([]float64{sum}, g.dtype)}, nil
	}
	return &tensor.Tensor{DType: g.dtype, Data: ops.RoundFloat64s([]float64{sum / wsum}, g.dtype)}, nil
}
