package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Transpose is the Transpose operator.
var Transpose = ops.Op{
	ops.Register(ops.Descriptor{Type: "Transpose", Since: 1, Fold: true}, buildTranspose),
}

// TransposeAttrs are Transpose's attributes.
type TransposeAttrs struct {
	Perm []int64 `onnx:"perm"` // nil: reverse the axes
}

// transpose is a compiled Transpose: its permutation, checked against
// the input's rank on every run (nil: reverse the axes).
type transpose struct{ perm []int64 }

func buildTranspose(n *ops.Node, at *TransposeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return transpose{perm: at.Perm}, nil
}

func (tr transpose) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	r := x.Rank()
	p := make([]int, r)
	if tr.perm != nil {
		if len(tr.perm) != r {
			return nil, ops.InputErrorf("Transpose perm %v does not fit rank %d", tr.perm, r)
		}
		seen := make([]bool, r)
		for i, v := range tr.perm {
			if v < 0 || v >= int64(r) || seen[v] {
				return nil, ops.InputErrorf("Transpose perm %v is not a permutation", tr.perm)
			}
			seen[v] = true
			p[i] = int(v)
		}
	} else {
		for i := range p {
			p[i] = r - 1 - i
		}
	}
	y, err := Permute(c, x, p)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// Permute returns x with its axes permuted: out axis i is x axis p[i].
// Axes that stay contiguous move as whole runs (copy()), so the head
// transposes of attention ([B,S,H,D] → [B,H,S,D]) copy rows of D. It
// fails only with c.Err(), once the request ends during a long copy: with
// a nil c (no request to watch) it never fails.
func Permute(c *ops.Context, x *tensor.Tensor, p []int) (*tensor.Tensor, error) {
	rows := tensor.Strides(x.Shape)
	shape, strides := make([]int, len(p)), make([]int, len(p))
	for i, a := range p {
		shape[i], strides[i] = x.Shape[a], rows[a]
	}
	return StridedView(c, x, shape, strides, 0) // as many elements as x: no size error
}
