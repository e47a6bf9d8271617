package index

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// CumSum and CumProd: the running sums (products) along the axis their
// second input names, in the input's own type, inclusive or exclusive of
// each position, forward or reversed.
func init() {
	ops.Register(ops.Descriptor{Type: "CumSum", Since: 11, Fold: true}, cumulativeBuilder("CumSum"))
	ops.Register(ops.Descriptor{Type: "CumProd", Since: 26, Fold: true}, cumulativeBuilder("CumProd"))
}

// CumulativeAttrs are the attributes of CumSum and CumProd.
type CumulativeAttrs struct {
	Exclusive bool `onnx:"exclusive"`
	Reverse   bool `onnx:"reverse"`
}

// cumulative is a compiled CumSum or CumProd.
type cumulative struct {
	op                       string
	exclusive, reverse, prod bool
}

// cumulativeBuilder builds CumSum or CumProd.
func cumulativeBuilder(op string) func(n *ops.Node, at *CumulativeAttrs) (ops.Operator, error) {
	return func(n *ops.Node, at *CumulativeAttrs) (ops.Operator, error) {
		if err := n.CheckArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return &cumulative{op: op, exclusive: at.Exclusive, reverse: at.Reverse, prod: op == "CumProd"}, nil
	}
}

func (cu *cumulative) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, op := in[0], cu.op
	av, err := indexValues(in[1], op+" axis")
	if err != nil {
		return nil, err
	}
	if len(av) != 1 {
		return nil, ops.InputErrorf("%s axis must be a scalar", op)
	}
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("%s needs rank >= 1", op)
	}
	a, err := ops.NormAxis(av[0], x.Rank())
	if err != nil {
		return nil, err
	}
	y := &tensor.Tensor{DType: x.DType, Shape: x.Shape}
	l := lines{c: c, exclusive: cu.exclusive, reverse: cu.reverse, prod: cu.prod}
	if x.Len() > 0 {
		l.outer, l.dim, l.inner = geometry(x.Shape, a)
	}
	switch d := x.Data.(type) {
	case []float32:
		y.Data, err = cumulativeAlong(d, l)
	case []float64:
		y.Data, err = cumulativeAlong(d, l)
	case []int8:
		y.Data, err = cumulativeAlong(d, l)
	case []uint8:
		y.Data, err = cumulativeAlong(d, l)
	case []int16:
		y.Data, err = cumulativeAlong(d, l)
	case []uint16:
		y.Data, err = cumulativeAlong(d, l)
	case []int32:
		y.Data, err = cumulativeAlong(d, l)
	case []uint32:
		y.Data, err = cumulativeAlong(d, l)
	case []int64:
		y.Data, err = cumulativeAlong(d, l)
	case []uint64:
		y.Data, err = cumulativeAlong(d, l)
	case []tensor.F16:
		var f []float32
		if f, err = cumulativeAlong(tensor.HalfToFloat32(d), l); err == nil {
			y.Data = tensor.Float32ToHalf[tensor.F16](f)
		}
	case []tensor.BF16:
		var f []float32
		if f, err = cumulativeAlong(tensor.HalfToFloat32(d), l); err == nil {
			y.Data = tensor.Float32ToHalf[tensor.BF16](f)
		}
	default:
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	if err != nil {
		return nil, err
	}
	return out1(y), nil
}

// lines are the lines along the middle axis of geometry [outer, dim,
// inner] a cumulative run walks, and how.
type lines struct {
	outer, dim, inner        int
	exclusive, reverse, prod bool
	c                        *ops.Context
}

// cumulativeAlong returns the running sums (or products) of x along the
// lines l describes.
func cumulativeAlong[T tensor.Numeric](x []T, l lines) ([]T, error) {
	out := make([]T, len(x))
	outer, dim, inner := l.outer, l.dim, l.inner
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			var acc T
			if l.prod {
				acc = 1
			}
			for lo := 0; lo < dim; lo += ops.TickEvery {
				hi := min(lo+ops.TickEvery, dim)
				if err := l.c.Tick(hi - lo); err != nil {
					return nil, err
				}
				for s := lo; s < hi; s++ {
					i := s
					if l.reverse {
						i = dim - 1 - s
					}
					p := base + i*inner
					if l.exclusive {
						out[p] = acc
					}
					if l.prod {
						acc *= x[p]
					} else {
						acc += x[p]
					}
					if !l.exclusive {
						out[p] = acc
					}
				}
			}
		}
	}
	return out, nil
}
