package attention

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"

	// The normalizations, reductions and losses that sit beside attention
	// in transformer graphs, run on the same random inputs.
	_ "github.com/quantserve/quantserve/ops/loss"
	_ "github.com/quantserve/quantserve/ops/norm"
	_ "github.com/quantserve/quantserve/ops/reduce"
)

// reductions are the reductions run beside the attention operators.
var reductions = []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
	"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}

// TestRandomInputs feeds the operators of this package, and the
// normalizations, reductions and losses of transformer graphs, inputs of
// random ranks, small (often empty) shapes and types: each must answer or
// return an input error, never panic.
func TestRandomInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(99, 1))
	rt := func(rank int) *tensor.Tensor {
		if r.IntN(8) == 0 {
			return nil
		}
		sh := make([]int, rank)
		n := 1
		for i := range sh {
			sh[i] = r.IntN(4)
			n *= sh[i]
		}
		switch r.IntN(6) {
		case 0:
			return tensor.From(sh, make([]bool, n))
		case 1:
			return tensor.From(sh, make([]int64, n))
		case 2:
			return tensor.From(sh, make([]float64, n))
		}
		return tensor.From(sh, randFloats(r, n, 0))
	}
	flag := func(name string) *onnxpb.Attribute { return attrInt(name, int64(r.IntN(2))) }
	for it := 0; it < 20000; it++ {
		at := &AttentionAttrs{IsCausal: r.IntN(2) == 0, QNumHeads: int64(r.IntN(4)), KVNumHeads: int64(r.IntN(3)), QKMatMulOutputMode: int64(r.IntN(4)), Softcap: float32(r.IntN(2))}
		in := make([]*tensor.Tensor, 7)
		for i := range in {
			in[i] = rt(r.IntN(5))
		}
		for i := 0; i < 3; i++ {
			if in[i] == nil {
				in[i] = rt(3 + r.IntN(2))
			}
			if in[i] == nil {
				in[i] = tensor.From([]int{1, 1, 1, 1}, []float32{1})
			}
		}
		for _, c := range []struct {
			what string
			n    opstest.Node
			in   []*tensor.Tensor
		}{
			{"Attention", attentionNode(at), in},
			{"FlexAttention", flexNode(nil, nil), in[:3]},
			{"quantserve.Attention", fusedNode(int64(1+r.IntN(3)), int64(1+r.IntN(3)), 1), in[:3]},
			{"RotaryEmbedding", opstest.Node{Op: "RotaryEmbedding", Opset: 23, Attrs: []*onnxpb.Attribute{
				flag("interleaved"), attrInt("num_heads", int64(r.IntN(3))), attrInt("rotary_embedding_dim", int64(r.IntN(4)))}}, in[:4]},
			{"LinearAttention", linearAttentionNode(2, 1, "gated_delta", 0), in[:6]},
			{"CausalConvWithState", opstest.Node{Op: "CausalConvWithState", Opset: 27, Outputs: 2,
				Attrs: []*onnxpb.Attribute{attrStr("activation", "none")}}, in[:4]},
			{"LayerNormalization", opstest.Node{Op: "LayerNormalization", Opset: 17, Outputs: 3,
				Attrs: []*onnxpb.Attribute{attrInt("axis", int64(r.IntN(5)-2))}}, in[:3]},
			{"RMSNormalization", opstest.Node{Op: "RMSNormalization", Opset: 23,
				Attrs: []*onnxpb.Attribute{attrInt("axis", int64(r.IntN(5)-2))}}, in[:2]},
			{"reduction", opstest.Node{Op: reductions[r.IntN(len(reductions))], Opset: 18,
				Attrs: []*onnxpb.Attribute{flag("keepdims"), flag("noop_with_empty_axes")}}, []*tensor.Tensor{in[0], in[3]}},
			{"loss", opstest.Node{Op: []string{"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}[r.IntN(2)], Opset: 13,
				Attrs: []*onnxpb.Attribute{attrStr("reduction", "mean")}}, in[:3]},
		} {
			op := compile(t, c.n, len(c.in))
			func() {
				defer func() {
					if e := recover(); e != nil {
						t.Fatalf("%s: panic %v on %v", c.what, e, c.in)
					}
				}()
				if _, err := op.Run(background(nil), c.in); err != nil && !errors.Is(err, ops.ErrInput) {
					t.Fatalf("%s: %v", c.what, err)
				}
			}()
		}
		func() {
			defer func() {
				if e := recover(); e != nil {
					t.Fatalf("Trace: panic %v on %v", e, in)
				}
			}()
			if _, err := Trace(at, in); err != nil && !errors.Is(err, ops.ErrInput) {
				t.Fatalf("Trace: %v", err)
			}
		}()
	}
}
