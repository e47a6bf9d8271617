package attention

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// LinearAttention and CausalConvWithState (causal_conv.go) are the
// recurrent sequence mixers of opset 27 that replace softmax attention in
// hybrid models (Gated DeltaNet, Mamba). Both carry a state from one call
// to the next for incremental decoding, and compute in float32.

func init() {
	ops.Register(ops.Descriptor{Type: "LinearAttention", Since: 27, Fold: true}, buildLinearAttention)
}

// LinearAttentionAttrs are LinearAttention's attributes.
type LinearAttentionAttrs struct {
	ChunkSize  int64   `onnx:"chunk_size" default:"64"` // a hint for chunked kernels; the result does not depend on it
	KVNumHeads int64   `onnx:"kv_num_heads"`
	QNumHeads  int64   `onnx:"q_num_heads"`
	Scale      float32 `onnx:"scale"` // 0: 1/sqrt(d_k)
	UpdateRule string  `onnx:"update_rule" default:"gated_delta"`
}

// linearAttention implements LinearAttention: for each key/value head a
// d_k×d_v state S, from past_state or zeros, and for each token t
//
//	linear:      S = S + k⊗v
//	gated:       S = exp(g)·S + k⊗v
//	delta:       S = S + β·k⊗(v - Sᵀk)
//	gated_delta: S = exp(g)·S;  S = S + β·k⊗(v - Sᵀk)
//
// (exp(g) scales S's rows: g per key feature, or one per head), then
// o = scale·Sᵀq for each query head of the group.
type linearAttention struct {
	rule         string
	gated, delta bool
	hq, hkv      int
	scale        float32 // 0: 1/sqrt(d_k)
}

func buildLinearAttention(n *ops.Node, at *LinearAttentionAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 6, 1, 2); err != nil {
		return nil, err
	}
	if at.QNumHeads <= 0 || at.KVNumHeads <= 0 || at.QNumHeads%at.KVNumHeads != 0 || at.QNumHeads > math.MaxInt32 {
		return nil, fmt.Errorf("q_num_heads %d must be a positive multiple of kv_num_heads %d", at.QNumHeads, at.KVNumHeads)
	}
	op := &linearAttention{rule: at.UpdateRule, hq: int(at.QNumHeads), hkv: int(at.KVNumHeads), scale: at.Scale}
	switch at.UpdateRule {
	case "linear":
	case "gated":
		op.gated = true
	case "delta":
		op.delta = true
	case "gated_delta":
		op.gated, op.delta = true, true
	default:
		return nil, fmt.Errorf("update_rule %q is not linear, gated, delta or gated_delta", at.UpdateRule)
	}
	return op, nil
}

