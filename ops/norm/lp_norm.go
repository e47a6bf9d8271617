package norm

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "LpNormalization", Since: 1, Fold: true}, buildLpNorm)
}

// LpNormAttrs are LpNormalization's attributes.
type LpNormAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
	P    int64 `onnx:"p" default:"2"`
}

// lpNormOp is a compiled LpNormalization.
type lpNormOp struct{ axis, p int64 }

func buildLpNorm(n *ops.Node, at *LpNormAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.P != 1 && at.P != 2 {
		return nil, fmt.Errorf("LpNormalization p = %d: ONNX defines p = 1 and p = 2", at.P)
	}
	return &lpNormOp{axis: at.Axis, p: at.P}, nil
}

func (o *lpNormOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("LpNormalization takes an input of rank 1 or more")
	}
	a, err := ops.NormAxis(o.axis, x.Rank())
	if err != nil {
		return nil, err
	}
	outer, dim, inner := ops.ProdInts(x.Shape[:a]), x.Shape[a], ops.ProdInts(x.Shape[a+1:])
	return ops.Result(normRun("LpNormalization", x,
		func(v []float32) ([]float32, error) { return lpNormalize(v, outer, dim, inner, o.p, c) },
		func(v []float64) ([]float64, error) { return lpNormalize(v, outer, dim, inner, o.p, c) }))
}

// lpNormalize divides each vector along the middle axis of x
// ([outer, dim, inner]) by its L1 or L2 norm; a zero vector stays zero.
func lpNormalize[T tensor.Float](x []T, outer, dim, inner int, p int64, oc *ops.Context) ([]T, error) {
	y := make([]T, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			if err := oc.Tick(dim); err != nil {
				return nil, err
			}
			base := o*dim*inner + j
			var s float64
			for i := 0; i < dim; i++ {
				v := float64(x[base+i*inner])
				if p == 1 {
					s += math.Abs(v)
				} else {
					s += v * v
				}
			}
			if p == 2 {
				s = math.Sqrt(s)
			}
			if s == 0 {
				continue
			}
			for i := 0; i < dim; i++ {
				y[base+i*inner] = T(float64(x[base+i*inner]) / s)
			}
		}
	}
	return y, nil
}
