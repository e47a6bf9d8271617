package contrib

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

const domain = "com.microsoft"

// operators are the operators of this package.
var operators = []string{"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "BiasAdd",
	"SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "RotaryEmbedding",
	"EmbedLayerNormalization", "MultiHeadAttention", "FusedMatMul", "Attention"}

// node returns the com.microsoft node op at opset 1 with outputs outputs.
func node(op string, outputs int, attrs ...*onnxpb.Attribute) opstest.Node {
	return opstest.Node{Domain: domain, Op: op, Opset: 1, Outputs: outputs, Attrs: attrs}
}

// run compiles op (one output) with attrs and runs it on in.
func run(t *testing.T, op string, attrs []*onnxpb.Attribute, in ...*tensor.Tensor) (*tensor.Tensor, error) {
	t.Helper()
	out, err := opstest.Run(t, node(op, 1, attrs...), in...)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func intAttr(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func floatAttr(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

// randn returns a FLOAT tensor of seeded normal values times scale.
func randn(r *rand.Rand, scale float64, shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return tensor.From(shape, v)
}

// half returns t (FLOAT) as FLOAT16.
func half(t *tensor.Tensor) *tensor.Tensor {
	return tensor.From(t.Shape, tensor.Float32ToHalf[tensor.F16](t.Data.([]float32)))
}

// near reports the first element of got (any float type) farther than
// atol + rtol·|want| from want, or nil.
func near(got *tensor.Tensor, want []float64, rtol, atol float64) error {
	g := got.Float64s()
	if len(g) != len(want) {
		return fmt.Errorf("%d values, want %d", len(g), len(want))
	}
	for i := range want {
		if math.IsNaN(want[i]) && math.IsNaN(g[i]) || g[i] == want[i] {
			continue
		}
		if !(math.Abs(g[i]-want[i]) <= atol+rtol*math.Abs(want[i])) {
			return fmt.Errorf("[%d] = %v, want %v", i, g[i], want[i])
		}
	}
	return nil
}

// TestDescriptors pins each operator to com.microsoft from opset 1, folded
// at load when its inputs are constants, and absent from ai.onnx.
func TestDescriptors(t *testing.T) {
	for _, op := range operators {
		ds := ops.Descriptors(domain, op)
		if len(ds) != 1 || ds[0].Since != 1 || ds[0].Until != 0 || !ds[0].Fold || ds[0].Refused {
			t.Errorf("%s: descriptors %v, want one from com.microsoft opset 1 that folds", op, ds)
		}
		if _, err := ops.Lookup(domain, op, 1); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
	for _, op := range []string{"FastGelu", "BiasGelu", "SkipLayerNormalization", "BiasAdd"} {
		if _, err := ops.Lookup("", op, 21); !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("ai.onnx %s: %v, want unsupported", op, err)
		}
	}
}

// TestRefusesUnknownAttributes: an attribute an operator does not define
// is refused at load, naming it.
func TestRefusesUnknownAttributes(t *testing.T) {
	for _, op := range operators {
		_, _, err := opstest.Compile(node(op, 1, intAttr("approximate", 1)), 4)
		if !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("%s with attribute approximate: %v, want unsupported", op, err)
		}
	}
}

// TestArity: too few or too many inputs and outputs are load errors.
func TestArity(t *testing.T) {
	for _, c := range []struct {
		op          string
		inputs, out int
	}{
		{"Gelu", 2, 1}, {"Gelu", 1, 2}, {"FastGelu", 3, 1}, {"BiasGelu", 1, 1}, {"QuickGelu", 0, 1},
		{"BiasAdd", 2, 1}, {"SkipLayerNormalization", 2, 1}, {"SkipLayerNormalization", 6, 1},
		{"SkipLayerNormalization", 3, 5}, {"SkipSimplifiedLayerNormalization", 5, 1}, {"RotaryEmbedding", 3, 1},
		{"EmbedLayerNormalization", 6, 1}, {"EmbedLayerNormalization", 10, 1}, {"EmbedLayerNormalization", 7, 4},
		{"MultiHeadAttention", 0, 1}, {"MultiHeadAttention", 11, 1}, {"MultiHeadAttention", 3, 5},
		{"FusedMatMul", 1, 1}, {"FusedMatMul", 3, 1}, {"FusedMatMul", 2, 2},
		{"Attention", 1, 1}, {"Attention", 8, 1}, {"Attention", 3, 3},
	} {
		if _, _, err := opstest.Compile(node(c.op, c.out), c.inputs); err == nil {
			t.Errorf("%s with %d inputs and %d outputs compiled", c.op, c.inputs, c.out)
		}
	}
}

// TestTakesFloatAndFloat16Only: other input types are input errors.
func TestTakesFloatAndFloat16Only(t *testing.T) {
	x := tensor.From([]int{2, 4}, []float64{1, 2, 3, 4, 5, 6, 7, 8})
	b := tensor.From([]int{4}, []float64{1, 2, 3, 4})
	for op, in := range map[string][]*tensor.Tensor{
		"Gelu": {x}, "FastGelu": {x}, "QuickGelu": {x}, "BiasGelu": {x, b},
		"SkipLayerNormalization": {x, x, b}, "SkipSimplifiedLayerNormalization": {x, x, b},
	} {
		if _, err := run(t, op, nil, in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s on DOUBLE: %v, want an input error", op, err)
		}
	}
	// Mixed types.
	f := tensor.From([]int{4}, []float32{1, 2, 3, 4})
	if _, err := run(t, "BiasGelu", nil, tensor.From([]int{1, 4}, []float32{1, 2, 3, 4}), half(f)); !errors.Is(err, ops.ErrInput) {
		t.Errorf("BiasGelu on FLOAT and FLOAT16: %v, want an input error", err)
	}
}

// TestStopsAtDeadline: an operator run under a cancelled request returns
// the request's error.
func TestStopsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, gemm.Default(), false)
	r := rand.New(rand.NewPCG(1, 2))
	x := randn(r, 1, 4, 64, 256)
	for op, in := range map[string][]*tensor.Tensor{
		"Gelu": {x}, "FastGelu": {x}, "QuickGelu": {x}, "BiasGelu": {x, randn(r, 1, 256)},
		"BiasAdd":                {x, randn(r, 1, 256), x},
		"SkipLayerNormalization": {x, x, randn(r, 1, 256)},
		"RotaryEmbedding": {x, tensor.From([]int{1}, []int64{0}),
			randn(r, 1, 64, 128), randn(r, 1, 64, 128)},
		"EmbedLayerNormalization": {tensor.From([]int{4, 64}, make([]int32, 4*64)), nil,
			randn(r, 1, 1, 256), randn(r, 1, 64, 256), nil, randn(r, 1, 256), randn(r, 1, 256)},
		"FusedMatMul": {x, randn(r, 1, 4, 256, 64)},
	} {
		o, _, err := opstest.Compile(node(op, 1), len(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Run(c, in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s under a cancelled request: %v", op, err)
		}
	}
}

func background() *ops.Context { return ops.NewContext(context.Background(), gemm.Default(), false) }
