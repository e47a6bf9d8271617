package pool

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// LpPool's p is an INT from 2 (a FLOAT in 1, before MinOpset); it
	// gained ceil_mode and dilations at 18.
	ops.Register(ops.Descriptor{Type: "LpPool", Since: 2, Until: 17, Fold: true}, buildLpPool)
	ops.Register(ops.Descriptor{Type: "LpPool", Since: 18, Fold: true}, buildLpPool)
}

// LpPoolAttrs are LpPool's attributes.
type LpPoolAttrs struct {
	Window
	P int64 `onnx:"p" default:"2"`
}

// lpPoolOp is a compiled LpPool.
type lpPoolOp struct {
	spec *spec
	p    float64
}

func buildLpPool(n *ops.Node, at *LpPoolAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.CheckAttrOpsets(ops.OpsetAttr{Name: "ceil_mode", Since: 18}, ops.OpsetAttr{Name: "dilations", Since: 18}); err != nil {
		return nil, err
	}
	s, err := at.spec("LpPool")
	if err != nil {
		return nil, err
	}
	if at.P < 1 {
		return nil, fmt.Errorf("LpPool p = %d, must be at least 1", at.P)
	}
	return &lpPoolOp{spec: s, p: float64(at.P)}, nil
}

func (l *lpPoolOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	g, err := l.spec.geometry(x.Shape)
	if err != nil {
		return nil, err
	}
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	return ops.Result(poolFloats("LpPool", x, g.OutShape(), func(xs []float64, y []float64) error {
		if os == 0 {
			return nil
		}
		return c.ParallelRows(len(y), lpCost(l.p)*g.kernelTaps(), func(i0, i1 int) {
			w := w.fork()
			for i := i0; i < i1; i++ {
				pl, o := i/os, i%os
				xp := xs[pl*is : (pl+1)*is]
				var s float64
				for _, off := range w.At(o) {
					s += lpPow(xp[off], l.p)
				}
				y[i] = lpRoot(s, l.p)
			}
		})
	}))
}

// lpCost is the cost of one element of an Lp pool: a product for p 1 and
// 2, a math.Pow otherwise.
func lpCost(p float64) int {
	if p == 1 || p == 2 {
		return tapCost
	}
	return ops.ScalarCost
}

// lpPow returns |v|^p.
func lpPow(v, p float64) float64 {
	switch p {
	case 1:
		return math.Abs(v)
	case 2:
		return v * v
	}
	return math.Pow(math.Abs(v), p)
}

// lpRoot returns s^(1/p).
func lpRoot(s, p float64) float64 {
	switch p {
	case 1:
		return s
	case 2:
		return math.Sqrt(s)
	}
	return math.Pow(s, 1/p)
}
