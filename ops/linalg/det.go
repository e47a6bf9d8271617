package linalg

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Det", Since: 11, Fold: true}, buildDet)
}

// det is a compiled Det: the determinant of each of its input's trailing
// M×M matrices.
type det struct{}

func buildDet(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return det{}, nil
}

func (det) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	r := x.Rank()
	if !x.DType.IsFloat() {
		return nil, ops.InputErrorf("Det does not take %v", x.DType)
	}
	if r < 2 || x.Shape[r-1] != x.Shape[r-2] {
		return nil, ops.InputErrorf("Det needs square matrices [..., M, M], got %s", tensor.ShapeString(x.Shape))
	}
	shape := slices.Clone(x.Shape[:r-2])
	count, _ := tensor.NumElements(shape)
	out := make([]float64, count)
	m := x.Shape[r-1]
	if x.Len() > 0 {
		v := x.Float64s()
		for i := range out {
			out[i] = detLU(v[i*m*m:(i+1)*m*m], m)
			if err := c.Tick(m * m * m); err != nil {
				return nil, err
			}
		}
	} else {
		for i := range out {
			out[i] = 1 // of a 0×0 matrix
		}
	}
	y, err := tensorops.CastTo(tensor.From(shape, out), x.DType)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// detLU returns det(a) of an m×m row-major matrix (modified in
// place) by LU decomposition with partial pivoting.
func detLU(a []float64, m int) float64 {
	det := 1.0
	for c := 0; c < m; c++ {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(a[r*m+c]) > math.Abs(a[p*m+c]) {
				p = r
			}
		}
		if a[p*m+c] == 0 {
			return 0
		}
		if p != c {
			for k := 0; k < m; k++ {
				a[p*m+k], a[c*m+k] = a[c*m+k], a[p*m+k]
			}
			det = -det
		}
		piv := a[c*m+c]
		det *= piv
		for r := c + 1; r < m; r++ {
			f := a[r*m+c] / piv
			if f == 0 {
				continue
			}
			for k := c + 1; k < m; k++ {
				a[r*m+k] -= f * a[c*m+k]
			}
		}
	}
	return det
}
