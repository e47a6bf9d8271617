package model_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// TestFoldCapBeforeAllocating: a ConstantOfShape asking for 2 GiB from a
// file of a few hundred bytes is not folded (the check reads the shape
// before anything is allocated); the model loads with the node left to
// run at inference.
func TestFoldCapBeforeAllocating(t *testing.T) {
	data := onnxbuild.FilledConstant([]int64{1 << 28}, tensor.From([]int{1}, []float64{1})).Bytes()
	if len(data) > 1000 {
		t.Fatalf("the model file has %d bytes", len(data))
	}
	m, err := model.LoadContext(context.Background(), data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Unfolded, []string{"ConstantOfShape_a"}) {
		t.Errorf("Unfolded = %q, want the ConstantOfShape node", m.Unfolded)
	}
}

// TestFoldCapKeepsAnswers: nodes whose folded output would pass the cap
// (checked before running for ConstantOfShape, after for an Add of two
// constants broadcast to a matrix) run at inference and answer what the
// folded model answers, and what an independent computation gives.
func TestFoldCapKeepsAnswers(t *testing.T) {
	const rows, cols = 300, 400
	a := make([]float32, rows)
	b := make([]float32, cols)
	for i := range a {
		a[i] = float32(i) * 0.25
	}
	for j := range b {
		b[j] = float32(j) * -0.5
	}
	outer := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, 1)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, rows, cols)},
		Inits:   map[string]*tensor.Tensor{"a": tensor.From([]int{rows, 1}, a), "b": tensor.From([]int{1, cols}, b)},
		Nodes: []onnxbuild.Node{
			{Op: "Add", Inputs: []string{"a", "b"}, Outputs: []string{"c"}},
			{Op: "Add", Inputs: []string{"c", "x"}, Outputs: []string{"y"}},
		},
	}
	filled := onnxbuild.FilledConstant([]int64{rows, cols}, tensor.From([]int{1}, []float32{2.5}))
	x := tensor.From([]int{1, 1}, []float32{0.5})
	for _, c := range []struct {
		name     string
		g        onnxbuild.Graph
		unfolded string
		want     func(i, j int) float32
	}{
		{"ConstantOfShape", filled, "ConstantOfShape_a", func(i, j int) float32 { return 3 }},
		{"Add", outer, "Add_a", func(i, j int) float32 { return a[i] + b[j] + 0.5 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := c.g.Bytes()
			folded, err := model.LoadWith(data, model.Options{})
			if err != nil {
				t.Fatal(err)
			}
			capped, err := model.LoadWith(data, model.Options{MaxFoldBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(folded.Unfolded) != 0 || !slices.Equal(capped.Unfolded, []string{c.unfolded}) {
				t.Errorf("unfolded: %q under the default cap, %q under 64 KiB; want none, then %s", folded.Unfolded, capped.Unfolded, c.unfolded)
			}
			if len(capped.Steps()) != len(folded.Steps())+1 {
				t.Errorf("%d steps capped, %d folded: want one more", len(capped.Steps()), len(folded.Steps()))
			}
			var answers [][]float32
			for _, m := range []*model.Model{folded, capped} {
				out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": x}, nil)
				if err != nil {
					t.Fatal(err)
				}
				y := out["y"]
				if !slices.Equal(y.Shape, []int{rows, cols}) {
					t.Fatalf("y has shape %v", y.Shape)
				}
				answers = append(answers, y.Data.([]float32))
			}
			for i := range rows {
				for j := range cols {
					k := i*cols + j
					want := c.want(i, j)
					if math.Float32bits(answers[0][k]) != math.Float32bits(want) || math.Float32bits(answers[1][k]) != math.Float32bits(want) {
						t.Fatalf("y[%d][%d]: folded %v, run %v, want %v", i, j, answers[0][k], answers[1][k], want)
					}
				}
			}
		})
	}
}

// countdown is a context that reports Canceled from its nth look at Err
// on: it ends a load at a chosen point without timing.
type countdown struct {
	context.Context
	looks, n atomic.Int64
}

func (c *countdown) Err() error {
	if c.looks.Add(1) >= c.n.Load() {
		return context.Canceled
	}
	return nil
}

// TestFoldUnderTheLoadContext: the fold of one long node (a DFT of 2^20
// points) looks at the load's context as it computes, so a load cancelled
// while the node folds stops inside the node.
func TestFoldUnderTheLoadContext(t *testing.T) {
	const n = 1 << 20
	signal := make([]float32, n)
	for i := range signal {
		signal[i] = float32(i%7) - 3
	}
	data := onnxbuild.Graph{
		Opset:   20,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, n, 2)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1, n, 2)},
		Inits:   map[string]*tensor.Tensor{"s": tensor.From([]int{1, n, 1}, signal)},
		Nodes: []onnxbuild.Node{
			{Op: "DFT", Inputs: []string{"s"}, Outputs: []string{"f"}},
			{Op: "Add", Inputs: []string{"f", "x"}, Outputs: []string{"y"}},
		},
	}.Bytes()
	// Under a live context the DFT folds.
	m, err := model.LoadContext(context.Background(), data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps()) != 1 {
		t.Fatalf("%d steps: want the DFT folded, the Add left", len(m.Steps()))
	}
	// Cancelled after the look before the DFT node: the DFT's own look stops it.
	ctx := &countdown{Context: context.Background()}
	ctx.n.Store(2)
	_, err = model.LoadContext(ctx, data, model.Options{})
	var ne *model.NodeError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ne) || ne.Op != "DFT" {
		t.Fatalf("load cancelled while the DFT folds: %v, want context.Canceled from the DFT node", err)
	}
	if looks := ctx.looks.Load(); looks != 2 {
		t.Errorf("the load looked at its context %d times, want 2 (before the node, then inside it)", looks)
	}
}
