package index

import (
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Trilu", Since: 14, Fold: true}, buildTrilu)
}

// TriluAttrs are Trilu's attributes.
type TriluAttrs struct {
	Upper bool `onnx:"upper" default:"true"`
}

// trilu is a compiled Trilu: whether it keeps the upper triangle.
type trilu struct{ upper bool }

func buildTrilu(n *ops.Node, at *TriluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	return trilu{upper: at.Upper}, nil
}

func (op trilu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	var k int64
	if len(in) > 1 && in[1] != nil {
		kv, err := indexValues(in[1], "Trilu k")
		if err != nil {
			return nil, err
		}
		if len(kv) != 1 {
			return nil, ops.InputErrorf("Trilu k must be a scalar")
		}
		k = kv[0]
	}
	if x.Rank() < 2 {
		return nil, ops.InputErrorf("Trilu needs rank >= 2, got %s", tensor.ShapeString(x.Shape))
	}
	mv := tensorops.MoverOf(x.DType)
	data, err := clone(c, mv, x.Data, x.Len())
	if err != nil {
		return nil, err
	}
	y := &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: data}
	if x.Len() == 0 {
		return out1(y), nil
	}
	rows, cols := x.Shape[x.Rank()-2], x.Shape[x.Rank()-1]
	k = min(max(k, -int64(rows)-1), int64(cols)+1) // beyond the matrix: all or nothing
	zero := mv.Alloc(1)
	clampCol := func(c int64) int { return int(min(max(c, 0), int64(cols))) }
	for mi := 0; mi < x.Len()/(rows*cols); mi++ {
		for i := 0; i < rows; i++ {
			row := (mi*rows + i) * cols
			// keep j-i >= k (upper) or j-i <= k (lower)
			lo, hi := 0, clampCol(int64(i)+k)
			if !op.upper {
				lo, hi = clampCol(int64(i)+k+1), cols
			}
			if hi > lo {
				if err := fill(c, mv, y.Data, row+lo, hi-lo, zero); err != nil {
					return nil, err
				}
			}
			if err := c.Tick(1); err != nil { // the row's bounds
				return nil, err
			}
		}
	}
	return out1(y), nil
}
