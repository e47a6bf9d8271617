package attention

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// linearAttentionNode is a LinearAttention node (two outputs).
func linearAttentionNode(hq, hkv int, rule string, scale float32) opstest.Node {
	return opstest.Node{Op: "LinearAttention", Opset: 27, Outputs: 2, Attrs: []*onnxpb.Attribute{
		attrInt("q_num_heads", int64(hq)), attrInt("kv_num_heads", int64(hkv)), attrStr("update_rule", rule), attrFloat("scale", scale),
	}}
}

// linearAttentionDefinition is the recurrence in float64, one token at a
// time, from a zero state: per key/value head g and token t,
//
//	S ← diag(exp(g_t))·S               (gated rules)
//	S ← S + β_t·k_t⊗(v_t − Sᵀk_t)      (delta rules; else S + k_t⊗v_t)
//	o_t = scale·Sᵀq_t                  for each query head of the group
//
// with decay per key feature (b, t, hkv·dk) and beta per head (b, t, hkv).
func linearAttentionDefinition(q, k, v, decay, beta []float32, b, T, hq, hkv, dk, dv int, rule string, scale float64) []float64 {
	gated := rule == "gated" || rule == "gated_delta"
	delta := rule == "delta" || rule == "gated_delta"
	out := make([]float64, b*T*hq*dv)
	for bi := 0; bi < b; bi++ {
		for g := 0; g < hkv; g++ {
			S := make([][]float64, dk)
			for i := range S {
				S[i] = make([]float64, dv)
			}
			for ti := 0; ti < T; ti++ {
				tok := bi*T + ti
				kt := func(i int) float64 { return float64(k[(tok*hkv+g)*dk+i]) }
				if gated {
					for i := 0; i < dk; i++ {
						e := math.Exp(float64(decay[(tok*hkv+g)*dk+i]))
						for j := range S[i] {
							S[i][j] *= e
						}
					}
				}
				u := make([]float64, dv)
				for j := range u {
					u[j] = float64(v[(tok*hkv+g)*dv+j])
					if delta {
						var sk float64
						for i := 0; i < dk; i++ {
							sk += S[i][j] * kt(i)
						}
						u[j] = float64(beta[tok*hkv+g]) * (u[j] - sk)
					}
				}
				for i := 0; i < dk; i++ {
					for j := range u {
						S[i][j] += kt(i) * u[j]
					}
				}
				for r := 0; r < hq/hkv; r++ {
					h := g*(hq/hkv) + r
					for j := 0; j < dv; j++ {
						var o float64
						for i := 0; i < dk; i++ {
							o += float64(q[(tok*hq+h)*dk+i]) * S[i][j]
						}
						out[(tok*hq+h)*dv+j] = scale * o
					}
				}
			}
		}
	}
	return out
}

