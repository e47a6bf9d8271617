package model_test

import (
	"context"
	"fmt"
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
