package attention

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// fusedNode is a quantserve.Attention node.
func fusedNode(heads, size int64, scale float32) opstest.Node {
	return opstest.Node{Domain: "quantserve", Op: "Attention", Opset: 1, Attrs: []*onnxpb.Attribute{
		attrInt("num_heads", heads), attrInt("head_size", size), attrFloat("scale", scale),
	}}
}

// TestFusedAttention checks quantserve.Attention against ai.onnx
// Attention's rank-3 form computed in float64 with the same heads and
// scale, and its errors.
func TestFusedAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	const heads, size = 3, 5
	q, k, v := randTensor(r, 2, 7, heads*size), randTensor(r, 2, 9, heads*size), randTensor(r, 2, 9, heads*size)
	scale := float32(0.37)
	want, err := attentionRun(t, &AttentionAttrs{QNumHeads: heads, KVNumHeads: heads, Scale: &scale}, gemm.Default())([]*tensor.Tensor{to64(q), to64(k), to64(v)})
	if err != nil {
		t.Fatal(err)
	}
	op := compiled(compile(t, fusedNode(heads, size, scale), 3), nil)
	got, err := op([]*tensor.Tensor{q, k, v})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 1 || got[0].DType != tensor.Float32 {
		t.Fatalf("outputs %v", got)
	}
	compareOutputs(t, "fused", got, want[:1], 2e-5)
	for name, in := range map[string][]*tensor.Tensor{
		"width":  {q, k, randTensor(r, 2, 9, heads*size+heads)},
		"rank 4": {randTensor(r, 2, heads, 7, size), randTensor(r, 2, heads, 9, size), randTensor(r, 2, heads, 9, size)},
	} {
		if _, err := op(in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	for _, n := range []opstest.Node{fusedNode(0, size, 1), fusedNode(heads, -1, 1)} {
		if _, _, err := opstest.Compile(n, 3); err == nil {
			t.Errorf("%v accepted", n.Attrs)
		}
	}
	if _, _, err := opstest.Compile(fusedNode(heads, size, 1), 4); err == nil {
		t.Error("4 inputs accepted")
	}
}
