package index

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "NonZero", Since: 9, Fold: true}, buildNonZero)
}

// nonZero is a compiled NonZero: the indices of the nonzero elements,
// one row per dimension.
type nonZero struct{}

func buildNonZero(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return nonZero{}, nil
}

func (nonZero) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	var nz []int
	var err error
	switch d := x.Data.(type) {
	case []bool:
		err = c.InPieces(len(d), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if d[i] {
					nz = append(nz, i)
				}
			}
		})
	case []string:
		return nil, ops.InputErrorf("NonZero does not take %v", x.DType)
	default:
		v := x.Float64s()
		err = c.InPieces(len(v), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if v[i] != 0 {
					nz = append(nz, i)
				}
			}
		})
	}
	if err != nil {
		return nil, err
	}
	// A scalar reads as a 1-D tensor of one element, as in ONNX Runtime.
	shape := x.Shape
	if len(shape) == 0 {
		shape = []int{1}
	}
	r := len(shape)
	out := make([]int64, r*len(nz))
	strides := tensor.Strides(shape)
	for j, flat := range nz {
		for d := 0; d < r; d++ {
			out[d*len(nz)+j] = int64(flat / strides[d] % shape[d])
		}
		if err := c.Tick(r); err != nil {
			return nil, err
		}
	}
	return out1(tensor.From([]int{r, len(nz)}, out)), nil
}
