package spatial

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "DepthToSpace", Since: 1, Until: 10, Fold: true}, buildDepthToSpace1)
	ops.Register(ops.Descriptor{Type: "DepthToSpace", Since: 11, Fold: true}, buildDepthToSpace)
}

// DepthToSpace1Attrs are DepthToSpace's attributes before opset 11 (DCR
// order only).
type DepthToSpace1Attrs struct {
	Blocksize int64 `onnx:"blocksize"`
}

// DepthToSpaceAttrs are DepthToSpace's attributes from opset 11 on.
type DepthToSpaceAttrs struct {
	Blocksize int64  `onnx:"blocksize"`
	Mode      string `onnx:"mode" default:"DCR"`
}

// depthToSpace is a compiled DepthToSpace: its block size and whether
// channels are ordered depth, column, row (DCR) or column, row, depth
// (CRD).
type depthToSpace struct {
	b   int
	dcr bool
}

func buildDepthToSpace1(n *ops.Node, at *DepthToSpace1Attrs) (ops.Operator, error) {
	return newDepthToSpace(n, at.Blocksize, "DCR")
}

func buildDepthToSpace(n *ops.Node, at *DepthToSpaceAttrs) (ops.Operator, error) {
	return newDepthToSpace(n, at.Blocksize, at.Mode)
}

func newDepthToSpace(n *ops.Node, bs int64, mode string) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if bs < 1 || bs > 1<<16 {
		return nil, fmt.Errorf("DepthToSpace blocksize %d is invalid", bs)
	}
	if mode != "DCR" && mode != "CRD" {
		return nil, ops.Unsupportedf("DepthToSpace mode %q", mode)
	}
	return &depthToSpace{b: int(bs), dcr: mode == "DCR"}, nil
}

func (op *depthToSpace) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, b := in[0], op.b
	if x.Rank() != 4 {
		return nil, ops.InputErrorf("DepthToSpace takes a 4-D input, got %s", tensor.ShapeString(x.Shape))
	}
	nb, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if ch%(b*b) != 0 {
		return nil, ops.InputErrorf("DepthToSpace: %d channels are not a multiple of blocksize² = %d", ch, b*b)
	}
	co := ch / (b * b)
	out := []int{nb, co, h * b, w * b}
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	idx := make([]int, 0, total)
	for in := 0; in < nb; in++ {
		for oc := 0; oc < co; oc++ {
			for oh := 0; oh < h*b; oh++ {
				if err := c.Tick(w * b); err != nil {
					return nil, err
				}
				y, i := oh/b, oh%b
				for ow := 0; ow < w*b; ow++ {
					xw, j := ow/b, ow%b
					var ic int
					if op.dcr {
						ic = (i*b+j)*co + oc
					} else {
						ic = oc*b*b + i*b + j
					}
					idx = append(idx, ((in*ch+ic)*h+y)*w+xw)
				}
			}
		}
	}
	return []*tensor.Tensor{take(x, out, idx)}, nil
}
