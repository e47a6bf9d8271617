package model

import (
	"context"
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// MinOpset is the oldest ai.onnx opset quantserve loads.
const MinOpset = 7

// IOSpec describes a graph input or output. Dynamic dimensions are -1.
type IOSpec struct {
	Name  string
	DType tensor.DataType
	Shape []int
}

// Model is a loaded, compiled ONNX graph.
type Model struct {
	Inputs       []IOSpec
	Outputs      []IOSpec
	Opset        int64
	IRVersion    int64
	Producer     string
	Params       int64 // elements in initializers and Constant nodes
	Layers       []Layer
	Kernels      string // the kernel table products run on
	slotOf       map[string]int
	steps        []step
	slots        int
	inputSlot    []int // parallel to Inputs
	outputSlot   []int // parallel to Outputs
	constants    []constSlot
	releaseAfter [][]int // slots that die after step i
}

type constSlot struct {
	slot int
	t    *tensor.Tensor
}

// step runs one node: reads slots in, writes slots out.
type step struct {
	name  string
	op    string
	opset int64
	run   opFunc
	in    []int // -1 for an absent optional input, or one the op holds itself
	out   []int
	attrs Attrs
	args  []int   // the node's input slots as the graph names them
	lin   *linear // MatMul/Gemm with a constant weight
}

// opFunc runs a compiled node. Inputs are never modified; an absent
// optional input is nil.
type opFunc func(in []*tensor.Tensor) ([]*tensor.Tensor, error)

// Options configure how a model is compiled.
type Options struct {
	// Exec runs the matrix products; nil means gemm.Default().
	Exec *gemm.Engine
	// Quantize makes MatMul and Gemm layers whose weight is a constant
	// 2-D float32 initializer run on the int8 kernels, weights quantized
	// at load with Scheme. Layers too small to pay stay float32.
	Quantize bool
	Scheme   quant.Scheme
}

// MinQuantizedWeights is the smallest weight (K·N) quantized: below it the
// product is too small for int8 to pay for quantizing activations.
const MinQuantizedWeights = 4096

// Layer records how one matrix-product node runs.
type Layer struct {
	Node    string `json:"node"`
	Op      string `json:"op"`
	K       int    `json:"k"`
	N       int    `json:"n"`
	Kernels string `json:"kernels"` // "int8 per_channel", "float32", ...
}

// Load decodes and compiles an ONNX model to run in float32 on the
// default kernels.
func Load(data []byte) (*Model, error) { return LoadWith(data, Options{}) }

// LoadWith decodes and compiles an ONNX model with the given options.
func LoadWith(data []byte, opts Options) (*Model, error) {
	if opts.Exec == nil {
		opts.Exec = gemm.Default()
	}
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil {
		return nil, fmt.Errorf("model: decoding ONNX: %w", err)
	}
	return compile(pb, opts, nil)
}

// Compile compiles a decoded model; initializers named in overrides take
// those values instead of the file's (a trainer's current weights).
func Compile(pb *onnxpb.Model, opts Options, overrides map[string]*tensor.Tensor) (*Model, error) {
	if opts.Exec == nil {
		opts.Exec = gemm.Default()
	}
	return compile(pb, opts, overrides)
}

func compile(pb *onnxpb.Model, opts Options, overrides map[string]*tensor.Tensor) (*Model, error) {
	if pb.Graph == nil {
		return nil, fmt.Errorf("model: the file has no graph")
	}
	m := &Model{IRVersion: pb.IRVersion, Producer: pb.ProducerName, Kernels: opts.Exec.Table().String()}
	for _, op := range pb.OpsetImport {
		switch op.Domain {
		case "", "ai.onnx":
			m.Opset = op.Version
		}
	}
	if m.Opset == 0 && len(pb.OpsetImport) == 0 && pb.IRVersion > 0 && pb.IRVersion < 3 {
		m.Opset = 1
	}
	if m.Opset < MinOpset {
		return nil, unsupportedf("ai.onnx opset %d (quantserve loads opset %d and later)", m.Opset, MinOpset)
	}
	g := pb.Graph
	if g.NumSparseInit > 0 {
		return nil, unsupportedf("sparse initializers")
	}

	slotOf := map[string]int{}
	m.slotOf = slotOf
	newSlot := func(name string) int {
		s := m.slots
		m.slots++
		slotOf[name] = s
		return s
	}

	inits := map[string]*tensor.Tensor{}
	for _, p := range g.Initializers {
		t, ok := overrides[p.Name]
		if !ok {
			var err error
			if t, err = TensorFromONNX(p); err != nil {
				return nil, fmt.Errorf("initializer %q: %w", p.Name, err)
			}
		}
		inits[p.Name] = t
		m.Params += int64(t.Len())
		m.constants = append(m.constants, constSlot{newSlot(p.Name), t})
	}
	for _, vi := range g.Inputs {
		if _, isInit := inits[vi.Name]; isInit {
			continue // an initializer listed as input (IR < 4): a constant here
		}
		spec, err := ioSpec(vi)
		if err != nil {
			return nil, fmt.Errorf("model: graph input %q: %w", vi.Name, err)
		}
		m.Inputs = append(m.Inputs, spec)
		m.inputSlot = append(m.inputSlot, newSlot(vi.Name))
	}

	known := map[int]*tensor.Tensor{}
	qdqOf := map[int]*qdqWeight{}
	for _, c := range m.constants {
		known[c.slot] = c.t
	}
	for i, n := range g.Nodes {
		name := n.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		wrap := func(err error) error { return &NodeError{Node: name, Op: n.OpType, Opset: m.Opset, Err: err} }
		if n.Domain != "" && n.Domain != "ai.onnx" {
			return nil, wrap(unsupportedf("operator domain %q", n.Domain))
		}
		build, ok := registry[n.OpType]
		if !ok {
			return nil, wrap(unsupportedf("operator %s", n.OpType))
		}
		st := step{name: name, op: n.OpType, opset: m.Opset}
		ni := &node{pb: n, name: name, opset: m.Opset, attrs: Attrs{}, opts: &opts, model: m}
		for _, a := range n.Attributes {
			if a.RefAttrName != "" {
				return nil, wrap(unsupportedf("attribute %q refers to a function attribute", a.Name))
			}
			ni.attrs[a.Name] = a
		}
		for _, in := range n.Inputs {
			if in == "" {
				st.in = append(st.in, -1)
				ni.consts = append(ni.consts, nil)
				continue
			}
			s, ok := slotOf[in]
			if !ok {
				return nil, wrap(fmt.Errorf("input %q is not produced by any earlier node, initializer or graph input", in))
			}
			st.in = append(st.in, s)
			ni.consts = append(ni.consts, known[s])
			ni.qdq = append(ni.qdq, qdqOf[s])
		}
		ni.unused = make([]bool, len(st.in))
		run, err := build(ni)
		if err != nil {
			return nil, wrap(err)
		}
		st.run = run
		st.attrs, st.lin = ni.attrs, ni.lin
		st.args = slices.Clone(st.in)
		for _, out := range n.Outputs {
			if out == "" {
				st.out = append(st.out, -1)
				continue
			}
			st.out = append(st.out, newSlot(out))
		}
		for i, unused := range ni.unused {
			if unused {
				st.in[i] = -1
			}
		}
		if folds(n.OpType, ni.consts, st.out) {
			// Constant nodes, and DequantizeLinear of constants, are
			// evaluated once here, so later nodes see a load-time
			// constant (and, for QDQ weights, the int8 values behind it).
			outs, err := run(ni.consts)
			if err != nil {
				return nil, wrap(err)
			}
			if n.OpType == "Constant" {
				m.Params += int64(outs[0].Len())
			} else {
				axis, _ := ni.intAttr("axis", 1)
				block, _ := ni.intAttr("block_size", 0)
				qdqOf[st.out[0]] = qdqWeights(ni.consts, axis, block)
			}
			m.constants = append(m.constants, constSlot{st.out[0], outs[0]})
			known[st.out[0]] = outs[0]
			continue
		}
		m.steps = append(m.steps, st)
	}
	for _, vi := range g.Outputs {
		s, ok := slotOf[vi.Name]
		if !ok {
			return nil, fmt.Errorf("model: graph output %q is not produced by the graph", vi.Name)
		}
		spec, err := ioSpec(vi)
		if err != nil {
			return nil, fmt.Errorf("model: graph output %q: %w", vi.Name, err)
		}
		m.Outputs = append(m.Outputs, spec)
		m.outputSlot = append(m.outputSlot, s)
	}
	m.pruneConstants()
	m.planRelease()
	return m, nil
}

// folds reports whether a node is evaluated at load: a Constant, or a
// DequantizeLinear whose inputs are all constants.
func folds(op string, consts []*tensor.Tensor, out []int) bool {
	if len(out) != 1 || out[0] < 0 {
		return false
	}
	switch op {
	case "Constant":
		return true
	case "DequantizeLinear":
		for _, c := range consts {
			if c == nil {
				return false
			}
		}
		return len(consts) > 0
	}
	return false
}

// pruneConstants drops constants no step or output reads (weights the
// kernels hold packed, initializers consumed by folded nodes), so their
// memory can be freed.
func (m *Model) pruneConstants() {
	used := make([]bool, m.slots)
	for _, st := range m.steps {
		for _, s := range st.in {
			if s >= 0 {
				used[s] = true
			}
		}
	}
	for _, s := range m.outputSlot {
		used[s] = true
	}
	kept := m.constants[:0]
	for _, c := range m.constants {
		if used[c.slot] {
			kept = append(kept, c)
		}
	}
	clear(m.constants[len(kept):])
	m.constants = kept
}

// planRelease records, for each step, the slots no later step or graph
// output reads, so Run can drop intermediate tensors early.
func (m *Model) planRelease() {
	last := make([]int, m.slots)
	for i := range last {
		last[i] = -1
	}
	for i, st := range m.steps {
		for _, s := range st.in {
			if s >= 0 {
				last[s] = i
			}
		}
	}
	for _, s := range m.outputSlot {
		last[s] = len(m.steps)
	}
	for _, c := range m.constants {
		last[c.slot] = len(m.steps) // shared, never released
	}
	m.releaseAfter = make([][]int, len(m.steps))
	for s, i := range last {
		if i >= 0 && i < len(m.steps) {
			m.releaseAfter[i] = append(m.releaseAfter[i], s)
		}
	}
}

func ioSpec(vi *onnxpb.ValueInfo) (IOSpec, error) {
	spec := IOSpec{Name: vi.Name}
	if vi.Type == nil {
		return spec, fmt.Errorf("no type")
	}
	if vi.Type.Kind != onnxpb.TypeTensor {
		return spec, unsupportedf("%s values", vi.Type.Kind)
	}
	dt, err := DataTypeFromONNX(vi.Type.ElemType)
	if err != nil {
		return spec, err
	}
	spec.DType = dt
	if !vi.Type.HasShape {
		spec.Shape = nil // unknown rank
		return spec, nil
	}
	spec.Shape = make([]int, len(vi.Type.Shape))
	for i, d := range vi.Type.Shape {
		if d.HasValue && d.Value >= 0 && d.Value <= tensor.MaxElements {
			spec.Shape[i] = int(d.Value)
		} else {
			spec.Shape[i] = -1
		}
	}
	return spec, nil
}

// KnownRank reports whether the spec fixes the rank of its tensor.
func (s IOSpec) KnownRank() bool { return s.Shape != nil }

// Accepts reports whether shape fits the spec's rank and fixed dimensions,
// and if not, why.
func (s IOSpec) Accepts(shape []int) error {
	if s.Shape == nil {
		return nil
	}
	if len(shape) != len(s.Shape) {
		return fmt.Errorf("shape %s has rank %d, the model takes rank %d (%s)", tensor.ShapeString(shape), len(shape), len(s.Shape), tensor.ShapeString(s.Shape))
	}
	for i, d := range s.Shape {
		if d >= 0 && shape[i] != d {
			return fmt.Errorf("shape %s does not fit the model's %s (dimension %d must be %d)", tensor.ShapeString(shape), tensor.ShapeString(s.Shape), i, d)
		}
	}
	return nil
}

// Run executes the graph. inputs must name every graph input; outputs
// selects graph outputs by name (nil means all). ctx is checked between
// nodes. Errors caused by the inputs wrap ErrInput.
func (m *Model) Run(ctx context.Context, inputs map[string]*tensor.Tensor, outputs []string) (map[string]*tensor.Tensor, error) {
	want, err := m.wanted(outputs)
	if err != nil {
		return nil, err
	}
	vals, err := m.execute(ctx, inputs, want)
	if err != nil {
		return nil, err
	}
	res := make(map[string]*tensor.Tensor, len(want))
	for s, name := range want {
		if vals[s] == nil {
			return nil, fmt.Errorf("model: output %q was not computed", name)
		}
		res[name] = vals[s]
	}
	return res, nil
}

// Trace runs the graph keeping every value, for a backward pass: Values[s]
// is the value of slot s (nil for weights the kernels hold).
func (m *Model) Trace(ctx context.Context, inputs map[string]*tensor.Tensor) ([]*tensor.Tensor, error) {
	return m.execute(ctx, inputs, nil)
}

func (m *Model) wanted(outputs []string) (map[int]string, error) {
	want := map[int]string{}
	if outputs == nil {
		for i, spec := range m.Outputs {
			want[m.outputSlot[i]] = spec.Name
		}
		return want, nil
	}
	for _, name := range outputs {
		i := slices.IndexFunc(m.Outputs, func(s IOSpec) bool { return s.Name == name })
		if i < 0 {
			return nil, &InputError{Msg: fmt.Sprintf("requested output %q: the model has no such output (outputs: %s)", name, specNames(m.Outputs))}
		}
		want[m.outputSlot[i]] = name
	}
	return want, nil
}

// execute runs every step; with want nil it keeps every value, otherwise
// it drops intermediate values as soon as no later step reads them.
func (m *Model) execute(ctx context.Context, inputs map[string]*tensor.Tensor, want map[int]string) ([]*tensor.Tensor, error) {
	vals := make([]*tensor.Tensor, m.slots)
	for _, c := range m.constants {
		vals[c.slot] = c.t
	}
	for name := range inputs {
		if !slices.ContainsFunc(m.Inputs, func(s IOSpec) bool { return s.Name == name }) {
			return nil, &InputError{Name: name, Msg: fmt.Sprintf("the model has no such input (inputs: %s)", specNames(m.Inputs))}
		}
	}
	for i, spec := range m.Inputs {
		t, ok := inputs[spec.Name]
		if !ok {
			return nil, &InputError{Name: spec.Name, Msg: "missing: the model needs it"}
		}
		if t.DType != spec.DType {
			return nil, &InputError{Name: spec.Name, Msg: fmt.Sprintf("datatype %v, the model takes %v", t.DType, spec.DType)}
		}
		if err := spec.Accepts(t.Shape); err != nil {
			return nil, &InputError{Name: spec.Name, Msg: err.Error()}
		}
		vals[m.inputSlot[i]] = t
	}
	args := make([]*tensor.Tensor, 0, 8)
	for i, st := range m.steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		args = args[:0]
		for _, s := range st.in {
			if s < 0 {
				args = append(args, nil)
			} else {
				args = append(args, vals[s])
			}
		}
		outs, err := st.run(args)
		if err != nil {
			return nil, &NodeError{Node: st.name, Op: st.op, Opset: st.opset, Err: err}
		}
		for j, s := range st.out {
			if s >= 0 && j < len(outs) {
				vals[s] = outs[j]
			}
		}
		if want == nil {
			continue
		}
		for _, s := range m.releaseAfter[i] {
			if _, keep := want[s]; !keep {
				vals[s] = nil
			}
		}
	}
	return vals, nil
}