// TestLinearAttentionIsCausalLinearAttention checks the "linear" rule
// against its closed form o_t = scale·Σ_{s<=t} (q_t·k_s)·v_s, every rule
// against the recurrence written out in float64, with grouped heads, and
// that decoding token by token with the state carried gives what one call
// over the sequence gives.
func TestLinearAttentionIsCausalLinearAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	b, T, hq, hkv, dk, dv := 2, 5, 4, 2, 3, 4
	q, k, v := randTensor(r, b, T, hq*dk), randTensor(r, b, T, hkv*dk), randTensor(r, b, T, hkv*dv)
	op := compiled(compile(t, linearAttentionNode(hq, hkv, "linear", 0.5), 3), nil)
	out, err := op([]*tensor.Tensor{q, k, v})
	if err != nil {
		t.Fatal(err)
	}
	qd, kd, vd, y := q.Data.([]float32), k.Data.([]float32), v.Data.([]float32), out[0].Data.([]float32)
	for bi := 0; bi < b; bi++ {
		for ti := 0; ti < T; ti++ {
			for h := 0; h < hq; h++ {
				g := h / (hq / hkv)
				for c := 0; c < dv; c++ {
					var want float64
					for si := 0; si <= ti; si++ {
						var dot float64
						for f := 0; f < dk; f++ {
							dot += float64(qd[((bi*T+ti)*hq+h)*dk+f]) * float64(kd[((bi*T+si)*hkv+g)*dk+f])
						}
						want += 0.5 * dot * float64(vd[((bi*T+si)*hkv+g)*dv+c])
					}
					if got := y[((bi*T+ti)*hq+h)*dv+c]; math.Abs(float64(got)-want) > 1e-5*(1+math.Abs(want)) {
						t.Fatalf("o[%d,%d,%d,%d] = %v, want %v", bi, ti, h, c, got, want)
					}
				}
			}
		}
	}
	decay, beta := randTensor(r, b, T, hkv*dk), randTensor(r, b, T, hkv)
	for i, x := range decay.Data.([]float32) { // gates in (0, 1), as models make them
		decay.Data.([]float32)[i] = -0.5 * x * x
	}
	for _, rule := range []string{"linear", "gated", "delta", "gated_delta"} {
		op := compiled(compile(t, linearAttentionNode(hq, hkv, rule, 0), 6), nil)
		all, err := op([]*tensor.Tensor{q, k, v, nil, decay, beta})
		if err != nil {
			t.Fatal(err)
		}
		want := linearAttentionDefinition(qd, kd, vd, decay.Data.([]float32), beta.Data.([]float32), b, T, hq, hkv, dk, dv, rule, 1/math.Sqrt(float64(dk)))
		compareOutputs(t, rule, all[:1], []*tensor.Tensor{tensor.From([]int{b, T, hq * dv}, want)}, 1e-5)
		var state *tensor.Tensor
		for ti := 0; ti < T; ti++ {
			step := func(x *tensor.Tensor) *tensor.Tensor {
				w := x.Shape[2]
				d := make([]float32, b*w)
				for bi := 0; bi < b; bi++ {
					copy(d[bi*w:], x.Data.([]float32)[(bi*T+ti)*w:(bi*T+ti+1)*w])
				}
				return tensor.From([]int{b, 1, w}, d)
			}
			o, err := op([]*tensor.Tensor{step(q), step(k), step(v), state, step(decay), step(beta)})
			if err != nil {
				t.Fatal(err)
			}
			state = o[1]
			for bi := 0; bi < b; bi++ {
				for j := 0; j < hq*dv; j++ {
					g, w := o[0].Data.([]float32)[bi*hq*dv+j], all[0].Data.([]float32)[(bi*T+ti)*hq*dv+j]
					if math.Abs(float64(g-w)) > 1e-5*(1+math.Abs(float64(w))) {
						t.Fatalf("%s: token %d decoded alone %v, in the sequence %v", rule, ti, g, w)
					}
				}
			}
		}
	}
	if _, _, err := opstest.Compile(linearAttentionNode(3, 2, "linear", 0), 3); err == nil {
		t.Fatal("3 query heads over 2 key heads accepted")
	}
	if _, _, err := opstest.Compile(linearAttentionNode(2, 2, "lstm", 0), 3); err == nil {
		t.Fatal("update_rule lstm accepted")
	}
	opGD := compiled(compile(t, linearAttentionNode(hq, hkv, "gated_delta", 0), 6), nil)
	for name, in := range map[string][]*tensor.Tensor{
		"no decay":       {q, k, v},
		"no beta":        {q, k, v, nil, decay},
		"decay shape":    {q, k, v, nil, randTensor(r, b, T, 5), beta},
		"beta shape":     {q, k, v, nil, decay, randTensor(r, b, T, 3)},
		"past shape":     {q, k, v, randTensor(r, b, hkv, dk, dv+1), decay, beta},
		"value type":     {q, k, to64(v), nil, decay, beta},
		"key length":     {q, randTensor(r, b, T+1, hkv*dk), v, nil, decay, beta},
		"rank 4 query":   {randTensor(r, b, T, hq, dk), k, v, nil, decay, beta},
		"hidden size":    {randTensor(r, b, T, hq*dk+1), k, v, nil, decay, beta},
		"integer values": {q, k, tensor.From([]int{b, T, hkv * dv}, make([]int64, b*T*hkv*dv)), nil, decay, beta},
	} {
		if _, err := opGD(in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}