func (op *linearAttention) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	hq, hkv, gated, delta := op.hq, op.hkv, op.gated, op.delta
	q, k, v, past, decay, beta := in[0], in[1], in[2], ops.Optional(in, 3), ops.Optional(in, 4), ops.Optional(in, 5)
	for _, x := range []*tensor.Tensor{q, k, v, past, decay, beta} {
		if x != nil && (!x.DType.IsFloat() || x.Rank() != 3 && x != past) {
			return nil, ops.InputErrorf("LinearAttention takes rank-3 floating-point inputs, got %v%s", x.DType, tensor.ShapeString(x.Shape))
		}
	}
	if k.DType != q.DType || v.DType != q.DType {
		return nil, ops.InputErrorf("LinearAttention: query, key and value types differ (%v, %v, %v)", q.DType, k.DType, v.DType)
	}
	b, t := q.Shape[0], q.Shape[1]
	if q.Shape[2]%hq != 0 || k.Shape[2]%hkv != 0 || v.Shape[2]%hkv != 0 {
		return nil, ops.InputErrorf("LinearAttention: hidden sizes %d, %d, %d do not split into %d and %d heads", q.Shape[2], k.Shape[2], v.Shape[2], hq, hkv)
	}
	dk, dv := q.Shape[2]/hq, v.Shape[2]/hkv
	if !ops.EqualShape(k.Shape, []int{b, t, hkv * dk}) || !ops.EqualShape(v.Shape, []int{b, t, hkv * dv}) {
		return nil, ops.InputErrorf("LinearAttention: query %s, key %s and value %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
	}
	if _, err := tensor.NumElements([]int{b, hkv, dk, dv}); err != nil {
		return nil, ops.InputErrorf("LinearAttention state: %v", err)
	}
	stateType := q.DType
	if past != nil {
		if !ops.EqualShape(past.Shape, []int{b, hkv, dk, dv}) {
			return nil, ops.InputErrorf("LinearAttention: past_state %s, want (%d, %d, %d, %d)", tensor.ShapeString(past.Shape), b, hkv, dk, dv)
		}
		stateType = past.DType
	}
	// Per-token gate widths: decay per key feature or per head, beta per
	// head or shared.
	gw, bw := 0, 0
	if gated {
		if decay == nil {
			return nil, ops.InputErrorf("LinearAttention %q needs decay", op.rule)
		}
		switch {
		case ops.EqualShape(decay.Shape, []int{b, t, hkv * dk}):
			gw = dk
		case ops.EqualShape(decay.Shape, []int{b, t, hkv}):
			gw = 1
		default:
			return nil, ops.InputErrorf("LinearAttention: decay %s, want (%d, %d, %d) or (%d, %d, %d)", tensor.ShapeString(decay.Shape), b, t, hkv*dk, b, t, hkv)
		}
	}
	if delta {
		if beta == nil {
			return nil, ops.InputErrorf("LinearAttention %q needs beta", op.rule)
		}
		switch {
		case ops.EqualShape(beta.Shape, []int{b, t, hkv}):
			bw = hkv
		case ops.EqualShape(beta.Shape, []int{b, t, 1}):
			bw = 1
		default:
			return nil, ops.InputErrorf("LinearAttention: beta %s, want (%d, %d, %d) or (%d, %d, 1)", tensor.ShapeString(beta.Shape), b, t, hkv, b, t)
		}
	}
	scale := op.scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(dk)))
	}
	qd, kd, vd := float32s(q), float32s(k), float32s(v)
	state := make([]float32, b*hkv*dk*dv)
	if past != nil {
		copy(state, float32s(past))
	}
	var gd, bd []float32
	if gated {
		gd = float32s(decay)
	}
	if delta {
		bd = float32s(beta)
	}
	out := make([]float32, b*t*hq*dv)
	rep := hq / hkv
	u := make([]float32, dv)
	pace := c
	for bi := 0; bi < b; bi++ {
		for g := 0; g < hkv; g++ {
			S := state[(bi*hkv+g)*dk*dv : (bi*hkv+g+1)*dk*dv]
			for ti := 0; ti < t; ti++ {
				if err := pace.Tick((rep + 3) * dk * dv); err != nil {
					return nil, err
				}
				tok := bi*t + ti
				kt := kd[(tok*hkv+g)*dk : (tok*hkv+g+1)*dk]
				vt := vd[(tok*hkv+g)*dv : (tok*hkv+g+1)*dv]
				if gated {
					gate := gd[tok*hkv*gw+g*gw : tok*hkv*gw+(g+1)*gw]
					for i := 0; i < dk; i++ {
						e := ops.Exp32(gate[min(i, gw-1)])
						row := S[i*dv : (i+1)*dv]
						for j := range row {
							row[j] *= e
						}
					}
				}
				if delta {
					bt := bd[tok*bw+min(g, bw-1)]
					copy(u, vt) // u = β·(v - Sᵀk)
					for i, kv := range kt {
						row := S[i*dv : (i+1)*dv]
						for j, s := range row {
							u[j] -= s * kv
						}
					}
					for j := range u {
						u[j] *= bt
					}
					vt = u
				}
				for i, kv := range kt { // S += k⊗u
					row := S[i*dv : (i+1)*dv]
					for j, x := range vt {
						row[j] += kv * x
					}
				}
				for r := 0; r < rep; r++ {
					h := g*rep + r
					qt := qd[(tok*hq+h)*dk : (tok*hq+h+1)*dk]
					o := out[(tok*hq+h)*dv : (tok*hq+h+1)*dv]
					for i, qv := range qt { // o = scale·Sᵀq
						row := S[i*dv : (i+1)*dv]
						for j, s := range row {
							o[j] += qv * s
						}
					}
					for j := range o {
						o[j] *= scale
					}
				}
			}
		}
	}
	return []*tensor.Tensor{
		{DType: q.DType, Shape: []int{b, t, hq * dv}, Data: ops.RoundFloat32s(out, q.DType)},
		{DType: stateType, Shape: []int{b, hkv, dk, dv}, Data: ops.RoundFloat32s(state, stateType)},
	}, nil
}
