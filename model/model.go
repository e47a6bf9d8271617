package model

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// MinOpset is the oldest ai.onnx opset quantserve loads. Descriptors say
// which opsets each operator implements, so a model of an old opset loads
// when every node is covered and is refused naming the first that is not.
const MinOpset = 1

// IOSpec describes a graph input or output. Dynamic dimensions are -1.
type IOSpec struct {
	Name  string
	DType tensor.DataType
	Shape []int
}

// Model is a loaded, compiled ONNX graph.
type Model struct {
	Inputs    []IOSpec
	Outputs   []IOSpec
	Opset     int64 // the ai.onnx opset the model imports
	IRVersion int64
	Producer  string
	Params    int64 // elements in initializers and Constant nodes
	Layers    []Layer
	Kernels   string // the kernel table products run on
	// Unfolded names the nodes fed by constants only that run at
	// inference anyway, because their output would exceed
	// Options.MaxFoldBytes.
	Unfolded []string
	opsets   map[string]int64
	graph
	split *splitTuner // nil: every run splits as the engine decides
	rows  *rowTuner   // nil: batches run whole

	// The graph as written, compiled on first use for gradients (builds
	// with the autodiff tag).
	unrewritten func() (*Model, error)
	twinOnce    sync.Once
	twin        *Model
	twinErr     error
}

// graph is a compiled ONNX graph: a model's main graph, or the body of a
// control-flow node (If, Loop, Scan), which reads values of the graphs
// around it through captures.
type graph struct {
	slotOf       map[string]int
	steps        []step
	slots        int
	inputSlot    []int // parallel to the graph's inputs
	outputSlot   []int // parallel to the graph's outputs
	constants    []constSlot
	captures     []capture    // values of enclosing graphs this graph reads
	releaseAfter [][]int      // slots that die after step i
	recycleAfter [][]int      // of those, and of values never read, the ones the arena may reuse (plan.go)
	arenas       sync.Pool    // *ops.Arena, one per run
	exec         *gemm.Engine // the engine its operators run on
}

// capture binds a value of the enclosing graph (outer slot) to a slot of
// a subgraph (inner).
type capture struct{ outer, inner int }

type constSlot struct {
	slot int
	t    *tensor.Tensor
}

// step runs one node: reads slots in, writes slots out.
type step struct {
	name   string
	desc   *Descriptor
	opset  int64
	op     ops.Operator
	in     []int // -1 for an absent optional input, or one the op holds itself
	out    []int
	params any   // the parsed attribute struct
	args   []int // the node's input slots as the graph names them
}

// Load decodes and compiles an ONNX model to run in float32 on the
// default kernels.
func Load(data []byte) (*Model, error) { return LoadWith(data, Options{}) }

// LoadWith decodes and compiles an ONNX model with the given options.
func LoadWith(data []byte, opts Options) (*Model, error) {
	return LoadContext(context.Background(), data, opts)
}

// LoadContext is LoadWith under ctx: compiling stops with ctx's error
// once it is cancelled or past its deadline, between nodes and inside the
// operators that fold constants at load.
func LoadContext(ctx context.Context, data []byte, opts Options) (*Model, error) {
	if opts.Exec == nil {
		opts.Exec = gemm.Default()
	}
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil {
		return nil, fmt.Errorf("model: decoding ONNX: %w", err)
	}
	return compile(ctx, pb, opts, nil)
}

// Compile compiles a decoded model; initializers named in overrides take
// those values instead of the file's (a trainer's current weights).
func Compile(pb *onnxpb.Model, opts Options, overrides map[string]*tensor.Tensor) (*Model, error) {
	if opts.Exec == nil {
		opts.Exec = gemm.Default()
	}
	return compile(context.Background(), pb, opts, overrides)
}

