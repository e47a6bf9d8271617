package spatial

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "SpaceToDepth", Since: 1, Fold: true}, buildSpaceToDepth)
}

// SpaceToDepthAttrs are SpaceToDepth's attributes.
type SpaceToDepthAttrs struct {
	Blocksize int64 `onnx:"blocksize"`
}

// spaceToDepth is a compiled SpaceToDepth: its block size.
type spaceToDepth struct{ b int }

func buildSpaceToDepth(n *ops.Node, at *SpaceToDepthAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Blocksize < 1 || at.Blocksize > 1<<16 {
		return nil, fmt.Errorf("SpaceToDepth blocksize %d is invalid", at.Blocksize)
	}
	return &spaceToDepth{b: int(at.Blocksize)}, nil
}

func (op *spaceToDepth) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, b := in[0], op.b
	if x.Rank() != 4 {
		return nil, ops.InputErrorf("SpaceToDepth takes a 4-D input, got %s", tensor.ShapeString(x.Shape))
	}
	nb, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if h%b != 0 || w%b != 0 {
		return nil, ops.InputErrorf("SpaceToDepth: %d×%d is not a multiple of blocksize %d", h, w, b)
	}
	ho, wo := h/b, w/b
	out := []int{nb, ch * b * b, ho, wo}
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	idx := make([]int, 0, total)
	for in := 0; in < nb; in++ {
		for oc := 0; oc < ch*b*b; oc++ {
			ic, blk := oc%ch, oc/ch
			i, j := blk/b, blk%b
			for oh := 0; oh < ho; oh++ {
				if err := c.Tick(wo); err != nil {
					return nil, err
				}
				for ow := 0; ow < wo; ow++ {
					idx = append(idx, ((in*ch+ic)*h+oh*b+i)*w+ow*b+j)
				}
			}
		}
	}
	return []*tensor.Tensor{take(x, out, idx)}, nil
}
