package model

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Control flow: operators whose attributes are graphs, compiled once at
// load like the main graph, reading values of the graphs around them.

func init() {
	register(Descriptor{Type: "If", Since: 1}, buildIf)
}

// IfAttrs are If's attributes: the branches.
type IfAttrs struct {
	Then *onnxpb.Graph `onnx:"then_branch"`
	Else *onnxpb.Graph `onnx:"else_branch"`
}

func buildIf(n *node, at *IfAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1<<16); err != nil {
		return nil, err
	}
	then, err := n.subgraph(at.Then)
	if err != nil {
		return nil, fmt.Errorf("then_branch: %w", err)
	}
	els, err := n.subgraph(at.Else)
	if err != nil {
		return nil, fmt.Errorf("else_branch: %w", err)
	}
	for _, g := range []*subgraph{then, els} {
		if len(g.outs) != len(n.pb.Outputs) {
			return nil, fmt.Errorf("a branch has %d outputs, the node %d", len(g.outs), len(n.pb.Outputs))
		}
	}
	n.runCtx = func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		c, ok := in[0].Data.([]bool)
		if !ok || len(c) != 1 {
			return nil, inputErrorf("If takes a BOOL condition with one element, got %v%s", in[0].DType, tensor.ShapeString(in[0].Shape))
		}
		if c[0] {
			return then.call(ctx, in, nil)
		}
		return els.call(ctx, in, nil)
	}
	return nil, nil
}

func init() {
	register(Descriptor{Type: "Loop", Since: 1}, buildLoop)
	register(Descriptor{Type: "Scan", Since: 8, Until: 8}, buildScan8)
	register(Descriptor{Type: "Scan", Since: 9}, buildScan)
}

// LoopAttrs are Loop's attributes.
type LoopAttrs struct {
	Body *onnxpb.Graph `onnx:"body"`
}

// outputTypes returns the element types a graph declares for its outputs
// (Invalid where it declares none), for empty scan outputs.
func outputTypes(g *onnxpb.Graph) []tensor.DataType {
	out := make([]tensor.DataType, len(g.Outputs))
	for i, vi := range g.Outputs {
		if vi.Type != nil && vi.Type.Kind == onnxpb.TypeTensor {
			out[i], _ = DataTypeFromONNX(vi.Type.ElemType)
		}
	}
	return out
}

// buildLoop implements Loop: a body run while the trip count (input M)
// and the condition allow, carrying N values from one iteration to the
// next and stacking K scan outputs along a new first axis.
func buildLoop(n *node, at *LoopAttrs) (opFunc, error) {
	if err := n.checkArity(2, 1<<16, 1, 1<<16); err != nil {
		return nil, err
	}
	body, err := n.subgraph(at.Body)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	carried := len(n.pb.Inputs) - 2
	scans := len(body.outs) - 1 - carried
	switch {
	case len(body.names) != 2+carried:
		return nil, fmt.Errorf("the body takes %d inputs, want 2 + %d carried values", len(body.names), carried)
	case scans < 0:
		return nil, fmt.Errorf("the body has %d outputs, want at least 1 + %d carried values", len(body.outs), carried)
	case len(n.pb.Outputs) > carried+scans:
		return nil, fmt.Errorf("the node has %d outputs, the body gives %d carried values and %d scan outputs", len(n.pb.Outputs), carried, scans)
	}
	scanTypes := outputTypes(at.Body)[1+carried:]
	n.runCtx = func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		trips := int64(-1) // no limit
		if in[0] != nil {
			m, ok := in[0].Data.([]int64)
			if !ok || len(m) != 1 {
				return nil, inputErrorf("Loop's trip count must be one INT64, got %v%s", in[0].DType, tensor.ShapeString(in[0].Shape))
			}
			trips = max(m[0], 0)
		}
		cond := true
		if in[1] != nil {
			c, ok := in[1].Data.([]bool)
			if !ok || len(c) != 1 {
				return nil, inputErrorf("Loop's condition must be one BOOL, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
			}
			cond = c[0]
		}
		vals := slices.Clone(in[2 : 2+carried])
		stacks := make([][]*tensor.Tensor, scans)
		total := 0
		for i := int64(0); (trips < 0 || i < trips) && cond; i++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			args := append([]*tensor.Tensor{tensor.Scalar(i), tensor.Scalar(cond)}, vals...)
			outs, err := body.call(ctx, in, args)
			if err != nil {
				return nil, err
			}
			c, ok := outs[0].Data.([]bool)
			if !ok || len(c) != 1 {
				return nil, inputErrorf("the Loop body's condition must be one BOOL, got %v%s", outs[0].DType, tensor.ShapeString(outs[0].Shape))
			}
			cond = c[0]
			copy(vals, outs[1:1+carried])
			for k := range stacks {
				s := outs[1+carried+k]
				if total += s.Len(); total > tensor.MaxElements {
					return nil, inputErrorf("Loop scan outputs exceed %d elements", tensor.MaxElements)
				}
				stacks[k] = append(stacks[k], s)
			}
		}
		res := append([]*tensor.Tensor{}, vals...)
		for k, parts := range stacks {
			s, err := stackTensors(parts, 0, scanTypes[k])
			if err != nil {
				return nil, err
			}
			res = append(res, s)
		}
		return res[:len(n.pb.Outputs)], nil
	}
	return nil, nil
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

