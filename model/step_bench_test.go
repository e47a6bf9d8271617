package model_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkStepCost runs chains of 100 steps whose work is next to
// nothing (a Relu of 16 values; an Add of a constant to them; a
// 16-channel 1×1 convolution with bias and Relu on a 1×1 image, a
// squeeze-and-excitation block's kind), so
// that what a step costs beside its work shows: ns/step, and the bytes
// a run allocates. Small models' runs, and the serial part of a CNN's at
// batch 1, are made of such steps.
func BenchmarkStepCost(b *testing.B) {
	const steps, ch = 100, 16
	for _, op := range []string{"Relu", "Add", "FusedConv"} {
		var nodes []onnxbuild.Node
		inits := map[string]*tensor.Tensor{}
		prev := "x"
		for i := range steps {
			out := fmt.Sprintf("v%d", i)
			if i == steps-1 {
				out = "y"
			}
			in := prev
			if op == "Add" {
				inits["c"] = tensor.From([]int{1, ch, 1, 1}, make([]float32, ch))
				nodes = append(nodes, onnxbuild.Node{Op: "Add", Inputs: []string{prev, "c"}, Outputs: []string{out}})
				prev = out
				continue
			}
			if op == "FusedConv" {
				w, bias := fmt.Sprintf("w%d", i), fmt.Sprintf("b%d", i)
				inits[w] = tensor.From([]int{ch, ch, 1, 1}, make([]float32, ch*ch))
				inits[bias] = tensor.From([]int{ch}, make([]float32, ch))
				nodes = append(nodes, onnxbuild.Node{Op: "Conv", Inputs: []string{prev, w, bias}, Outputs: []string{out + "c"}})
				in = out + "c"
			}
			nodes = append(nodes, onnxbuild.Node{Op: "Relu", Inputs: []string{in}, Outputs: []string{out}})
			prev = out
		}
		g := onnxbuild.Graph{Opset: 17, Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, ch, 1, 1)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1, ch, 1, 1)}, Nodes: nodes, Inits: inits}
		m, err := model.LoadWith(g.Bytes(), model.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if got := m.Steps(); len(got) != steps || got[0].Op != op {
			b.Fatalf("%s: %d steps, the first %s", op, len(got), got[0].Op)
		}
		in := map[string]*tensor.Tensor{"x": tensor.From([]int{1, ch, 1, 1}, make([]float32, ch))}
		b.Run(op, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Run(context.Background(), in, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
		})
	}
}

// TestElementwiseStepsAllocate: a run's elementwise steps of float32
// values of one shape (a Relu, an Add of two same-shaped values) take
// their outputs from the run's memory (its Arena and Singles), so that
// each step of a run allocates at most the box of its output's slice
// (none when the Arena hands it the buffer of its last run). Small
// models and a CNN's serial part are made of such steps; they used to
// allocate four (Relu) and eight (Add) times a step.
func TestElementwiseStepsAllocate(t *testing.T) {
	const ch = 256 // values an output: as small as the Arena holds
	x := make([]float32, ch)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	build := func(steps int) (*model.Model, []float32) {
		var nodes []onnxbuild.Node
		want := slices.Clone(x)
		prev := "x"
		for i := range steps {
			out := fmt.Sprintf("v%d", i)
			if i == steps-1 {
				out = "y"
			}
			if i%2 == 0 {
				nodes = append(nodes, onnxbuild.Node{Op: "Add", Inputs: []string{prev, "x"}, Outputs: []string{out}})
				for j := range want {
					want[j] += x[j]
				}
			} else {
				nodes = append(nodes, onnxbuild.Node{Op: "Relu", Inputs: []string{prev}, Outputs: []string{out}})
				for j := range want {
					want[j] = max(want[j], 0)
				}
			}
			prev = out
		}
		g := onnxbuild.Graph{Opset: 17, Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, ch)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1, ch)}, Nodes: nodes}
		m, err := model.LoadWith(g.Bytes(), model.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m, want
	}
	in := map[string]*tensor.Tensor{"x": tensor.From([]int{1, ch}, x)}
	allocs := func(steps int) float64 {
		m, want := build(steps)
		return testing.AllocsPerRun(50, func() {
			out, err := m.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := out["y"].Data.([]float32); !slices.Equal(got, want) {
				t.Fatalf("%d steps: y = %v..., want %v...", steps, got[:8], want[:8])
			}
		})
	}
	two, hundred := allocs(2), allocs(100)
	if hundred > two+98 {
		t.Errorf("a run of 100 elementwise steps: %v allocations, of 2 steps %v; want at most one more a step", hundred, two)
	}
}
