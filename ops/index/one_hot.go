package index

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "OneHot", Since: 9, Fold: true}, buildOneHot)
}

// OneHotAttrs are OneHot's attributes.
type OneHotAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
}

// oneHot is a compiled OneHot: the axis the depth dimension is inserted
// at.
type oneHot struct{ axis int64 }

func buildOneHot(n *ops.Node, at *OneHotAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return oneHot{axis: at.Axis}, nil
}

func (op oneHot) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ind, depthT, values := in[0], in[1], in[2]
	if depthT.Len() != 1 || depthT.DType == tensor.String || depthT.DType == tensor.Bool {
		return nil, ops.InputErrorf("OneHot depth must be a numeric scalar, got %v%s", depthT.DType, tensor.ShapeString(depthT.Shape))
	}
	if values.Len() != 2 {
		return nil, ops.InputErrorf("OneHot values must hold [off, on], got shape %s", tensor.ShapeString(values.Shape))
	}
	if ind.DType == tensor.String || ind.DType == tensor.Bool {
		return nil, ops.InputErrorf("OneHot indices must be numeric, got %v", ind.DType)
	}
	df := math.Trunc(depthT.Float64s()[0])
	if !(df >= 0 && df <= tensor.MaxElements) {
		return nil, ops.InputErrorf("OneHot depth %v is invalid", depthT.Float64s()[0])
	}
	depth := int(df)
	a, err := ops.NormAxis(op.axis, ind.Rank()+1)
	if err != nil {
		return nil, err
	}
	shape := slices.Concat(ind.Shape[:a], []int{depth}, ind.Shape[a:])
	y, size, err := NewTensor(c, values.DType, shape)
	if err != nil || size == 0 {
		return out1(y), err
	}
	mv := tensorops.MoverOf(values.DType)
	if err := fill(c, mv, y.Data, 0, size, values.Data); err != nil { // all off
		return nil, err
	}
	inner := product(ind.Shape[a:])
	iv := ind.Float64s()
	// on at each index in range, a piece of indices at a time
	on := mv.Alloc(min(len(iv), ops.TickEvery))
	mv.Strided(on, values.Data, []int{min(len(iv), ops.TickEvery)}, []int{0}, 1)
	offs := make([]int, 0, min(len(iv), ops.TickEvery))
	for lo := 0; lo < len(iv); lo += ops.TickEvery {
		hi := min(lo+ops.TickEvery, len(iv))
		if err := c.Tick(hi - lo); err != nil {
			return nil, err
		}
		offs = offs[:0]
		for p := lo; p < hi; p++ {
			v := math.Trunc(iv[p])
			if v < -df || v >= df || math.IsNaN(v) {
				continue // out of range: all off
			}
			if v < 0 {
				v += df
			}
			o, i := p/inner, p%inner
			offs = append(offs, (o*depth+int(v))*inner+i)
		}
		mv.Put(y.Data, 0, offs, on, 0, 1)
	}
	return out1(y), nil
}