func compile(ctx context.Context, pb *onnxpb.Model, opts Options, overrides map[string]*tensor.Tensor) (*Model, error) {
	if pb.Graph == nil {
		return nil, fmt.Errorf("model: the file has no graph")
	}
	if pb.NumFunctions > 0 {
		return nil, unsupportedf("model-local functions")
	}
	m := &Model{IRVersion: pb.IRVersion, Producer: pb.ProducerName, Kernels: opts.Exec.Table().String(), opsets: map[string]int64{}}
	for _, op := range pb.OpsetImport {
		m.opsets[normDomain(op.Domain)] = op.Version
	}
	m.Opset = m.opsets[""]
	if m.Opset == 0 && len(pb.OpsetImport) == 0 && pb.IRVersion > 0 && pb.IRVersion < 3 {
		m.Opset = 1
		m.opsets[""] = 1
	}
	if _, ok := m.opsets[""]; !ok && len(m.opsets) > 0 {
		// Only other domains (ai.onnx.ml, ...): an ai.onnx node, if any,
		// is refused for its domain.
	} else if m.Opset < MinOpset {
		return nil, unsupportedf("ai.onnx opset %d (quantserve loads opset %d and later)", m.Opset, MinOpset)
	}
	if _, ok := m.opsets[rewriteDomain]; ok {
		// Its operators trust what the rewrites give them (layouts,
		// buffers they may recycle); a file cannot ask for them.
		return nil, unsupportedf("operator domain %q (quantserve's own, for the graphs its rewrites produce)", rewriteDomain)
	}
	g := pb.Graph
	if !opts.Unrewritten && len(rewrites) > 0 && len(overrides) == 0 {
		g = cloneGraph(pb.Graph)
		if applyRewrites(g, m.opsets, &opts) && dispatch.AutodiffBuilt {
			twin := opts
			twin.Unrewritten = true
			m.unrewritten = func() (*Model, error) { return compile(context.Background(), pb, twin, overrides) }
		}
	}
	if err := opts.planQuantization(pb.Graph, g); err != nil {
		return nil, err
	}
	c := &compiler{ctx: ctx, m: m, opts: &opts, g: &m.graph, overrides: overrides}
	if err := c.compileGraph(g, true); err != nil {
		return nil, err
	}
	if !opts.AlwaysSplit {
		m.split = newSplitTuner(opts.Exec, len(m.steps))
	}
	if !opts.WholeBatches && (opts.Exec.Threads() == 1 || weightBytes(m.Layers) <= partsMaxWeights) {
		m.rows = newRowTuner()
	}
	return m, nil
}

// cloneGraph copies the parts of g rewrites change: its node and
// initializer lists (nodes are replaced, never edited in place).
func cloneGraph(g *onnxpb.Graph) *onnxpb.Graph {
	c := *g
	c.Nodes = slices.Clone(g.Nodes)
	c.Initializers = slices.Clone(g.Initializers)
	return &c
}

// Unrewritten returns the model compiled as its file writes it, for
// gradients: m itself when no rewrite applied or when it was compiled so
// (builds without the autodiff tag always return m). The twin compiles on
// first use and is kept.
func (m *Model) Unrewritten() (*Model, error) {
	if m.unrewritten == nil {
		return m, nil
	}
	m.twinOnce.Do(func() { m.twin, m.twinErr = m.unrewritten() })
	return m.twin, m.twinErr
}

// compiler compiles one graph; subgraphs get a compiler whose parent is the
// enclosing graph's.
type compiler struct {
	ctx       context.Context // the load's: compiling stops when it ends
	m         *Model
	opts      *Options
	parent    *compiler
	g         *graph
	known     map[int]*tensor.Tensor // values known at load, by slot
	qdqOf     map[int]*ops.QDQWeight
	overrides map[string]*tensor.Tensor
}

func (c *compiler) newSlot(name string) int {
	s := c.g.slots
	c.g.slots++
	if name != "" {
		c.g.slotOf[name] = s
	}
	return s
}

// addConst records a value known at load in a new slot.
func (c *compiler) addConst(name string, t *tensor.Tensor) int {
	s := c.newSlot(name)
	c.g.constants = append(c.g.constants, constSlot{s, t})
	c.known[s] = t
	return s
}

// resolve returns the slot of a value by name: this graph's own, or an
// enclosing graph's, which is captured (or, when it is known at load,
// copied in as a constant).
func (c *compiler) resolve(name string) (int, bool) {
	if s, ok := c.g.slotOf[name]; ok {
		return s, true
	}
	if c.parent == nil {
		return 0, false
	}
	outer, ok := c.parent.resolve(name)
	if !ok {
		return 0, false
	}
	if t := c.parent.known[outer]; t != nil {
		s := c.addConst(name, t)
		if q := c.parent.qdqOf[outer]; q != nil {
			c.qdqOf[s] = q
		}
		return s, true
	}
	s := c.newSlot(name)
	c.g.captures = append(c.g.captures, capture{outer: outer, inner: s})
	return s, true
}

