package model

import (
	"context"
	"testing"
	"time"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// FuzzLoad feeds arbitrary bytes to Load: it must return a model or an
// error, never panic. A model that loads is then run on zero-filled inputs
// of its declared types, dynamic dimensions set to 0, 1 or 2 (from the
// input's length): the run must return outputs whose data match their
// shapes, or an error, never panic. (go test -fuzz FuzzLoad; .ci/run
// fuzzes it for a bounded time.)
func FuzzLoad(f *testing.F) {
	g := &onnxpb.Graph{
		Inputs:       []*onnxpb.ValueInfo{{Name: "x", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float, HasShape: true, Shape: []onnxpb.Dim{{Param: "N"}, {Value: 2, HasValue: true}}}}},
		Initializers: []*onnxpb.Tensor{TensorToONNX("w", tensor.From([]int{2, 2}, []float32{1, 2, 3, 4}))},
		Nodes: []*onnxpb.Node{
			{OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"h"}},
			{OpType: "Softmax", Inputs: []string{"h"}, Outputs: []string{"y"}, Attributes: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: -1}}},
		},
		Outputs: []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
	}
	f.Add(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 13}}, Graph: g}))
	// the same graph with the Softmax's input left out (an empty name),
	// which once reached the operator as a nil tensor
	g.Nodes[1].Inputs = []string{""}
	f.Add(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 13}}, Graph: g}))
	f.Add([]byte{0x3a, 0x02, 0x2a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		// a bound on the work a mutated graph may ask for (folding
		// constants at load, then the run), not a test of speed
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		m, err := LoadContext(ctx, b, Options{})
		if err != nil {
			return
		}
		inputs := map[string]*tensor.Tensor{}
		for _, spec := range m.Inputs {
			shape := []int{2}
			if spec.Shape != nil {
				shape = make([]int, len(spec.Shape))
				for i, d := range spec.Shape {
					if d < 0 {
						d = len(b) % 3
					}
					shape[i] = d
				}
			}
			n, err := tensor.NumElements(shape)
			if err != nil || n > 1<<16 {
				return
			}
			data, err := tensor.MakeSlice(spec.DType, n)
			if err != nil {
				return
			}
			inputs[spec.Name] = &tensor.Tensor{DType: spec.DType, Shape: shape, Data: data}
		}
		outs, err := m.Run(ctx, inputs, nil)
		if err != nil {
			return
		}
		for name, o := range outs {
			if n, err := tensor.NumElements(o.Shape); err != nil || o.Len() != n {
				t.Fatalf("output %q: %d elements for shape %v", name, o.Len(), o.Shape)
			}
		}
	})
}