// Step describes one compiled node for a backward pass.
type Step struct {
	Name, Op string
	Opset    int64
	Attrs    Attrs
	In       []int // input slots as the graph names them; -1 when absent
	Out      []int
	// Linear is set for MatMul and Gemm whose weight (input 1) the
	// kernels hold; its slot in In has no value in a trace.
	Linear *Linear
}

// Steps returns the compiled nodes in execution order. Nodes folded at
// load (Constant, DequantizeLinear of constants) are not among them.
func (m *Model) Steps() []Step {
	out := make([]Step, len(m.steps))
	for i, st := range m.steps {
		out[i] = Step{Name: st.name, Op: st.op, Opset: st.opset, Attrs: st.attrs, In: st.args, Out: st.out}
		if st.lin != nil {
			out[i].Linear = &Linear{st.lin}
		}
	}
	return out
}

// Slot returns the value slot of a graph input, initializer or node output.
func (m *Model) Slot(name string) (int, bool) {
	s, ok := m.slotOf[name]
	return s, ok
}

// InputSlot returns the slot of graph input i; OutputSlot likewise.
func (m *Model) InputSlot(i int) int  { return m.inputSlot[i] }
func (m *Model) OutputSlot(i int) int { return m.outputSlot[i] }

// Linear is a product with a constant weight W (K×N) the kernels hold.
type Linear struct{ l *linear }

// K and N return W's shape.
func (l *Linear) K() int { return l.l.k }
func (l *Linear) N() int { return l.l.n }

// Quantized reports whether W runs on the int8 kernels.
func (l *Linear) Quantized() bool { return l.l.q != nil }

// BackwardInput returns dX = dY·Wᵀ for dY of m rows. For int8 weights it
// is the straight-through estimator: the gradient flows as if through the
// dequantized weights, and runs on the int8 kernels (dY scaled per output
// channel, then quantized per row).
func (l *Linear) BackwardInput(dy []float32, m int) ([]float32, error) {
	return l.l.backwardInput(dy, m)
}

func specNames(specs []IOSpec) string {
	s := ""
	for i, sp := range specs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", sp.Name)
	}
	return s
}
