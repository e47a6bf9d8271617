package ml

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// ONNX's node tests compare within these tolerances.
const (
	onnxRTol = 1e-3
	onnxATol = 1e-7
)

// TestAgreesWithONNXRuntime runs the cases of testdata/ml-ort — tree
// ensembles, linear and SVM models, encoders and scalers shaped as
// scikit-learn's exports, each a model of one node — and compares the
// outputs with ONNX Runtime's, which go run -C tools ./mlref recorded,
// within ONNX's tolerance.
func TestAgreesWithONNXRuntime(t *testing.T) {
	const root = "testdata/ml-ort"
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 50 {
		t.Fatalf("%s has %d cases; rerun go run -C tools ./mlref", root, len(entries))
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join(root, e.Name())
			n, g := readCase(t, filepath.Join(dir, "model.onnx"))
			set := filepath.Join(dir, "test_data_set_0")
			in := make([]*tensor.Tensor, len(g.Nodes[0].Inputs))
			for i, vi := range g.Inputs {
				j := slices.Index(g.Nodes[0].Inputs, vi.Name)
				if j < 0 {
					t.Fatalf("the node does not read the model's input %q", vi.Name)
				}
				in[j] = readTensorPB(t, filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
			}
			out := run(t, n, in...)
			for i, vi := range g.Outputs {
				j := slices.Index(g.Nodes[0].Outputs, vi.Name)
				if j < 0 || j >= len(out) {
					t.Fatalf("the node does not write the model's output %q", vi.Name)
				}
				want := readTensorPB(t, filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
				for _, d := range diffONNX(vi.Name, out[j], want) {
					t.Error(d)
				}
			}
		})
	}
}

// readCase reads a model of one ai.onnx.ml node: the node to compile, at
// the opset the model imports, and the model's graph.
func readCase(t *testing.T, path string) (opstest.Node, *onnxpb.Graph) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnxpb.UnmarshalModel(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if m.Graph == nil || len(m.Graph.Nodes) != 1 {
		t.Fatalf("%s is not a model of one node", path)
	}
	pn := m.Graph.Nodes[0]
	n := opstest.Node{Domain: pn.Domain, Op: pn.OpType, Outputs: len(pn.Outputs), Attrs: pn.Attributes}
	for _, o := range m.OpsetImport {
		if o.Domain == pn.Domain {
			n.Opset = o.Version
		}
	}
	if n.Domain != domain || n.Opset == 0 {
		t.Fatalf("%s: a node of %q at opset %d", path, n.Domain, n.Opset)
	}
	return n, m.Graph
}

func readTensorPB(t *testing.T, path string) *tensor.Tensor {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := onnxpb.UnmarshalTensor(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	x, err := onnx.TensorFromONNX(p)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return x
}

// diffONNX compares got with want as ONNX's runner does: same dtype and
// shape, |got-want| <= atol + rtol*|want| elementwise, NaN matching NaN,
// strings equal. It describes the differences, nil when there are none.
func diffONNX(name string, got, want *tensor.Tensor) []string {
	switch {
	case got.DType != want.DType:
		return []string{fmt.Sprintf("output %q: dtype %v, want %v", name, got.DType, want.DType)}
	case !slices.Equal(got.Shape, want.Shape):
		return []string{fmt.Sprintf("output %q: shape %v, want %v", name, got.Shape, want.Shape)}
	}
	var diffs []string
	if ws, ok := want.Data.([]string); ok {
		gs := got.Data.([]string)
		for i := range ws {
			if gs[i] != ws[i] {
				diffs = append(diffs, fmt.Sprintf("output %q[%d] = %q, want %q", name, i, gs[i], ws[i]))
			}
		}
		return diffs
	}
	g, w := got.Float64s(), want.Float64s()
	bad := 0
	for i := range w {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) || g[i] == w[i] {
			continue
		}
		if !(math.Abs(g[i]-w[i]) <= onnxATol+onnxRTol*math.Abs(w[i])) {
			if bad < 5 {
				diffs = append(diffs, fmt.Sprintf("output %q[%d] = %v, want %v", name, i, g[i], w[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		diffs = append(diffs, fmt.Sprintf("output %q: %d of %d elements differ", name, bad, len(w)))
	}
	return diffs
}
