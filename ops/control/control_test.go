package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// body is a graph attribute whose compiled form is a Go function, standing
// in for a graph the compiler would compile.
type body struct {
	pb      *onnxpb.Graph
	in, out []string
	f       func(c *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error)
	calls   int
	kept    []bool // c.KeepValues() of each call
}

// newBody returns a body with the named inputs and outputs; types, when
// given, are the element types the graph declares for its outputs.
func newBody(in, out []string, types []onnxpb.DataType, f func(c *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error)) *body {
	b := &body{pb: &onnxpb.Graph{Name: "body"}, in: in, out: out, f: f}
	for i, name := range out {
		vi := &onnxpb.ValueInfo{Name: name}
		if i < len(types) {
			vi.Type = &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: types[i]}
		}
		b.pb.Outputs = append(b.pb.Outputs, vi)
	}
	return b
}

func (b *body) Inputs() []string  { return b.in }
func (b *body) Outputs() []string { return b.out }

func (b *body) Run(c *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	b.calls++
	b.kept = append(b.kept, c.KeepValues())
	return b.f(c, in, inputs)
}

// node is op at opset with outputs outputs, its graph attributes (name,
// body pairs) compiled to their bodies.
func node(op string, opset int64, outputs int, attrs []*onnxpb.Attribute, graphs ...any) opstest.Node {
	bodies := map[*onnxpb.Graph]*body{}
	for i := 0; i < len(graphs); i += 2 {
		b := graphs[i+1].(*body)
		bodies[b.pb] = b
		attrs = append(attrs, &onnxpb.Attribute{Name: graphs[i].(string), Type: onnxpb.AttrGraph, G: b.pb})
	}
	return opstest.Node{Op: op, Opset: opset, Outputs: outputs, Attrs: attrs,
		Subgraph: func(g *onnxpb.Graph) (ops.Graph, error) {
			b, ok := bodies[g]
			if !ok {
				return nil, fmt.Errorf("graph %q is not compiled", g.Name)
			}
			return b, nil
		}}
}

// run compiles n for inputs inputs and runs it under c on in (the node's
// inputs, then the values its graphs capture).
func run(c *ops.Context, n opstest.Node, inputs int, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	op, _, err := opstest.Compile(n, inputs)
	if err != nil {
		return nil, err
	}
	return op.Run(c, in)
}

func background(keep bool) *ops.Context { return ops.NewContext(context.Background(), nil, keep) }

// add returns x + y elementwise (same shapes).
func add(x, y *tensor.Tensor) *tensor.Tensor {
	a, b := x.Data.([]float32), y.Data.([]float32)
	out := make([]float32, len(a))
	for i := range a {
		out[i] = a[i] + b[i%len(b)]
	}
	return tensor.From(slices.Clone(x.Shape), out)
}

