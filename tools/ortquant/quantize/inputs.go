package quantize

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestDataInputs reads the inputs of every test_data_set_*/ directory in
// dir (input_<i>.pb, ONNX's layout for a model's reference runs), each
// bound to graph input i of the model in data (or to the name the tensor
// carries), for calibration.
func TestDataInputs(data []byte, dir string) ([]map[string]*tensor.Tensor, error) {
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil {
		return nil, err
	}
	if pb.Graph == nil {
		return nil, fmt.Errorf("quantize: the model has no graph")
	}
	inits := map[string]bool{}
	for _, p := range pb.Graph.Initializers {
		inits[p.Name] = true
	}
	for _, n := range pb.Graph.Nodes {
		for _, o := range n.Outputs {
			inits[o] = true // an input a node computes is no input
		}
	}
	var names []string
	for _, vi := range pb.Graph.Inputs {
		if !inits[vi.Name] {
			names = append(names, vi.Name)
		}
	}
	sets, err := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if err != nil {
		return nil, err
	}
	slices.Sort(sets)
	var out []map[string]*tensor.Tensor
	for _, set := range sets {
		in := map[string]*tensor.Tensor{}
		for i, name := range names {
			b, err := os.ReadFile(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
			if err != nil {
				return nil, err
			}
			p, err := onnxpb.UnmarshalTensor(b)
			if err != nil {
				return nil, fmt.Errorf("quantize: %s: %v", set, err)
			}
			t, err := model.TensorFromONNX(p)
			if err != nil {
				return nil, fmt.Errorf("quantize: %s: %v", set, err)
			}
			in[name] = t
		}
		out = append(out, in)
	}
	return out, nil
}
