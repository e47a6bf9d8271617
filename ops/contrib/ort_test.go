package contrib

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// The tolerance of ONNX's node tests, for FLOAT outputs.
const (
	onnxRTol = 1e-3
	onnxATol = 1e-5
)

// FLOAT16 outputs are compared within 2⁻⁹ relative (two units in their
// last place) plus ONNX's absolute tolerance: quantserve rounds each
// FLOAT16 result once from float32 or float64, while ONNX Runtime rounds
// some steps of its GELU family to float16 on the way, which leaves its
// values a unit or so away.
const (
	halfRTol = 1.0 / 512
	halfATol = onnxATol
)

// refCase is a model of testdata (model.onnx, input_i.pb, output_i.pb),
// as go run -C tools ./contribref wrote it with ONNX Runtime's outputs.
type refCase struct {
	g        *onnxpb.Graph
	opset    int64 // of com.microsoft
	ins, out []*tensor.Tensor
}

func readCase(t *testing.T, dir string) refCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnxpb.UnmarshalModel(b)
	if err != nil || m.Graph == nil {
		t.Fatalf("%s: %v", dir, err)
	}
	c := refCase{g: m.Graph}
	for _, o := range m.OpsetImport {
		if o.Domain == domain {
			c.opset = o.Version
		}
	}
	for i := range m.Graph.Inputs {
		c.ins = append(c.ins, readTensorPB(t, filepath.Join(dir, fmt.Sprintf("input_%d.pb", i))))
	}
	for i := range m.Graph.Outputs {
		c.out = append(c.out, readTensorPB(t, filepath.Join(dir, fmt.Sprintf("output_%d.pb", i))))
	}
	return c
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

// runGraph runs c's nodes in order on engine e, each compiled through
// opstest from the registry as the graph compiler would, the initializers
// known at load; it returns the graph's outputs in order.
func runGraph(t *testing.T, c refCase, e *gemm.Engine) []*tensor.Tensor {
	t.Helper()
	vals, consts := map[string]*tensor.Tensor{}, map[string]bool{}
	for _, p := range c.g.Initializers {
		x, err := onnx.TensorFromONNX(p)
		if err != nil {
			t.Fatal(err)
		}
		vals[p.Name], consts[p.Name] = x, true
	}
	for i, vi := range c.g.Inputs {
		vals[vi.Name] = c.ins[i]
	}
	for _, pn := range c.g.Nodes {
		if pn.Domain != domain {
			t.Fatalf("node %s is of domain %q", pn.Name, pn.Domain)
		}
		n := opstest.Node{Domain: domain, Op: pn.OpType, Opset: c.opset, Outputs: len(pn.Outputs), Attrs: pn.Attributes}
		in := make([]*tensor.Tensor, len(pn.Inputs))
		n.Consts = make([]*tensor.Tensor, len(pn.Inputs))
		for j, name := range pn.Inputs {
			if name == "" {
				continue // an absent optional input
			}
			if in[j] = vals[name]; in[j] == nil {
				t.Fatalf("node %s reads %q, which nothing wrote", pn.Name, name)
			}
			if consts[name] {
				n.Consts[j] = in[j]
			}
		}
		op, _, err := opstest.Compile(n, len(in))
		if err != nil {
			t.Fatalf("%s: %v", pn.Name, err)
		}
		out, err := op.Run(ops.NewContext(context.Background(), e, false), in)
		if err != nil {
			t.Fatalf("%s: %v", pn.Name, err)
		}
		for j, name := range pn.Outputs {
			if name != "" && j < len(out) {
				vals[name] = out[j]
			}
		}
	}
	outs := make([]*tensor.Tensor, len(c.g.Outputs))
	for i, vi := range c.g.Outputs {
		if outs[i] = vals[vi.Name]; outs[i] == nil {
			t.Fatalf("no node wrote the output %q", vi.Name)
		}
	}
	return outs
}

