package model

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func tensorType(dt onnxpb.DataType) *onnxpb.Type {
	return &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: dt}
}

func vi(name string, dt onnxpb.DataType) *onnxpb.ValueInfo {
	return &onnxpb.ValueInfo{Name: name, Type: tensorType(dt)}
}

// loopModel: y, ys = Loop(M, cond, x) with body { y = x + step; ys_t = y;
// cond = cond } where step is computed outside the loop from input s.
func loopModel(t *testing.T) *Model {
	t.Helper()
	body := &onnxpb.Graph{
		Name:   "body",
		Inputs: []*onnxpb.ValueInfo{vi("i", onnxpb.Int64), vi("c", onnxpb.Bool), vi("acc", onnxpb.Float)},
		Nodes: []*onnxpb.Node{
			{OpType: "Add", Inputs: []string{"acc", "step"}, Outputs: []string{"acc2"}},
			{OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{OpType: "Identity", Inputs: []string{"acc2"}, Outputs: []string{"scan"}},
		},
		Outputs: []*onnxpb.ValueInfo{vi("c2", onnxpb.Bool), vi("acc2", onnxpb.Float), vi("scan", onnxpb.Float)},
	}
	g := &onnxpb.Graph{
		Inputs: []*onnxpb.ValueInfo{vi("m", onnxpb.Int64), vi("cond", onnxpb.Bool), vi("x", onnxpb.Float), vi("s", onnxpb.Float)},
		Nodes: []*onnxpb.Node{
			{OpType: "Mul", Inputs: []string{"s", "s"}, Outputs: []string{"step"}},
			{OpType: "Loop", Inputs: []string{"m", "cond", "x"}, Outputs: []string{"y", "ys"},
				Attributes: []*onnxpb.Attribute{{Name: "body", Type: onnxpb.AttrGraph, G: body}}},
		},
		Outputs: []*onnxpb.ValueInfo{vi("y", onnxpb.Float), vi("ys", onnxpb.Float)},
	}
	m, err := Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 16}}, Graph: g}))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoop(t *testing.T) {
	m := loopModel(t)
	run := func(ctx context.Context, trips int64, cond bool) (map[string]*tensor.Tensor, error) {
		return m.Run(ctx, map[string]*tensor.Tensor{
			"m": tensor.Scalar(trips), "cond": tensor.Scalar(cond),
			"x": tensor.From([]int{2}, []float32{1, 10}), "s": tensor.Scalar(float32(2)),
		}, nil)
	}
	out, err := run(context.Background(), 3, true)
	if err != nil {
		t.Fatal(err)
	}
	if y := out["y"].Data.([]float32); !slices.Equal(y, []float32{13, 22}) {
		t.Errorf("y = %v, want [13 22]", y)
	}
	ys := out["ys"]
	if !slices.Equal(ys.Shape, []int{3, 2}) || !slices.Equal(ys.Data.([]float32), []float32{5, 14, 9, 18, 13, 22}) {
		t.Errorf("ys = %v %v", ys.Shape, ys.Data)
	}
	// A false condition runs no iteration: the carried value passes
	// through and the scan output is empty.
	out, err = run(context.Background(), 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if y := out["y"].Data.([]float32); !slices.Equal(y, []float32{1, 10}) || out["ys"].Len() != 0 || out["ys"].DType != tensor.Float32 {
		t.Errorf("no iterations: y = %v, ys = %v%v", y, out["ys"].DType, out["ys"].Shape)
	}
	// A huge trip count stops at the request's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := run(ctx, 1<<62, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("endless loop: %v, want the deadline", err)
	}
	// A trip count of the wrong type is an input error.
	_, err = m.Run(context.Background(), map[string]*tensor.Tensor{
		"m": tensor.From([]int{2}, []int64{1, 2}), "cond": tensor.Scalar(true),
		"x": tensor.From([]int{2}, []float32{1, 10}), "s": tensor.Scalar(float32(2)),
	}, nil)
	if !errors.Is(err, ErrInput) {
		t.Errorf("two trip counts: %v, want an input error", err)
	}
}