// compileGraph compiles g into c.g. The main graph's inputs and outputs
// become the model's Inputs and Outputs.
func (c *compiler) compileGraph(g *onnxpb.Graph, main bool) error {
	c.g.exec = c.opts.Exec
	c.g.slotOf = map[string]int{}
	c.known = map[int]*tensor.Tensor{}
	c.qdqOf = map[int]*ops.QDQWeight{}
	if g.NumSparseInit > 0 {
		return unsupportedf("sparse initializers")
	}
	inits := map[string]bool{}
	for _, p := range g.Initializers {
		t, ok := c.overrides[p.Name]
		if !ok || !main {
			var err error
			if t, err = TensorFromONNX(p); err != nil {
				return fmt.Errorf("initializer %q: %w", p.Name, err)
			}
		}
		inits[p.Name] = true
		c.m.Params += int64(t.Len())
		c.addConst(p.Name, t)
	}
	for _, vi := range g.Inputs {
		if inits[vi.Name] {
			continue // an initializer listed as input (IR < 4): a constant here
		}
		if main {
			spec, err := ioSpec(vi)
			if err != nil {
				return fmt.Errorf("model: graph input %q: %w", vi.Name, err)
			}
			c.m.Inputs = append(c.m.Inputs, spec)
		}
		c.g.inputSlot = append(c.g.inputSlot, c.newSlot(vi.Name))
	}
	for i, n := range g.Nodes {
		if err := c.compileNode(n, i); err != nil {
			return err
		}
	}
	for _, vi := range g.Outputs {
		s, ok := c.resolve(vi.Name)
		if !ok {
			return fmt.Errorf("model: graph output %q is not produced by the graph", vi.Name)
		}
		if main {
			spec, err := ioSpec(vi)
			if err != nil {
				return fmt.Errorf("model: graph output %q: %w", vi.Name, err)
			}
			c.m.Outputs = append(c.m.Outputs, spec)
		}
		c.g.outputSlot = append(c.g.outputSlot, s)
	}
	c.g.pruneConstants()
	c.g.planRelease()
	c.g.planRecycle()
	return nil
}

func (c *compiler) compileNode(pn *onnxpb.Node, i int) error {
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("model: loading stopped at node %d: %w", i, err)
	}
	name := pn.Name
	if name == "" {
		name = fmt.Sprintf("#%d", i)
	}
	domain := normDomain(pn.Domain)
	opset, imported := c.m.opsets[domain]
	wrap := func(err error) error { return &NodeError{Node: name, Op: pn.OpType, Opset: opset, Err: err} }
	if !imported {
		return wrap(unsupportedf("operator domain %q (the model imports no opset for it)", pn.Domain))
	}
	desc, err := lookup(domain, pn.OpType, opset)
	if err != nil {
		return wrap(err)
	}
	n := &node{pb: pn, name: name, opset: opset, attrs: Attrs{}, opts: c.opts, model: c.m, c: c}
	for _, a := range pn.Attributes {
		if a.RefAttrName != "" {
			return wrap(unsupportedf("attribute %q refers to a function attribute", a.Name))
		}
		n.attrs[a.Name] = a
	}
	st := step{name: name, desc: desc, opset: opset}
	for _, in := range pn.Inputs {
		if in == "" {
			st.in = append(st.in, -1)
			n.consts = append(n.consts, nil)
			n.qdq = append(n.qdq, nil)
			continue
		}
		s, ok := c.resolve(in)
		if !ok {
			return wrap(fmt.Errorf("input %q is not produced by any earlier node, initializer or graph input", in))
		}
		st.in = append(st.in, s)
		n.consts = append(n.consts, c.known[s])
		n.qdq = append(n.qdq, c.qdqOf[s])
	}
	n.unused = make([]bool, len(st.in))
	if st.params, st.op, err = compileNodeWith(desc, n); err != nil {
		return wrap(err)
	}
	dropGraphs(st.params)
	st.args = slices.Clone(st.in)
	for i, unused := range n.unused {
		if unused {
			st.in[i] = -1
		}
	}
	st.in = append(st.in, n.extraIn...) // values the node's subgraphs capture
	if desc.Fold && len(n.extraIn) == 0 && allKnown(n.consts) {
		switch err := c.fold(pn, n, &st); err {
		case nil:
			return nil
		case errNotFolded: // compiled as a runtime node below
		default:
			return wrap(err)
		}
	}
	for _, out := range pn.Outputs {
		if out == "" {
			st.out = append(st.out, -1)
			continue
		}
		st.out = append(st.out, c.newSlot(out))
	}
	c.g.steps = append(c.g.steps, st)
	return nil
}

// errNotFolded reports a node left to run at inference: its output
// would exceed the fold cap.
var errNotFolded = errors.New("not folded")

