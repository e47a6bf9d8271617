package control

import (
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Scan", Since: 8, Until: 8}, buildScan8)
}

// Scan8Attrs are Scan's attributes in opset 8, which scans axis 1 of
// batched inputs.
type Scan8Attrs struct {
	Body          *onnxpb.Graph `onnx:"body"`
	NumScanInputs int64         `onnx:"num_scan_inputs"`
	Directions    []int64       `onnx:"directions"`
}

// scan8 is a compiled Scan-8: input 0 is the optional sequence_lens,
// every input and output has a batch axis 0, scan inputs are scanned
// along axis 1 and scan outputs stacked there; each batch entry runs on
// its own, as a Scan over axis 0 of its slices.
type scan8 struct {
	p *scan
}

func buildScan8(n *ops.Node, at *Scan8Attrs) (ops.Operator, error) {
	// sequence_lens, the first, is optional; the states and scanned
	// inputs after it are not.
	if err := n.CheckCounts(2, 1<<16, 1, 1<<16); err != nil {
		return nil, err
	}
	if err := n.RequireFrom(1); err != nil {
		return nil, err
	}
	p, err := newScan(n, at.Body, at.NumScanInputs, len(n.Inputs)-1)
	if err != nil {
		return nil, err
	}
	p.inAxes = make([]int64, p.inputs)
	if p.inDir, err = scanFlags(at.Directions, p.inputs, "directions"); err != nil {
		return nil, err
	}
	p.outAxes, p.outDir = make([]int64, p.outputs), make([]int64, p.outputs)
	return &scan8{p: p}, nil
}

// Run takes sequence_lens (or nil), the N states, then the M scan inputs,
// and returns the final states, then the K scan outputs.
func (op *scan8) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	p := op.p
	states, inputs := in[1:1+p.states], in[1+p.states:1+p.states+p.inputs]
	batch := -1
	for _, x := range append(slices.Clone(states), inputs...) {
		if x.Rank() < 1 || batch >= 0 && x.Shape[0] != batch {
			return nil, ops.InputErrorf("Scan-8 inputs need one batch axis 0 of the same size")
		}
		batch = x.Shape[0]
	}
	if in[0] != nil {
		lens, err := in[0].Int64s()
		if err != nil || len(lens) != batch {
			return nil, ops.InputErrorf("sequence_lens must hold one integer per batch entry")
		}
		for i, x := range inputs {
			if x.Rank() < 2 {
				return nil, ops.InputErrorf("scan input %d needs axes batch and sequence", i)
			}
			for _, l := range lens {
				if l != int64(x.Shape[1]) {
					return nil, ops.Unsupportedf("Scan-8 with sequence_lens shorter than the inputs")
				}
			}
		}
	}
	per := make([][]*tensor.Tensor, max(batch, 0))
	for b := range per {
		var st, xs []*tensor.Tensor
		for _, s := range states {
			st = append(st, indexAxis(s, 0, b))
		}
		for _, x := range inputs {
			xs = append(xs, indexAxis(x, 0, b))
		}
		outs, err := p.run(c, in, st, xs)
		if err != nil {
			return nil, err
		}
		per[b] = outs
	}
	res := make([]*tensor.Tensor, p.nodeOutputs)
	for j := range res {
		parts := make([]*tensor.Tensor, len(per))
		for b := range per {
			parts[b] = per[b][j]
		}
		dt := tensor.Invalid
		if j >= p.states {
			dt = p.outTypes[j-p.states]
		} else if len(states) > j {
			dt = states[j].DType
		}
		s, err := stackTensors(parts, 0, dt)
		if err != nil {
			return nil, err
		}
		res[j] = s
	}
	return res, nil
}
