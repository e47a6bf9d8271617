package logic

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Not", Since: 1, Fold: true}, buildNot)
}

// not negates a BOOL tensor elementwise.
type not struct{}

func buildNot(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return not{}, nil
}

func (not) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	d, ok := x.Data.([]bool)
	if !ok {
		return nil, ops.InputErrorf("Not takes BOOL, got %v", x.DType)
	}
	r := make([]bool, len(d))
	err := inPieces(c, len(d), func(lo, hi int) {
		dst, src := r[lo:hi], d[lo:hi]
		for i, v := range src {
			dst[i] = !v
		}
	})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Bool, Shape: x.Shape, Data: r}}, nil
}

// inPieces calls f on the pieces [lo, hi) of [0, n), in order, each at
// most ops.TickEvery long and counted with c.Tick, and stops with the
// request's error once the request ends.
func inPieces(c *ops.Context, n int, f func(lo, hi int)) error {
	for lo := 0; lo < n; lo += ops.TickEvery {
		hi := min(lo+ops.TickEvery, n)
		if err := c.Tick(hi - lo); err != nil {
			return err
		}
		f(lo, hi)
	}
	return nil
}
