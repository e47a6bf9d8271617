package model_test

import (
	"context"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// TestIdentityRewrite: an Identity that renames an intermediate value is
// rewritten away, one that names a graph output stays, and Unrewritten
// compiles the graph as written.
func TestIdentityRewrite(t *testing.T) {
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 2)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 2)},
		Nodes: []onnxbuild.Node{
			{Op: "Identity", Inputs: []string{"x"}, Outputs: []string{"a"}},
			{Op: "Identity", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{Op: "Relu", Inputs: []string{"b"}, Outputs: []string{"c"}},
			{Op: "Identity", Inputs: []string{"c"}, Outputs: []string{"y"}},
		},
	}
	for _, c := range []struct {
		opts  model.Options
		steps int
	}{{model.Options{}, 2}, {model.Options{Unrewritten: true}, 4}} {
		m, err := model.LoadWith(g.Bytes(), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(m.Steps()); got != c.steps {
			t.Errorf("Unrewritten=%v: %d steps, want %d", c.opts.Unrewritten, got, c.steps)
		}
		out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{2}, []float32{-1, 2})}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if y := out["y"].Data.([]float32); y[0] != 0 || y[1] != 2 {
			t.Errorf("y = %v", y)
		}
	}
}
