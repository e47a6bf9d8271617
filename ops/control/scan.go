package control

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Scan", Since: 9}, buildScan)
}

// ScanAttrs are Scan's attributes (opset 9 on).
type ScanAttrs struct {
	Body             *onnxpb.Graph `onnx:"body"`
	NumScanInputs    int64         `onnx:"num_scan_inputs"`
	InputAxes        []int64       `onnx:"scan_input_axes"`
	InputDirections  []int64       `onnx:"scan_input_directions"`
	OutputAxes       []int64       `onnx:"scan_output_axes"`
	OutputDirections []int64       `onnx:"scan_output_directions"`
}

// scan is a compiled Scan: N states, M scan inputs, K scan outputs. The
// body runs once per step along the scan inputs' axes, carrying the
// states; its scan outputs are stacked along the output axes. Scan-8 runs
// one for each batch entry.
type scan struct {
	body                    ops.Graph
	states, inputs, outputs int
	inAxes, inDir           []int64
	outAxes, outDir         []int64
	outTypes                []tensor.DataType
	nodeOutputs             int
}

// newScan compiles the body g of a Scan node n with numScan scan inputs
// among its stateIn states and scan inputs.
func newScan(n *ops.Node, g *onnxpb.Graph, numScan int64, stateIn int) (*scan, error) {
	body, err := n.Graph(g)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	p := &scan{body: body, inputs: int(numScan), nodeOutputs: len(n.Outputs)}
	p.states = stateIn - p.inputs
	p.outputs = len(body.Outputs()) - p.states
	switch {
	case numScan < 0 || p.states < 0:
		return nil, fmt.Errorf("num_scan_inputs %d does not fit %d inputs", numScan, stateIn)
	case len(body.Inputs()) != p.states+p.inputs:
		return nil, fmt.Errorf("the body takes %d inputs, want %d states + %d scan inputs", len(body.Inputs()), p.states, p.inputs)
	case p.outputs < 0 || len(n.Outputs) > p.states+p.outputs:
		return nil, fmt.Errorf("the body's %d outputs do not fit %d states and the node's %d outputs", len(body.Outputs()), p.states, len(n.Outputs))
	}
	p.outTypes = outputTypes(g)[p.states:]
	return p, nil
}

// scanFlags returns attr, or zeros of length n when absent; its length
// must be n.
func scanFlags(attr []int64, n int, name string) ([]int64, error) {
	if attr == nil {
		return make([]int64, n), nil
	}
	if len(attr) != n {
		return nil, fmt.Errorf("%s has %d entries, want %d", name, len(attr), n)
	}
	return slices.Clone(attr), nil
}

func buildScan(n *ops.Node, at *ScanAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1<<16, 1, 1<<16); err != nil {
		return nil, err
	}
	p, err := newScan(n, at.Body, at.NumScanInputs, len(n.Inputs))
	if err != nil {
		return nil, err
	}
	if p.inAxes, err = scanFlags(at.InputAxes, p.inputs, "scan_input_axes"); err != nil {
		return nil, err
	}
	if p.inDir, err = scanFlags(at.InputDirections, p.inputs, "scan_input_directions"); err != nil {
		return nil, err
	}
	if p.outAxes, err = scanFlags(at.OutputAxes, p.outputs, "scan_output_axes"); err != nil {
		return nil, err
	}
	if p.outDir, err = scanFlags(at.OutputDirections, p.outputs, "scan_output_directions"); err != nil {
		return nil, err
	}
	return p, nil
}

// Run takes the N states, then the M scan inputs, and returns the final
// states, then the K scan outputs.
func (p *scan) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return p.run(c, in, in[:p.states], in[p.states:p.states+p.inputs])
}

// run scans the inputs once; all is the node's full input list (for the
// body's captures).
func (p *scan) run(c *ops.Context, all, states, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	steps := -1
	axes := make([]int, len(inputs))
	for i, x := range inputs {
		a, err := ops.NormAxis(p.inAxes[i], x.Rank())
		if err != nil {
			return nil, err
		}
		axes[i] = a
		if steps >= 0 && x.Shape[a] != steps {
			return nil, ops.InputErrorf("Scan inputs have %d and %d steps along their scan axes", steps, x.Shape[a])
		}
		steps = x.Shape[a]
	}
	if steps < 0 {
		steps = 0
	}
	vals := slices.Clone(states)
	stacks := make([][]*tensor.Tensor, p.outputs)
	total := 0
	for t := 0; t < steps; t++ {
		if err := c.Err(); err != nil {
			return nil, err
		}
		args := slices.Clone(vals)
		for i, x := range inputs {
			j := t
			if p.inDir[i] != 0 {
				j = steps - 1 - t
			}
			args = append(args, indexAxis(x, axes[i], j))
		}
		outs, err := p.body.Run(c, all, args)
		if err != nil {
			return nil, err
		}
		copy(vals, outs[:p.states])
		for k := range stacks {
			s := outs[p.states+k]
			if total += s.Len(); total > tensor.MaxElements {
				return nil, ops.InputErrorf("Scan outputs exceed %d elements", tensor.MaxElements)
			}
			// The part is held until the end, then copied into the stack.
			if err := c.Reserve(2 * ops.SizeOf(s)); err != nil {
				return nil, err
			}
			stacks[k] = append(stacks[k], s)
		}
	}
	res := vals
	for k, parts := range stacks {
		if p.outDir[k] != 0 {
			slices.Reverse(parts)
		}
		rank := 1
		if len(parts) > 0 {
			rank = parts[0].Rank() + 1
		}
		a, err := ops.NormAxis(p.outAxes[k], rank)
		if err != nil {
			return nil, err
		}
		s, err := stackTensors(parts, a, p.outTypes[k])
		if err != nil {
			return nil, err
		}
		res = append(res, s)
	}
	return res[:p.nodeOutputs], nil
}