// diffRef compares got with want (ONNX Runtime's): the same type and
// shape, and every value within the tolerance of its type. It returns
// the differences and the largest |got - want|.
func diffRef(name string, got, want *tensor.Tensor) (diffs []string, worst float64) {
	switch {
	case got.DType != want.DType:
		return []string{fmt.Sprintf("%s: %v, want %v", name, got.DType, want.DType)}, 0
	case !slices.Equal(got.Shape, want.Shape):
		return []string{fmt.Sprintf("%s: shape %v, want %v", name, got.Shape, want.Shape)}, 0
	}
	rtol, atol := onnxRTol, onnxATol
	if want.DType == tensor.Float16 {
		rtol, atol = halfRTol, halfATol
	}
	g, w := got.Float64s(), want.Float64s()
	bad := 0
	for i := range w {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) || g[i] == w[i] {
			continue
		}
		d := math.Abs(g[i] - w[i])
		worst = max(worst, d)
		if !(d <= atol+rtol*math.Abs(w[i])) {
			if bad < 5 {
				diffs = append(diffs, fmt.Sprintf("%s[%d] = %v, want %v", name, i, g[i], w[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		diffs = append(diffs, fmt.Sprintf("%s: %d of %d values differ", name, bad, len(w)))
	}
	return diffs, worst
}

// checkCase runs case c on every kernel table this CPU runs and compares
// each output with ONNX Runtime's.
func checkCase(t *testing.T, c refCase) {
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 1)
		got := runGraph(t, c, e)
		e.Close()
		for i, vi := range c.g.Outputs {
			diffs, worst := diffRef(vi.Name, got[i], c.out[i])
			for _, d := range diffs {
				t.Errorf("%v: %s", tb, d)
			}
			t.Logf("%v: %s within %.3g of ONNX Runtime's", tb, vi.Name, worst)
		}
	}
}

// TestAgreesWithONNXRuntime runs every case of testdata of one node — each
// operator on seeded inputs of odd sizes, FLOAT and FLOAT16, optional
// inputs present and absent, optional outputs read — and compares its
// outputs with ONNX Runtime's (go run -C tools ./contribref recorded
// them). The cases of several nodes are TestTransformerBlock's.
func TestAgreesWithONNXRuntime(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 104 {
		t.Fatalf("testdata has %d cases; rerun go run -C tools ./contribref", len(entries))
	}
	covered := map[string]bool{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "block_") {
			continue
		}
		c := readCase(t, filepath.Join("testdata", e.Name()))
		if len(c.g.Nodes) != 1 {
			t.Fatalf("%s has %d nodes: name it block_", e.Name(), len(c.g.Nodes))
		}
		covered[c.g.Nodes[0].OpType] = true
		t.Run(e.Name(), func(t *testing.T) { checkCase(t, c) })
	}
	for _, op := range operators {
		if !covered[op] {
			t.Errorf("no case of testdata runs %s", op)
		}
	}
}

// TestTransformerBlock is the model-level check: a graph of seven
// com.microsoft nodes laid out as ONNX Runtime's optimizer leaves a
// transformer layer (SkipLayerNormalization and its residual sum,
// RotaryEmbedding, FastGelu with a bias, QuickGelu,
// SkipSimplifiedLayerNormalization of that sum, Gelu and BiasGelu), its
// weights initializers known at load, run node after node through the
// registry and compared with ONNX Runtime's run of the same model. It runs
// every block_ case of testdata.
func TestTransformerBlock(t *testing.T) {
	blocks, err := filepath.Glob(filepath.Join("testdata", "block_*"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(blocks, filepath.Join("testdata", "block_f32")) {
		t.Fatalf("testdata has no block_f32; rerun go run -C tools ./contribref")
	}
	for _, dir := range blocks {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := readCase(t, dir)
			if len(c.g.Nodes) < 2 || len(c.g.Initializers) == 0 {
				t.Fatalf("%s has %d nodes and %d initializers", dir, len(c.g.Nodes), len(c.g.Initializers))
			}
			checkCase(t, c)
		})
	}
}