// TestDescriptors pins each operator's opset ranges: none folds (their
// bodies may read values computed per request).
func TestDescriptors(t *testing.T) {
	for op, want := range map[string][][2]int64{
		"If": {{1, 0}}, "Loop": {{1, 0}}, "Scan": {{8, 8}, {9, 0}},
	} {
		ds := ops.Descriptors("", op)
		var got [][2]int64
		for _, d := range ds {
			got = append(got, [2]int64{d.Since, d.Until})
			if d.Fold || d.Refused {
				t.Errorf("%v folds or is refused", d)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: opset ranges %v, want %v", op, got, want)
		}
	}
}

func TestIf(t *testing.T) {
	// then gives the value the node captures (after its own input), else a
	// constant.
	then := newBody(nil, []string{"t"}, nil, func(_ *ops.Context, in, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{in[1]}, nil
	})
	els := newBody(nil, []string{"e"}, nil, func(*ops.Context, []*tensor.Tensor, []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{opstest.F32s(nil, 7)}, nil
	})
	n := node("If", 16, 1, nil, "then_branch", then, "else_branch", els)
	captured := opstest.F32s([]int{2}, 1, 2)
	for _, c := range []struct {
		cond bool
		keep bool
		want *tensor.Tensor
	}{{true, false, captured}, {false, true, opstest.F32s(nil, 7)}, {true, true, captured}} {
		out, err := run(background(c.keep), n, 1, tensor.Scalar(c.cond), captured)
		if err != nil {
			t.Fatal(err)
		}
		opstest.Check(t, fmt.Sprintf("If(%v)", c.cond), out[0], c.want.Shape, c.want.Data)
	}
	if !slices.Equal(then.kept, []bool{false, true}) || !slices.Equal(els.kept, []bool{true}) {
		t.Errorf("branches kept values %v and %v, want the run's [false true] and [true]", then.kept, els.kept)
	}
	for _, bad := range []*tensor.Tensor{tensor.From([]int{2}, []bool{true, false}), tensor.Scalar(int64(1))} {
		_, err := run(background(false), n, 1, bad, captured)
		want := fmt.Sprintf("If takes a BOOL condition with one element, got %v%s", bad.DType, tensor.ShapeString(bad.Shape))
		if !errors.Is(err, ops.ErrInput) || err.Error() != ops.InputErrorf("%s", want).Error() {
			t.Errorf("condition %v%v: %v", bad.DType, bad.Shape, err)
		}
	}
	// Compile errors.
	two := newBody(nil, []string{"a", "b"}, nil, nil)
	for _, c := range []struct {
		n    opstest.Node
		want string
	}{
		{node("If", 16, 1, nil, "then_branch", then), "else_branch: missing graph attribute"},
		{node("If", 16, 1, nil, "else_branch", els), "then_branch: missing graph attribute"},
		{node("If", 16, 1, nil, "then_branch", then, "else_branch", two), "a branch has 2 outputs, the node 1"},
		{node("If", 16, 2, nil, "then_branch", two, "else_branch", els), "a branch has 1 outputs, the node 2"},
	} {
		if _, _, err := opstest.Compile(c.n, 1); err == nil || err.Error() != c.want {
			t.Errorf("compile: %v, want %q", err, c.want)
		}
	}
	if _, _, err := opstest.Compile(node("If", 16, 1, nil, "then_branch", then, "else_branch", els), 2); err == nil {
		t.Error("If with two inputs compiled")
	}
	// Without a graph compiler graph attributes are refused.
	n.Subgraph = nil
	if _, _, err := opstest.Compile(n, 1); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("no compiler: %v, want unsupported", err)
	}
}

// loopBody is Loop's body { acc2 = acc + step; scan = acc2 · i; cond2 =
// cond } with step the value the node captures after its three inputs.
func loopBody() *body {
	return newBody([]string{"i", "cond", "acc"}, []string{"cond2", "acc2", "scan"},
		[]onnxpb.DataType{onnxpb.Bool, onnxpb.Float, onnxpb.Double},
		func(_ *ops.Context, in, args []*tensor.Tensor) ([]*tensor.Tensor, error) {
			i := args[0].Data.([]int64)[0]
			acc := add(args[2], in[3])
			scan := make([]float64, acc.Len())
			for j, v := range acc.Data.([]float32) {
				scan[j] = float64(v) * float64(i)
			}
			return []*tensor.Tensor{args[1], acc, tensor.From(slices.Clone(acc.Shape), scan)}, nil
		})
}

