package attention

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// background is the Context of a run outside any request on engine e
// (the default engine when nil).
func background(e *gemm.Engine) *ops.Context { return ops.NewContext(context.Background(), e, false) }

// runFunc runs a compiled operator on its inputs.
type runFunc func(in []*tensor.Tensor) ([]*tensor.Tensor, error)

// compiled returns op as a runFunc running on engine e.
func compiled(op ops.Operator, e *gemm.Engine) runFunc {
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) { return op.Run(background(e), in) }
}

// compile compiles n through the registry for inputs inputs.
func compile(t testing.TB, n opstest.Node, inputs int) ops.Operator {
	t.Helper()
	op, _, err := opstest.Compile(n, inputs)
	if err != nil {
		t.Fatalf("%s: %v", n.Op, err)
	}
	return op
}

func attrInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func attrFloat(name string, f float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: f}
}

func attrStr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// attentionNode is an Attention node of opset 24 (7 inputs, 4 outputs)
// with the attributes at holds.
func attentionNode(at *AttentionAttrs) opstest.Node {
	attrs := []*onnxpb.Attribute{
		attrInt("is_causal", boolInt(at.IsCausal)), attrInt("kv_num_heads", at.KVNumHeads),
		attrInt("q_num_heads", at.QNumHeads), attrInt("qk_matmul_output_mode", at.QKMatMulOutputMode),
		attrFloat("softcap", at.Softcap),
	}
	if at.Scale != nil {
		attrs = append(attrs, attrFloat("scale", *at.Scale))
	}
	if at.SoftmaxPrecision != nil {
		attrs = append(attrs, attrInt("softmax_precision", *at.SoftmaxPrecision))
	}
	return opstest.Node{Op: "Attention", Opset: 24, Outputs: 4, Attrs: attrs}
}

// attentionRun compiles an Attention node with attributes at and runs it
// on engine e.
func attentionRun(t testing.TB, at *AttentionAttrs, e *gemm.Engine) runFunc {
	t.Helper()
	return compiled(compile(t, attentionNode(at), 7), e)
}

// randFloats returns n normal values shifted by offset.
func randFloats(r *rand.Rand, n int, offset float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() + offset)
	}
	return x
}

// randTensor returns a float32 tensor of the given shape with normal
// values.
func randTensor(r *rand.Rand, shape ...int) *tensor.Tensor {
	return tensor.From(shape, randFloats(r, ops.ProdInts(shape), 0))
}

// to64 returns a float32 tensor as float64 (any other tensor, and nil, as
// it is).
func to64(x *tensor.Tensor) *tensor.Tensor {
	if x == nil || x.DType != tensor.Float32 {
		return x
	}
	return tensor.From(slices.Clone(x.Shape), x.Float64s())
}

// compareOutputs checks the outputs want has against got, to within tol
// relative to 1 + |want|; -Inf and NaN must match exactly.
func compareOutputs(t *testing.T, name string, got, want []*tensor.Tensor, tol float64) {
	t.Helper()
	for i := range want {
		if want[i] == nil {
			continue
		}
		if i >= len(got) || got[i] == nil || !ops.EqualShape(got[i].Shape, want[i].Shape) {
			t.Fatalf("%s: output %d is %v, want shape %v", name, i, got[i], want[i].Shape)
		}
		g, w := got[i].Float64s(), want[i].Float64s()
		for j := range w {
			if math.IsInf(w[j], -1) && math.IsInf(g[j], -1) || math.IsNaN(w[j]) && math.IsNaN(g[j]) {
				continue
			}
			if math.Abs(g[j]-w[j]) > tol*(1+math.Abs(w[j])) {
				t.Fatalf("%s: output %d [%d] = %v, want %v", name, i, j, g[j], w[j])
			}
		}
	}
}
