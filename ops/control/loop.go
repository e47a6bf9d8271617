package control

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Loop", Since: 1}, buildLoop)
}

// LoopAttrs are Loop's attributes.
type LoopAttrs struct {
	Body *onnxpb.Graph `onnx:"body"`
}

// loop is a compiled Loop: a body run while the trip count (input M) and
// the condition allow, carrying N values from one iteration to the next
// and stacking K scan outputs along a new first axis.
type loop struct {
	body      ops.Graph
	carried   int               // N
	scans     int               // K
	scanTypes []tensor.DataType // the body's declared scan output types, for empty outputs
	outputs   int               // the node's outputs
}

func buildLoop(n *ops.Node, at *LoopAttrs) (ops.Operator, error) {
	// M and cond, the first two, are optional; the carried values are not.
	if err := n.CheckCounts(2, 1<<16, 1, 1<<16); err != nil {
		return nil, err
	}
	if err := n.RequireFrom(2); err != nil {
		return nil, err
	}
	body, err := n.Graph(at.Body)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	carried := len(n.Inputs) - 2
	scans := len(body.Outputs()) - 1 - carried
	switch {
	case len(body.Inputs()) != 2+carried:
		return nil, fmt.Errorf("the body takes %d inputs, want 2 + %d carried values", len(body.Inputs()), carried)
	case scans < 0:
		return nil, fmt.Errorf("the body has %d outputs, want at least 1 + %d carried values", len(body.Outputs()), carried)
	case len(n.Outputs) > carried+scans:
		return nil, fmt.Errorf("the node has %d outputs, the body gives %d carried values and %d scan outputs", len(n.Outputs), carried, scans)
	}
	return &loop{body: body, carried: carried, scans: scans,
		scanTypes: outputTypes(at.Body)[1+carried:], outputs: len(n.Outputs)}, nil
}

func (op *loop) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	trips := int64(-1) // no limit
	if in[0] != nil {
		m, ok := in[0].Data.([]int64)
		if !ok || len(m) != 1 {
			return nil, ops.InputErrorf("Loop's trip count must be one INT64, got %v%s", in[0].DType, tensor.ShapeString(in[0].Shape))
		}
		trips = max(m[0], 0)
	}
	cond := true
	if in[1] != nil {
		b, ok := in[1].Data.([]bool)
		if !ok || len(b) != 1 {
			return nil, ops.InputErrorf("Loop's condition must be one BOOL, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
		}
		cond = b[0]
	}
	vals := slices.Clone(in[2 : 2+op.carried])
	stacks := make([][]*tensor.Tensor, op.scans)
	total := 0
	for i := int64(0); (trips < 0 || i < trips) && cond; i++ {
		if err := c.Err(); err != nil {
			return nil, err
		}
		args := append([]*tensor.Tensor{tensor.Scalar(i), tensor.Scalar(cond)}, vals...)
		outs, err := op.body.Run(c, in, args)
		if err != nil {
			return nil, err
		}
		b, ok := outs[0].Data.([]bool)
		if !ok || len(b) != 1 {
			return nil, ops.InputErrorf("the Loop body's condition must be one BOOL, got %v%s", outs[0].DType, tensor.ShapeString(outs[0].Shape))
		}
		cond = b[0]
		copy(vals, outs[1:1+op.carried])
		for k := range stacks {
			s := outs[1+op.carried+k]
			if total += s.Len(); total > tensor.MaxElements {
				return nil, ops.InputErrorf("Loop scan outputs exceed %d elements", tensor.MaxElements)
			}
			// The part is held until the end, then copied into the stack;
			// holding it costs its header too (a trip of one element
			// holds far more than its 4 bytes).
			if err := c.Reserve(2*ops.SizeOf(s) + partBytes); err != nil {
				return nil, err
			}
			stacks[k] = append(stacks[k], s)
		}
	}
	res := append([]*tensor.Tensor{}, vals...)
	for k, parts := range stacks {
		s, err := stackTensors(parts, 0, op.scanTypes[k])
		if err != nil {
			return nil, err
		}
		res = append(res, s)
	}
	return res[:op.outputs], nil
}

// partBytes is what holding one scan part costs beyond its elements: the
// tensor, its shape and the stack's pointer to it.
const partBytes = 128