func TestLoop(t *testing.T) {
	b := loopBody()
	n := node("Loop", 16, 2, nil, "body", b)
	x, step := opstest.F32s([]int{2}, 1, 10), opstest.F32s(nil, 4)
	out, err := run(background(true), n, 3, tensor.Scalar(int64(3)), tensor.Scalar(true), x, step)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "y", out[0], []int{2}, []float32{13, 22})
	opstest.Check(t, "ys", out[1], []int{3, 2}, []float64{0, 0, 9, 18, 26, 44})
	if !slices.Equal(b.kept, []bool{true, true, true}) {
		t.Errorf("the body kept values %v, want the run's", b.kept)
	}
	// No iteration: the carried value passes through and the scan output
	// is empty, of the type the body declares.
	for _, c := range []struct {
		trips *tensor.Tensor
		cond  bool
	}{{tensor.Scalar(int64(3)), false}, {tensor.Scalar(int64(0)), true}, {tensor.Scalar(int64(-5)), true}} {
		out, err := run(background(false), n, 3, c.trips, tensor.Scalar(c.cond), x, step)
		if err != nil {
			t.Fatal(err)
		}
		opstest.Check(t, "y", out[0], []int{2}, []float32{1, 10})
		if out[1].DType != tensor.Float64 || !slices.Equal(out[1].Shape, []int{0}) {
			t.Errorf("no iterations: ys = %v%v", out[1].DType, out[1].Shape)
		}
	}
	// No trip count: the body's condition ends the loop; only the carried
	// value is asked for.
	stop := newBody([]string{"i", "cond", "acc"}, []string{"cond2", "acc2"}, nil,
		func(_ *ops.Context, _, args []*tensor.Tensor) ([]*tensor.Tensor, error) {
			return []*tensor.Tensor{tensor.Scalar(args[0].Data.([]int64)[0] < 4), add(args[2], opstest.F32s(nil, 1))}, nil
		})
	out, err = run(background(false), node("Loop", 16, 1, nil, "body", stop), 3, nil, nil, x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "y", out[0], []int{2}, []float32{6, 15})
	// The loop checks the request's context on every iteration.
	ctx, cancel := context.WithCancel(context.Background())
	endless := newBody([]string{"i", "cond", "acc"}, []string{"cond2", "acc2"}, nil,
		func(_ *ops.Context, _, args []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if args[0].Data.([]int64)[0] == 2 {
				cancel()
			}
			return []*tensor.Tensor{args[1], args[2]}, nil
		})
	_, err = run(ops.NewContext(ctx, nil, false), node("Loop", 16, 1, nil, "body", endless), 3, tensor.Scalar(int64(1<<62)), nil, x)
	if !errors.Is(err, context.Canceled) || endless.calls != 3 {
		t.Errorf("cancelled in iteration 2: %v after %d iterations, want the context's error after 3", err, endless.calls)
	}
	// Input errors.
	notBool := newBody([]string{"i", "cond", "acc"}, []string{"cond2", "acc2"}, nil,
		func(_ *ops.Context, _, args []*tensor.Tensor) ([]*tensor.Tensor, error) {
			return []*tensor.Tensor{args[0], args[2]}, nil
		})
	for _, c := range []struct {
		n         opstest.Node
		in        []*tensor.Tensor
		wantError string
	}{
		{n, []*tensor.Tensor{tensor.From([]int{2}, []int64{1, 2}), nil, x, step}, "Loop's trip count must be one INT64, got INT64[2]"},
		{n, []*tensor.Tensor{tensor.Scalar(int32(2)), nil, x, step}, "Loop's trip count must be one INT64, got INT32[]"},
		{n, []*tensor.Tensor{nil, tensor.Scalar(int64(1)), x, step}, "Loop's condition must be one BOOL, got INT64[]"},
		{node("Loop", 16, 1, nil, "body", notBool), []*tensor.Tensor{tensor.Scalar(int64(2)), nil, x}, "the Loop body's condition must be one BOOL, got INT64[]"},
	} {
		_, err := run(background(false), c.n, 3, c.in...)
		if !errors.Is(err, ops.ErrInput) || err.Error() != ops.InputErrorf("%s", c.wantError).Error() {
			t.Errorf("%v, want %q", err, c.wantError)
		}
	}
	// Compile errors.
	for _, c := range []struct {
		n      opstest.Node
		inputs int
		want   string
	}{
		{node("Loop", 16, 1, nil), 3, "body: missing graph attribute"},
		{n, 4, "the body takes 3 inputs, want 2 + 2 carried values"},
		{node("Loop", 16, 1, nil, "body", newBody([]string{"i", "c"}, []string{"c2"}, nil, nil)), 3, "the body takes 2 inputs, want 2 + 1 carried values"},
		{node("Loop", 16, 1, nil, "body", newBody([]string{"i", "c", "a"}, []string{"c2"}, nil, nil)), 3, "the body has 1 outputs, want at least 1 + 1 carried values"},
		{node("Loop", 16, 3, nil, "body", loopBody()), 3, "the node has 3 outputs, the body gives 1 carried values and 1 scan outputs"},
		{n, 1, "has 1 inputs, takes 2 to 65536"},
	} {
		if _, _, err := opstest.Compile(c.n, c.inputs); err == nil || err.Error() != c.want {
			t.Errorf("compile: %v, want %q", err, c.want)
		}
	}
}