// fold evaluates a deterministic node fed by constants only once, at
// load and under the load's context, so later nodes see a load-time
// constant (and, for QDQ weights, the int8 values behind it). A node
// whose output would exceed Options.MaxFoldBytes is not folded
// (errNotFolded).
func (c *compiler) fold(pn *onnxpb.Node, n *node, st *step) error {
	limit := c.opts.foldCap()
	meter := ops.NewMeter(&foldBudget{limit: limit})
	defer meter.Close()
	outs, err := st.op.Run(ops.NewContext(c.ctx, c.opts.Exec, false).Metered(meter), n.consts)
	if errors.Is(err, errFoldTooLarge) {
		c.m.Unfolded = append(c.m.Unfolded, n.name)
		return errNotFolded
	}
	if err != nil {
		return err
	}
	if outputBytes(outs) > limit && pn.OpType != "Constant" { // a Constant's value is the file's
		c.m.Unfolded = append(c.m.Unfolded, n.name)
		return errNotFolded
	}
	for j, out := range pn.Outputs {
		if out == "" || j >= len(outs) || outs[j] == nil {
			continue
		}
		s := c.addConst(out, outs[j])
		if len(pn.Inputs) == 0 {
			c.m.Params += int64(outs[j].Len()) // a Constant node: part of the model's weights
		}
		if src, ok := st.op.(ops.QDQSource); ok && j == 0 {
			if q := src.QDQWeight(); q != nil {
				c.qdqOf[s] = q
			}
		}
	}
	return nil
}

func allKnown(ts []*tensor.Tensor) bool {
	for _, t := range ts {
		if t == nil {
			return false
		}
	}
	return true
}

// pruneConstants drops constants no step or output reads (weights the
// kernels hold packed, initializers consumed by folded nodes), so their
// memory can be freed.
func (g *graph) pruneConstants() {
	used := make([]bool, g.slots)
	for _, st := range g.steps {
		for _, s := range st.in {
			if s >= 0 {
				used[s] = true
			}
		}
	}
	for _, s := range g.outputSlot {
		used[s] = true
	}
	kept := g.constants[:0]
	for _, c := range g.constants {
		if used[c.slot] {
			kept = append(kept, c)
		}
	}
	clear(g.constants[len(kept):])
	g.constants = kept
}

