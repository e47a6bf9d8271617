package matmul

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// compilerNode stands in for the graph compiler's record of a node
// (ops.Node.Host): it keeps the layers reported and the inputs held.
type compilerNode struct {
	op     string   // the op type layers are reported under
	layers []string // "op K×N kernels"
	held   []int
	parts  []*compilerNode // the records of the node's parts (ops.Node.Part)
}

func (h *compilerNode) AddLayer(k, cols int, kernels string) {
	h.layers = append(h.layers, fmt.Sprintf("%s %d×%d %s", h.op, k, cols, kernels))
}

func (h *compilerNode) HoldInputs(i ...int) { h.held = append(h.held, i...) }

// spec is one node to compile as the graph compiler would.
type spec struct {
	domain   string
	op       string
	opset    int64
	attrs    []*onnxpb.Attribute
	inputs   int              // how many inputs (consts and qdq may be shorter)
	outputs  int              // 1 when 0
	consts   []*tensor.Tensor // inputs known at load
	qdq      []*ops.QDQWeight // QDQ weights behind inputs
	engine   *gemm.Engine     // gemm.Default() when nil
	quantize bool             // the model's options
	scheme   quant.Scheme     // with quantize
	absent   []int            // inputs the node leaves out ("")
}

// compile builds s with the registry's operator, returning it and what
// it told the compiler.
func compile(t testing.TB, s spec) (ops.Operator, *compilerNode, error) {
	t.Helper()
	d, err := ops.Lookup(s.domain, s.op, s.opset)
	if err != nil {
		return nil, nil, err
	}
	host := &compilerNode{op: s.op}
	e := s.engine
	if e == nil {
		e = gemm.Default()
	}
	n := &ops.Node{Name: "node", Type: s.op, Domain: s.domain, Opset: s.opset, Attrs: map[string]*onnxpb.Attribute{},
		Consts: make([]*tensor.Tensor, s.inputs), QDQ: make([]*ops.QDQWeight, s.inputs), Engine: e,
		Quantize: s.quantize, Scheme: s.scheme, Host: host}
	n.PartHost = func(p *ops.Node) any {
		part := &compilerNode{op: p.Type}
		host.parts = append(host.parts, part)
		return part
	}
	copy(n.Consts, s.consts)
	copy(n.QDQ, s.qdq)
	for i := range s.inputs {
		n.Inputs = append(n.Inputs, fmt.Sprintf("in%d", i))
	}
	for _, i := range s.absent {
		n.Inputs[i] = ""
	}
	for i := range max(s.outputs, 1) {
		n.Outputs = append(n.Outputs, fmt.Sprintf("out%d", i))
	}
	for _, a := range s.attrs {
		n.Attrs[a.Name] = a
	}
	attrs, err := d.Parse(n)
	if err != nil {
		return nil, nil, err
	}
	op, err := d.Build(n, attrs)
	return op, host, err
}

// mustCompile is compile that fails the test on an error.
func mustCompile(t testing.TB, s spec) (ops.Operator, *compilerNode) {
	t.Helper()
	op, host, err := compile(t, s)
	if err != nil {
		t.Fatalf("%s: %v", s.op, err)
	}
	return op, host
}

// run runs op on engine e (gemm.Default() when nil) outside any request.
func run(op ops.Operator, e *gemm.Engine, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	return op.Run(ops.NewContext(context.Background(), e, false), in)
}

// run1 is run for an operator of one output.
func run1(t testing.TB, op ops.Operator, e *gemm.Engine, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	out, err := run(op, e, in...)
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

func attrInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func attrFloat(name string, f float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: f}
}

// randFloats returns a float32 tensor of the given shape with normal
// values.
func randFloats(r *rand.Rand, shape ...int) *tensor.Tensor {
	x := make([]float32, ops.ProdInts(shape))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return tensor.From(shape, x)
}

// refProduct is a·b for row-major a (m×k) and b (k×n), summed in
// float64, and the magnitude of each sum (Σ|a·b|), which bounds the
// error of a product computed in lower precision.
func refProduct(a, b []float32, m, k, n int) (y, mag []float64) {
	y, mag = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, g float64
			for p := 0; p < k; p++ {
				v := float64(a[i*k+p]) * float64(b[p*n+j])
				s += v
				g += math.Abs(v)
			}
			y[i*n+j], mag[i*n+j] = s, g
		}
	}
	return y, mag
}

// within fails t unless got is within frac·mag of want everywhere.
func within(t testing.TB, what string, got []float32, want, mag []float64, frac float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= frac*mag[i]+1e-30) {
			t.Fatalf("%s: [%d] = %v, want %v (magnitude %v)", what, i, got[i], want[i], mag[i])
		}
	}
}

// Bounds of a product's error relative to its magnitude: float32 sums,
// and int8 products (activations quantized per row, weights per channel
// or tensor: half a step each per term at most, some 1% in practice).
const (
	floatTol = 1e-5
	int8Tol  = 1.0 / 50
)

// cast converts x to dt.
func cast(t testing.TB, x *tensor.Tensor, dt tensor.DataType) *tensor.Tensor {
	t.Helper()
	y, err := tensorops.CastTo(x, dt)
	if err != nil {
		t.Fatal(err)
	}
	return y
}