// sumBody is Scan's body { sum2 = sum + x; out = sum2 }.
func sumBody() *body {
	return newBody([]string{"sum", "x"}, []string{"sum2", "out"}, []onnxpb.DataType{onnxpb.Float, onnxpb.Int32},
		func(_ *ops.Context, _, args []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if !slices.Equal(args[0].Shape, args[1].Shape) {
				return nil, ops.InputErrorf("sum%v + x%v", args[0].Shape, args[1].Shape)
			}
			s := add(args[0], args[1])
			return []*tensor.Tensor{s, s}, nil
		})
}

func TestScan(t *testing.T) {
	// Scan over axis 1 of x [2,3], reversed, summing columns into a state
	// and emitting the running sums along output axis 1.
	ints := func(name string, v ...int64) *onnxpb.Attribute {
		return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
	}
	numScan := &onnxpb.Attribute{Name: "num_scan_inputs", Type: onnxpb.AttrInt, I: 1}
	b := sumBody()
	n := node("Scan", 16, 2, []*onnxpb.Attribute{numScan, ints("scan_input_axes", 1), ints("scan_input_directions", 1), ints("scan_output_axes", -1)}, "body", b)
	x := opstest.F32s([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	out, err := run(background(true), n, 2, opstest.F32s([]int{2}, 0, 100), x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "final", out[0], []int{2}, []float32{6, 115})
	opstest.Check(t, "sums", out[1], []int{2, 3}, []float32{3, 5, 6, 106, 111, 115})
	if !slices.Equal(b.kept, []bool{true, true, true}) {
		t.Errorf("the body kept values %v, want the run's", b.kept)
	}
	// Forward along axis 0, stacked on axis 0 in reverse.
	n0 := node("Scan", 16, 2, []*onnxpb.Attribute{numScan, ints("scan_output_directions", 1)}, "body", sumBody())
	out, err = run(background(false), n0, 2, opstest.F32s([]int{3}, 0, 0, 0), x)
	if err != nil {
		t.Fatal(err)
	}
	opstest.Check(t, "final", out[0], []int{3}, []float32{5, 7, 9})
	opstest.Check(t, "sums", out[1], []int{2, 3}, []float32{5, 7, 9, 1, 2, 3})
	// No steps: the empty scan output has the type the body declares.
	out, err = run(background(false), n0, 2, opstest.F32s([]int{3}, 1, 2, 3), tensor.From([]int{0, 3}, []float32{}))
	if err != nil {
		t.Fatal(err)
	}
	if out[1].DType != tensor.Int32 || !slices.Equal(out[1].Shape, []int{0}) {
		t.Errorf("no steps: sums = %v%v", out[1].DType, out[1].Shape)
	}
	// The body's errors are the scan's.
	if _, err := run(background(false), n, 2, opstest.F32s([]int{3}, 0, 0, 0), x); err == nil || err.Error() != ops.InputErrorf("sum[3] + x[2]").Error() {
		t.Errorf("a state of the wrong shape: %v, want the body's input error", err)
	}
	// Scan inputs of different lengths.
	two := newBody([]string{"a", "b"}, []string{"o"}, nil, nil)
	n2 := node("Scan", 16, 1, []*onnxpb.Attribute{{Name: "num_scan_inputs", Type: onnxpb.AttrInt, I: 2}}, "body", two)
	_, err = run(background(false), n2, 2, opstest.F32s([]int{2}, 1, 2), opstest.F32s([]int{3}, 1, 2, 3))
	if want := ops.InputErrorf("Scan inputs have 2 and 3 steps along their scan axes"); err == nil || err.Error() != want.Error() {
		t.Errorf("steps differ: %v, want %v", err, want)
	}
	// The scan checks the request's context on every step.
	ctx, cancel := context.WithCancel(context.Background())
	stop := sumBody()
	f := stop.f
	stop.f = func(c *ops.Context, in, args []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if stop.calls == 2 {
			cancel()
		}
		return f(c, in, args)
	}
	_, err = run(ops.NewContext(ctx, nil, false), node("Scan", 16, 2, []*onnxpb.Attribute{numScan}, "body", stop), 2, opstest.F32s(nil, 0), opstest.F32s([]int{5}, 1, 2, 3, 4, 5))
	if !errors.Is(err, context.Canceled) || stop.calls != 2 {
		t.Errorf("cancelled in step 1: %v after %d steps, want the context's error after 2", err, stop.calls)
	}
	// Compile errors.
	for _, c := range []struct {
		n      opstest.Node
		inputs int
		want   string
	}{
		{node("Scan", 16, 2, []*onnxpb.Attribute{numScan}), 2, "body: missing graph attribute"},
		{node("Scan", 16, 2, []*onnxpb.Attribute{{Name: "num_scan_inputs", Type: onnxpb.AttrInt, I: 3}}, "body", sumBody()), 2, "num_scan_inputs 3 does not fit 2 inputs"},
		{node("Scan", 16, 2, []*onnxpb.Attribute{numScan}, "body", sumBody()), 3, "the body takes 2 inputs, want 2 states + 1 scan inputs"},
		{node("Scan", 16, 3, []*onnxpb.Attribute{numScan}, "body", sumBody()), 2, "the body's 2 outputs do not fit 1 states and the node's 3 outputs"},
		{node("Scan", 16, 2, []*onnxpb.Attribute{numScan, ints("scan_input_axes", 0, 1)}, "body", sumBody()), 2, "scan_input_axes has 2 entries, want 1"},
		{node("Scan", 16, 2, []*onnxpb.Attribute{numScan, ints("scan_output_directions")}, "body", sumBody()), 2, "scan_output_directions has 0 entries, want 1"},
	} {
		if _, _, err := opstest.Compile(c.n, c.inputs); err == nil || err.Error() != c.want {
			t.Errorf("compile: %v, want %q", err, c.want)
		}
	}
}

func TestScan8(t *testing.T) {
	numScan := &onnxpb.Attribute{Name: "num_scan_inputs", Type: onnxpb.AttrInt, I: 1}
	b := sumBody()
	n := node("Scan", 8, 2, []*onnxpb.Attribute{numScan, {Name: "directions", Type: onnxpb.AttrInts, Ints: []int64{1}}}, "body", b)
	// Two batch entries, each scanning 3 steps of x in reverse.
	init := opstest.F32s([]int{2, 1}, 0, 100)
	x := opstest.F32s([]int{2, 3, 1}, 1, 2, 3, 4, 5, 6)
	for _, lens := range []*tensor.Tensor{nil, tensor.From([]int{2}, []int64{3, 3})} {
		out, err := run(background(false), n, 3, lens, init, x)
		if err != nil {
			t.Fatal(err)
		}
		opstest.Check(t, "final", out[0], []int{2, 1}, []float32{6, 115})
		opstest.Check(t, "sums", out[1], []int{2, 3, 1}, []float32{3, 5, 6, 106, 111, 115})
	}
	for _, c := range []struct {
		in   []*tensor.Tensor
		want error
	}{
		{[]*tensor.Tensor{nil, opstest.F32s([]int{3, 1}, 0, 0, 0), x}, ops.ErrInput},
		{[]*tensor.Tensor{tensor.From([]int{1}, []int64{3}), init, x}, ops.ErrInput},
		{[]*tensor.Tensor{tensor.From([]int{2}, []int64{3, 2}), init, x}, ops.ErrUnsupported},
	} {
		if _, err := run(background(false), n, 3, c.in...); !errors.Is(err, c.want) {
			t.Errorf("Scan-8 on %v: %v, want %v", c.in, err, c.want)
		}
	}
	if _, _, err := opstest.Compile(n, 1); err == nil {
		t.Error("Scan-8 with one input compiled")
	}
}

// TestAbsentInputs checks which inputs of Loop and Scan-8 a node may
// leave out with an empty name: their leading optional ones (Loop's M
// and cond, Scan-8's sequence_lens), not the values after them.
func TestAbsentInputs(t *testing.T) {
	numScan := &onnxpb.Attribute{Name: "num_scan_inputs", Type: onnxpb.AttrInt, I: 1}
	loop := node("Loop", 16, 2, nil, "body", loopBody())
	scan := node("Scan", 8, 2, []*onnxpb.Attribute{numScan}, "body", sumBody())
	for _, c := range []struct {
		n      opstest.Node
		absent []int
		ok     bool
	}{
		{loop, []int{0}, true},
		{loop, []int{1}, true},
		{loop, []int{0, 1}, true},
		{loop, []int{2}, false},
		{scan, []int{0}, true},
		{scan, []int{1}, false},
		{scan, []int{2}, false},
	} {
		c.n.Absent = c.absent
		_, _, err := opstest.Compile(c.n, 3)
		if (err == nil) != c.ok {
			t.Errorf("%s-%d with inputs %v absent: error %v, want one: %v", c.n.Op, c.n.Opset, c.absent, err, !c.ok)
		}
	}
}

// TestIndexAndStack checks that stacking the slices indexAxis takes along
// an axis gives back the tensor, along every axis.
func TestIndexAndStack(t *testing.T) {
	shape := []int{2, 3, 4}
	data := make([]int32, 24)
	for i := range data {
		data[i] = int32(i)
	}
	x := tensor.From(shape, data)
	for axis := range shape {
		var parts []*tensor.Tensor
		for i := range shape[axis] {
			p := indexAxis(x, axis, i)
			want := slices.Concat(shape[:axis], shape[axis+1:])
			if !slices.Equal(p.Shape, want) {
				t.Fatalf("indexAxis(%d, %d) has shape %v, want %v", axis, i, p.Shape, want)
			}
			parts = append(parts, p)
		}
		s, err := stackTensors(parts, axis, tensor.Invalid)
		if err != nil {
			t.Fatal(err)
		}
		opstest.Check(t, fmt.Sprintf("stacked along %d", axis), s, shape, data)
	}
	for _, c := range []struct {
		dt, want tensor.DataType
	}{{tensor.Invalid, tensor.Float32}, {tensor.Int8, tensor.Int8}} {
		s, err := stackTensors(nil, 0, c.dt)
		if err != nil || s.DType != c.want || !slices.Equal(s.Shape, []int{0}) {
			t.Errorf("stacking nothing of %v: %v%v, %v", c.dt, s.DType, s.Shape, err)
		}
	}
	for _, parts := range [][]*tensor.Tensor{
		{opstest.F32s([]int{2}, 1, 2), opstest.F32s([]int{3}, 1, 2, 3)},
		{opstest.F32s([]int{1}, 1), tensor.From([]int{1}, []int32{1})},
	} {
		if _, err := stackTensors(parts, 0, tensor.Invalid); !errors.Is(err, ops.ErrInput) {
			t.Errorf("stacking %v: %v, want an input error", parts, err)
		}
	}
	if _, err := stackTensors([]*tensor.Tensor{opstest.F32s([]int{1}, 1)}, 2, tensor.Invalid); !errors.Is(err, ops.ErrInput) {
		t.Errorf("stacking along axis 2 of rank 1: %v", err)
	}
}