// planRelease records, for each step, the slots no later step or graph
// output reads, so a run can drop intermediate tensors early.
func (g *graph) planRelease() {
	last := make([]int, g.slots)
	for i := range last {
		last[i] = -1
	}
	for i, st := range g.steps {
		for _, s := range st.in {
			if s >= 0 {
				last[s] = i
			}
		}
	}
	for _, s := range g.outputSlot {
		last[s] = len(g.steps)
	}
	for _, c := range g.constants {
		last[c.slot] = len(g.steps) // shared, never released
	}
	g.releaseAfter = make([][]int, len(g.steps))
	for s, i := range last {
		if i >= 0 && i < len(g.steps) {
			g.releaseAfter[i] = append(g.releaseAfter[i], s)
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
	args, err := m.args(inputs)
	if err != nil {
		return nil, err
	}
	var vals []*tensor.Tensor
	if rows := m.batchRows(args, want); rows > 1 && m.rows != nil && !m.rows.off.Load() && profileOf(ctx) == nil {
		vals, err = m.executeBatch(ctx, args, want, rows)
	} else {
		vals, err = m.executeSplit(ctx, args, func(s int) bool { _, ok := want[s]; return ok })
	}
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
	args, err := m.args(inputs)
	if err != nil {
		return nil, err
	}
	return m.executeSplit(ctx, args, nil)
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

// args checks the inputs and returns them in the order of m.Inputs.
func (m *Model) args(inputs map[string]*tensor.Tensor) ([]*tensor.Tensor, error) {
	for name := range inputs {
		if !slices.ContainsFunc(m.Inputs, func(s IOSpec) bool { return s.Name == name }) {
			return nil, &InputError{Name: name, Msg: fmt.Sprintf("the model has no such input (inputs: %s)", specNames(m.Inputs))}
		}
	}
	args := make([]*tensor.Tensor, len(m.Inputs))
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
		args[i] = t
	}
	return args, nil
}

// execute runs the graph's steps on its inputs (parallel to inputSlot)
// and captured values (parallel to captures) and returns every slot's
// value. With keep nil every value is kept; otherwise intermediate values
// are dropped once no later step reads them, unless keep says otherwise.
func (g *graph) execute(ctx context.Context, inputs, captured []*tensor.Tensor, keep func(slot int) bool) ([]*tensor.Tensor, error) {
	if keep == nil {
		ctx = context.WithValue(ctx, keepValuesKey{}, true)
	}
	vals := make([]*tensor.Tensor, g.slots)
	for _, c := range g.constants {
		vals[c.slot] = c.t
	}
	for i, s := range g.inputSlot {
		if i < len(inputs) {
			vals[s] = inputs[i]
		}
	}
	for i, c := range g.captures {
		vals[c.inner] = captured[i]
	}
	// The run charges the values its nodes make to the context's budget
	// (WithBudget), each until no later node reads it, and gives the rest
	// back when it returns: its caller holds the values it keeps.
	meter := ops.NewMeter(ops.BudgetOf(ctx))
	defer meter.Close()
	var held []int64 // per slot, the bytes meter holds for its value
	if meter != nil {
		held = make([]int64, g.slots)
	}
	// A profiled run times its steps and probes its engine; a subgraph's
	// steps count in their control-flow node's time.
	exec := g.engineOf(ctx)
	var prof *stepProbe
	if p := profileOf(ctx); p != nil {
		prof = newStepProbe(p, len(g.steps))
		defer prof.flush(g.steps)
		exec = exec.Probed(&prof.probe)
		ctx = context.WithValue(ctx, profileKey{}, (*Profile)(nil))
	}
	// A subgraph run within a run that keeps every value must not recycle
	// the values it reads either.
	arena := g.arena(ctx, keep) // nil when the run keeps every value
	defer g.endArena(arena)
	oc := ops.NewContext(ctx, exec, keep == nil || valuesKept(ctx)).Metered(meter).WithArena(arena)
	plan, one := planFor(ctx, g), oc // a tuned run's steps on one core take one
	if plan != nil {
		one = oc.OnEngine(exec.Serial())
	}
	args := make([]*tensor.Tensor, 0, 8)
	for i, st := range g.steps {
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
		c, t0 := oc, time.Duration(0)
		if plan != nil && plan.one[i] {
			c = one
		}
		if prof != nil && prof.labels {
			prof.label(ctx, st.name, st.desc.Type)
		}
		timed := prof != nil || plan != nil && plan.took != nil
		if timed {
			t0 = gemm.Clock()
		}
		outs, err := st.op.Run(c, args)
		var took time.Duration
		if timed {
			took = gemm.Clock() - t0
		}
		if plan != nil && plan.took != nil {
			plan.took[i] = took
		}
		if prof != nil {
			prof.took(i, took)
			if prof.labels {
				pprof.SetGoroutineLabels(ctx)
			}
		}
		var made int64 // fresh bytes of the outputs the graph keeps
		if err == nil && meter != nil {
			for j, s := range st.out {
				if s >= 0 && j < len(outs) {
					held[s] = freshBytes(outs, j, args)
					made += held[s]
				}
			}
		}
		if serr := meter.Settle(made); err == nil {
			err = serr
		}
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, err
			}
			return nil, &NodeError{Node: st.name, Op: st.desc.Type, Opset: st.opset, Err: err}
		}
		for j, s := range st.out {
			if s >= 0 && j < len(outs) {
				vals[s] = outs[j]
				arena.Hold(outs[j])
			}
		}
		if keep == nil {
			continue
		}
		if arena != nil {
			g.recycle(arena, i, vals, keep)
		}
		for _, s := range g.releaseAfter[i] {
			if !keep(s) {
				vals[s] = nil
				if held != nil {
					meter.Release(held[s])
					held[s] = 0
				}
			}
		}
	}
	if arena.Singles() > 0 {
		g.detach(vals, keep)
	}
	return vals, nil
}

// keepValuesKey marks a context whose graph keeps every value (a trace).
type keepValuesKey struct{}

// valuesKept reports whether ctx runs a graph that keeps every value:
// operators must then not recycle the memory of the values they read.
func valuesKept(ctx context.Context) bool {
	kept, _ := ctx.Value(keepValuesKey{}).(bool)
	return kept
}

// run executes the graph as a subgraph: inputs bound in order, captured
// values from the enclosing graph, and returns the graph's outputs.
func (g *graph) run(ctx context.Context, inputs, captured []*tensor.Tensor) ([]*tensor.Tensor, error) {
	outSet := map[int]bool{}
	for _, s := range g.outputSlot {
		outSet[s] = true
	}
	vals, err := g.execute(ctx, inputs, captured, func(s int) bool { return outSet[s] })
	if err != nil {
		return nil, err
	}
	outs := make([]*tensor.Tensor, len(g.outputSlot))
	for i, s := range g.outputSlot {
		if outs[i] = vals[s]; outs[i] == nil {
			return nil, fmt.Errorf("model: subgraph output %d was not computed", i)
		}
	}
	return outs, nil
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