// scanPlan is a compiled Scan: N states, M scan inputs, K scan outputs.
type scanPlan struct {
	body                    *subgraph
	states, inputs, outputs int
	inAxes, inDir           []int64
	outAxes, outDir         []int64
	outTypes                []tensor.DataType
	nodeOutputs             int
}

func newScanPlan(n *node, g *onnxpb.Graph, numScan int64, stateIn int) (*scanPlan, error) {
	body, err := n.subgraph(g)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	p := &scanPlan{body: body, inputs: int(numScan), nodeOutputs: len(n.pb.Outputs)}
	p.states = stateIn - p.inputs
	p.outputs = len(body.outs) - p.states
	switch {
	case numScan < 0 || p.states < 0:
		return nil, fmt.Errorf("num_scan_inputs %d does not fit %d inputs", numScan, stateIn)
	case len(body.names) != p.states+p.inputs:
		return nil, fmt.Errorf("the body takes %d inputs, want %d states + %d scan inputs", len(body.names), p.states, p.inputs)
	case p.outputs < 0 || len(n.pb.Outputs) > p.states+p.outputs:
		return nil, fmt.Errorf("the body's %d outputs do not fit %d states and the node's %d outputs", len(body.outs), p.states, len(n.pb.Outputs))
	}
	p.outTypes = outputTypes(g)[p.states:]
	return p, nil
}

// flags returns attr, or zeros of length n when absent; its length must be n.
func scanFlags(attr []int64, n int, name string) ([]int64, error) {
	if attr == nil {
		return make([]int64, n), nil
	}
	if len(attr) != n {
		return nil, fmt.Errorf("%s has %d entries, want %d", name, len(attr), n)
	}
	return attr, nil
}

func buildScan(n *node, at *ScanAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1<<16, 1, 1<<16); err != nil {
		return nil, err
	}
	p, err := newScanPlan(n, at.Body, at.NumScanInputs, len(n.pb.Inputs))
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
	n.runCtx = func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return p.run(ctx, in, in[:p.states], in[p.states:p.states+p.inputs])
	}
	return nil, nil
}

