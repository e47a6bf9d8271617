package model

import (
	"context"
	"fmt"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestAbsentInputsNeverPanic gives every registered operator nodes of
// one to six inputs with one of them absent (ONNX's empty name), and
// all of them absent: each must be refused at load or run to an error
// or a result. An operator that reads a required input without
// checking it is named would dereference nil on such a model.
func TestAbsentInputsNeverPanic(t *testing.T) {
	for _, d := range Operators() {
		if d.Refused {
			continue
		}
		for n := 1; n <= 6; n++ {
			for absent := -1; absent < n; absent++ {
				names := make([]string, n)
				for i := range names {
					if absent < 0 || i == absent {
						continue
					}
					names[i] = fmt.Sprintf("x%d", i)
				}
				if err := absentInputsCase(d, names); err != nil {
					t.Errorf("%v with inputs %q: %v", d, names, err)
				}
			}
		}
	}
}

// absentInputsCase loads and runs one node of d over the named inputs,
// each a float32 [2 3] graph input, and reports a panic as an error.
func absentInputsCase(d *Descriptor, names []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	g := &onnxpb.Graph{}
	inputs := map[string]*tensor.Tensor{}
	for _, name := range names {
		if name == "" {
			continue
		}
		g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}})
		inputs[name] = tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	}
	g.Nodes = []*onnxpb.Node{{OpType: d.Type, Domain: d.Domain, Name: "n", Inputs: names, Outputs: []string{"y"}}}
	g.Outputs = []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}}
	opsets := []onnxpb.OpsetID{{Version: d.Since}}
	if d.Domain != "" {
		opsets = []onnxpb.OpsetID{{Version: 17}, {Domain: d.Domain, Version: d.Since}}
	}
	m, err := Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: opsets, Graph: g}))
	if err != nil {
		return nil
	}
	m.Run(context.Background(), inputs, nil)
	return nil
}