func TestScanAxesAndDirections(t *testing.T) {
	// Scan over axis 1 of x [2,3], reversed, summing columns into a state
	// and emitting the running sums along output axis 1.
	body := &onnxpb.Graph{
		Name:   "body",
		Inputs: []*onnxpb.ValueInfo{vi("sum", onnxpb.Float), vi("col", onnxpb.Float)},
		Nodes: []*onnxpb.Node{
			{OpType: "Add", Inputs: []string{"sum", "col"}, Outputs: []string{"sum2"}},
			{OpType: "Identity", Inputs: []string{"sum2"}, Outputs: []string{"out"}},
		},
		Outputs: []*onnxpb.ValueInfo{vi("sum2", onnxpb.Float), vi("out", onnxpb.Float)},
	}
	g := &onnxpb.Graph{
		Inputs: []*onnxpb.ValueInfo{vi("init", onnxpb.Float), vi("x", onnxpb.Float)},
		Nodes: []*onnxpb.Node{{OpType: "Scan", Inputs: []string{"init", "x"}, Outputs: []string{"final", "sums"},
			Attributes: []*onnxpb.Attribute{
				{Name: "body", Type: onnxpb.AttrGraph, G: body},
				{Name: "num_scan_inputs", Type: onnxpb.AttrInt, I: 1},
				{Name: "scan_input_axes", Type: onnxpb.AttrInts, Ints: []int64{1}},
				{Name: "scan_input_directions", Type: onnxpb.AttrInts, Ints: []int64{1}},
				{Name: "scan_output_axes", Type: onnxpb.AttrInts, Ints: []int64{-1}},
			}}},
		Outputs: []*onnxpb.ValueInfo{vi("final", onnxpb.Float), vi("sums", onnxpb.Float)},
	}
	m, err := Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 16}}, Graph: g}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Run(context.Background(), map[string]*tensor.Tensor{
		"init": tensor.From([]int{2}, []float32{0, 100}),
		"x":    tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := out["final"].Data.([]float32); !slices.Equal(f, []float32{6, 115}) {
		t.Errorf("final = %v", f)
	}
	s := out["sums"]
	// columns visited 3,2,1: running sums per row, stacked along the last axis
	if !slices.Equal(s.Shape, []int{2, 3}) || !slices.Equal(s.Data.([]float32), []float32{3, 5, 6, 106, 111, 115}) {
		t.Errorf("sums = %v %v", s.Shape, s.Data)
	}
	_, err = m.Run(context.Background(), map[string]*tensor.Tensor{
		"init": tensor.From([]int{3}, []float32{0, 0, 0}),
		"x":    tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
	}, nil)
	if !errors.Is(err, ErrInput) {
		t.Errorf("a state of the wrong shape: %v, want an input error", err)
	}
}

// keepProbe records whether it runs under a Context that keeps every
// value, and gives its input 1.
type keepProbe struct{ kept *[]bool }

func (p keepProbe) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	*p.kept = append(*p.kept, c.KeepValues())
	return []*tensor.Tensor{in[1]}, nil
}

// TestSubgraphRun runs a subgraph as an operator of a family does
// (ops.Graph): its captured values come after the node's own inputs, and a
// run that keeps every value keeps them in the subgraph too, whether its
// Context or its context says so.
func TestSubgraphRun(t *testing.T) {
	var kept []bool
	g := &graph{slots: 3, inputSlot: []int{0}, outputSlot: []int{2}, captures: []capture{{outer: 7, inner: 1}},
		steps:        []step{{name: "probe", desc: &Descriptor{Type: "Probe"}, op: keepProbe{&kept}, in: []int{0, 1}, out: []int{2}}},
		releaseAfter: [][]int{{0, 1}}, exec: gemm.Default()}
	var sg ops.Graph = &subgraph{graph: g, first: 1, names: []string{"x"}, outs: []string{"y"}}
	if !slices.Equal(sg.Inputs(), []string{"x"}) || !slices.Equal(sg.Outputs(), []string{"y"}) {
		t.Errorf("inputs %v, outputs %v", sg.Inputs(), sg.Outputs())
	}
	captured := tensor.Scalar(float32(3))
	in := []*tensor.Tensor{tensor.Scalar(true), captured}
	bg := context.Background()
	for _, c := range []*ops.Context{
		ops.NewContext(bg, nil, false),
		ops.NewContext(bg, nil, true),
		ops.NewContext(context.WithValue(bg, keepValuesKey{}, true), nil, false),
	} {
		out, err := sg.Run(c, in, []*tensor.Tensor{tensor.Scalar(float32(1))})
		if err != nil {
			t.Fatal(err)
		}
		if out[0] != captured {
			t.Errorf("the subgraph gave %v, want its captured value", out[0])
		}
	}
	if !slices.Equal(kept, []bool{false, true, true}) {
		t.Errorf("the subgraph's operator kept values %v, want [false true true]", kept)
	}
	_, err := sg.Run(ops.NewContext(bg, nil, false), in, nil)
	if want := "subgraph takes 1 inputs, got 0"; !errors.Is(err, ErrInput) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("no inputs: %v, want %q", err, want)
	}
}