// run scans the inputs once; all is the node's full input list (for the
// body's captures).
func (p *scanPlan) run(ctx context.Context, all, states, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	steps := -1
	axes := make([]int, len(inputs))
	for i, x := range inputs {
		a, err := normAxis(p.inAxes[i], x.Rank())
		if err != nil {
			return nil, err
		}
		axes[i] = a
		if steps >= 0 && x.Shape[a] != steps {
			return nil, inputErrorf("Scan inputs have %d and %d steps along their scan axes", steps, x.Shape[a])
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
		if err := ctx.Err(); err != nil {
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
		outs, err := p.body.call(ctx, all, args)
		if err != nil {
			return nil, err
		}
		copy(vals, outs[:p.states])
		for k := range stacks {
			s := outs[p.states+k]
			if total += s.Len(); total > tensor.MaxElements {
				return nil, inputErrorf("Scan outputs exceed %d elements", tensor.MaxElements)
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
		a, err := normAxis(p.outAxes[k], rank)
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

// Scan8Attrs are Scan's attributes in opset 8, which scans axis 1 of
// batched inputs.
type Scan8Attrs struct {
	Body          *onnxpb.Graph `onnx:"body"`
	NumScanInputs int64         `onnx:"num_scan_inputs"`
	Directions    []int64       `onnx:"directions"`
}

// buildScan8 implements Scan-8: input 0 is the optional sequence_lens,
// every input and output has a batch axis 0, scan inputs are scanned
// along axis 1 and scan outputs stacked there; each batch entry runs on
// its own.
func buildScan8(n *node, at *Scan8Attrs) (opFunc, error) {
	if err := n.checkArity(2, 1<<16, 1, 1<<16); err != nil {
		return nil, err
	}
	p, err := newScanPlan(n, at.Body, at.NumScanInputs, len(n.pb.Inputs)-1)
	if err != nil {
		return nil, err
	}
	p.inAxes = make([]int64, p.inputs)
	if p.inDir, err = scanFlags(at.Directions, p.inputs, "directions"); err != nil {
		return nil, err
	}
	p.outAxes, p.outDir = make([]int64, p.outputs), make([]int64, p.outputs)
	n.runCtx = func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		states, inputs := in[1:1+p.states], in[1+p.states:1+p.states+p.inputs]
		batch := -1
		for _, x := range append(slices.Clone(states), inputs...) {
			if x.Rank() < 1 || batch >= 0 && x.Shape[0] != batch {
				return nil, inputErrorf("Scan-8 inputs need one batch axis 0 of the same size")
			}
			batch = x.Shape[0]
		}
		if in[0] != nil {
			lens, err := in[0].Int64s()
			if err != nil || len(lens) != batch {
				return nil, inputErrorf("sequence_lens must hold one integer per batch entry")
			}
			for i, x := range inputs {
				if x.Rank() < 2 {
					return nil, inputErrorf("scan input %d needs axes batch and sequence", i)
				}
				for _, l := range lens {
					if l != int64(x.Shape[1]) {
						return nil, unsupportedf("Scan-8 with sequence_lens shorter than the inputs")
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
			outs, err := p.run(ctx, in, st, xs)
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
	return nil, nil
}

// indexAxis returns x[..., i, ...] along axis: a tensor of rank one less.
func indexAxis(x *tensor.Tensor, axis, i int) *tensor.Tensor {
	outer, inner := 1, 1
	for _, d := range x.Shape[:axis] {
		outer *= d
	}
	for _, d := range x.Shape[axis+1:] {
		inner *= d
	}
	dim := x.Shape[axis]
	shape := slices.Concat(x.Shape[:axis], x.Shape[axis+1:])
	if outer == 1 {
		v := reflect.ValueOf(x.Data).Slice(i*inner, (i+1)*inner).Interface()
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: v}
	}
	out, _ := tensor.MakeSlice(x.DType, outer*inner)
	dst, src := reflect.ValueOf(out), reflect.ValueOf(x.Data)
	for o := 0; o < outer; o++ {
		reflect.Copy(dst.Slice(o*inner, (o+1)*inner), src.Slice((o*dim+i)*inner, (o*dim+i+1)*inner))
	}
	return &tensor.Tensor{DType: x.DType, Shape: shape, Data: out}
}

// stackTensors stacks parts of one shape and type along a new axis. With
// no parts it returns an empty [0] tensor of type dt.
func stackTensors(parts []*tensor.Tensor, axis int, dt tensor.DataType) (*tensor.Tensor, error) {
	if len(parts) == 0 {
		if dt == tensor.Invalid {
			dt = tensor.Float32
		}
		return tensor.New(dt, []int{0})
	}
	first := parts[0]
	for _, p := range parts[1:] {
		if p.DType != first.DType || !equalShape(p.Shape, first.Shape) {
			return nil, inputErrorf("values to stack differ: %v%s and %v%s", first.DType, tensor.ShapeString(first.Shape), p.DType, tensor.ShapeString(p.Shape))
		}
	}
	if axis > first.Rank() {
		return nil, inputErrorf("stacking axis %d for rank %d", axis, first.Rank())
	}
	shape := slices.Concat(first.Shape[:axis], []int{len(parts)}, first.Shape[axis:])
	total, err := tensor.NumElements(shape)
	if err != nil {
		return nil, err
	}
	outer, inner := 1, 1
	for _, d := range first.Shape[:axis] {
		outer *= d
	}
	for _, d := range first.Shape[axis:] {
		inner *= d
	}
	out, _ := tensor.MakeSlice(first.DType, total)
	dst := reflect.ValueOf(out)
	for k, p := range parts {
		src := reflect.ValueOf(p.Data)
		for o := 0; o < outer; o++ {
			at := (o*len(parts) + k) * inner
			reflect.Copy(dst.Slice(at, at+inner), src.Slice(o*inner, (o+1)*inner))
		}
	}
	return &tensor.Tensor{DType: first.DType, Shape: shape, Data: out}, nil
}
