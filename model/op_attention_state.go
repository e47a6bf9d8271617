package model

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// The recurrent sequence mixers of opset 27 that replace softmax attention
// in hybrid models (Gated DeltaNet, Mamba): LinearAttention, a per-head
// matrix state updated token by token, and CausalConvWithState, the
// depthwise causal convolution in front of it. Both carry a state from one
// call to the next for incremental decoding. Computed in float32.

func init() {
	register(Descriptor{Type: "LinearAttention", Since: 27, Fold: true}, buildLinearAttention)
	register(Descriptor{Type: "CausalConvWithState", Since: 27, Fold: true}, buildCausalConv)
}

// LinearAttentionAttrs are LinearAttention's attributes.
type LinearAttentionAttrs struct {
	ChunkSize  int64   `onnx:"chunk_size" default:"64"` // a hint for chunked kernels; the result does not depend on it
	KVNumHeads int64   `onnx:"kv_num_heads"`
	QNumHeads  int64   `onnx:"q_num_heads"`
	Scale      float32 `onnx:"scale"` // 0: 1/sqrt(d_k)
	UpdateRule string  `onnx:"update_rule" default:"gated_delta"`
}

// buildLinearAttention implements LinearAttention: for each key/value
// head a d_k×d_v state S, from past_state or zeros, and for each token t
//
//	linear:      S = S + k⊗v
//	gated:       S = exp(g)·S + k⊗v
//	delta:       S = S + β·k⊗(v - Sᵀk)
//	gated_delta: S = exp(g)·S;  S = S + β·k⊗(v - Sᵀk)
//
// (exp(g) scales S's rows: g per key feature, or one per head), then
// o = scale·Sᵀq for each query head of the group.
func buildLinearAttention(n *node, at *LinearAttentionAttrs) (opFunc, error) {
	if err := n.checkArity(3, 6, 1, 2); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 3); err != nil {
		return nil, err
	}
	if at.QNumHeads <= 0 || at.KVNumHeads <= 0 || at.QNumHeads%at.KVNumHeads != 0 || at.QNumHeads > math.MaxInt32 {
		return nil, fmt.Errorf("q_num_heads %d must be a positive multiple of kv_num_heads %d", at.QNumHeads, at.KVNumHeads)
	}
	var gated, delta bool
	switch at.UpdateRule {
	case "linear":
	case "gated":
		gated = true
	case "delta":
		delta = true
	case "gated_delta":
		gated, delta = true, true
	default:
		return nil, fmt.Errorf("update_rule %q is not linear, gated, delta or gated_delta", at.UpdateRule)
	}
	hq, hkv := int(at.QNumHeads), int(at.KVNumHeads)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		get := func(i int) *tensor.Tensor {
			if i < len(in) {
				return in[i]
			}
			return nil
		}
		q, k, v, past, decay, beta := in[0], in[1], in[2], get(3), get(4), get(5)
		for _, x := range []*tensor.Tensor{q, k, v, past, decay, beta} {
			if x != nil && (!x.DType.IsFloat() || x.Rank() != 3 && x != past) {
				return nil, inputErrorf("LinearAttention takes rank-3 floating-point inputs, got %v%s", x.DType, tensor.ShapeString(x.Shape))
			}
		}
		if k.DType != q.DType || v.DType != q.DType {
			return nil, inputErrorf("LinearAttention: query, key and value types differ (%v, %v, %v)", q.DType, k.DType, v.DType)
		}
		b, t := q.Shape[0], q.Shape[1]
		if q.Shape[2]%hq != 0 || k.Shape[2]%hkv != 0 || v.Shape[2]%hkv != 0 {
			return nil, inputErrorf("LinearAttention: hidden sizes %d, %d, %d do not split into %d and %d heads", q.Shape[2], k.Shape[2], v.Shape[2], hq, hkv)
		}
		dk, dv := q.Shape[2]/hq, v.Shape[2]/hkv
		if !equalShape(k.Shape, []int{b, t, hkv * dk}) || !equalShape(v.Shape, []int{b, t, hkv * dv}) {
			return nil, inputErrorf("LinearAttention: query %s, key %s and value %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
		}
		if _, err := tensor.NumElements([]int{b, hkv, dk, dv}); err != nil {
			return nil, inputErrorf("LinearAttention state: %v", err)
		}
		stateType := q.DType
		if past != nil {
			if !equalShape(past.Shape, []int{b, hkv, dk, dv}) {
				return nil, inputErrorf("LinearAttention: past_state %s, want (%d, %d, %d, %d)", tensor.ShapeString(past.Shape), b, hkv, dk, dv)
			}
			stateType = past.DType
		}
		// Per-token gate widths: decay per key feature or per head, beta
		// per head or shared.
		gw, bw := 0, 0
		if gated {
			if decay == nil {
				return nil, inputErrorf("LinearAttention %q needs decay", at.UpdateRule)
			}
			switch {
			case equalShape(decay.Shape, []int{b, t, hkv * dk}):
				gw = dk
			case equalShape(decay.Shape, []int{b, t, hkv}):
				gw = 1
			default:
				return nil, inputErrorf("LinearAttention: decay %s, want (%d, %d, %d) or (%d, %d, %d)", tensor.ShapeString(decay.Shape), b, t, hkv*dk, b, t, hkv)
			}
		}
		if delta {
			if beta == nil {
				return nil, inputErrorf("LinearAttention %q needs beta", at.UpdateRule)
			}
			switch {
			case equalShape(beta.Shape, []int{b, t, hkv}):
				bw = hkv
			case equalShape(beta.Shape, []int{b, t, 1}):
				bw = 1
			default:
				return nil, inputErrorf("LinearAttention: beta %s, want (%d, %d, %d) or (%d, %d, 1)", tensor.ShapeString(beta.Shape), b, t, hkv, b, t)
			}
		}
		scale := float32(at.Scale)
		if scale == 0 {
			scale = float32(1 / math.Sqrt(float64(dk)))
		}
		qd, kd, vd := attnFloat32s(q), attnFloat32s(k), attnFloat32s(v)
		state := make([]float32, b*hkv*dk*dv)
		if past != nil {
			copy(state, attnFloat32s(past))
		}
		var gd, bd []float32
		if gated {
			gd = attnFloat32s(decay)
		}
		if delta {
			bd = attnFloat32s(beta)
		}
		out := make([]float32, b*t*hq*dv)
		rep := hq / hkv
		u := make([]float32, dv)
		for bi := 0; bi < b; bi++ {
			for g := 0; g < hkv; g++ {
				S := state[(bi*hkv+g)*dk*dv : (bi*hkv+g+1)*dk*dv]
				for ti := 0; ti < t; ti++ {
					tok := bi*t + ti
					kt := kd[(tok*hkv+g)*dk : (tok*hkv+g+1)*dk]
					vt := vd[(tok*hkv+g)*dv : (tok*hkv+g+1)*dv]
					if gated {
						gate := gd[tok*hkv*gw+g*gw : tok*hkv*gw+(g+1)*gw]
						for i := 0; i < dk; i++ {
							e := exp32(gate[min(i, gw-1)])
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
			{DType: q.DType, Shape: []int{b, t, hq * dv}, Data: lnRound(out, q.DType)},
			{DType: stateType, Shape: []int{b, hkv, dk, dv}, Data: lnRound(state, stateType)},
		}, nil
	}, nil
}

// CausalConvAttrs are CausalConvWithState's attributes.
type CausalConvAttrs struct {
	Activation string `onnx:"activation" default:"none"`
}

// buildCausalConv implements CausalConvWithState: per channel,
// out[t] = bias + Σ_i w[i]·x'[t+i] over x' = past_state (or k-1 zeros)
// followed by the input, optionally through SiLU; present_state is the
// last k-1 values of x'.
func buildCausalConv(n *node, at *CausalConvAttrs) (opFunc, error) {
	if err := n.checkArity(2, 4, 1, 2); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 2); err != nil {
		return nil, err
	}
	var silu bool
	switch at.Activation {
	case "none":
	case "silu", "swish":
		silu = true
	default:
		return nil, fmt.Errorf("activation %q is not none, silu or swish", at.Activation)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, w := in[0], in[1]
		var bias, past *tensor.Tensor
		if len(in) > 2 {
			bias = in[2]
		}
		if len(in) > 3 {
			past = in[3]
		}
		if err := sameType("CausalConvWithState", x, w, bias, past); err != nil {
			return nil, err
		}
		if !x.DType.IsFloat() || x.Rank() != 3 {
			return nil, inputErrorf("CausalConvWithState takes a rank-3 floating-point input, got %v%s", x.DType, tensor.ShapeString(x.Shape))
		}
		b, c, l := x.Shape[0], x.Shape[1], x.Shape[2]
		if w.Rank() != 3 || w.Shape[0] != c || w.Shape[1] != 1 || w.Shape[2] < 1 {
			return nil, inputErrorf("CausalConvWithState: weight %s, want (%d, 1, k >= 1)", tensor.ShapeString(w.Shape), c)
		}
		k := w.Shape[2]
		if bias != nil && !equalShape(bias.Shape, []int{c}) {
			return nil, inputErrorf("CausalConvWithState: bias %s, want (%d)", tensor.ShapeString(bias.Shape), c)
		}
		if past != nil && !equalShape(past.Shape, []int{b, c, k - 1}) {
			return nil, inputErrorf("CausalConvWithState: past_state %s, want (%d, %d, %d)", tensor.ShapeString(past.Shape), b, c, k-1)
		}
		xd, wd := attnFloat32s(x), attnFloat32s(w)
		var bd, pd []float32
		if bias != nil {
			bd = attnFloat32s(bias)
		}
		if past != nil {
			pd = attnFloat32s(past)
		}
		out := make([]float32, len(xd))
		present := make([]float32, b*c*(k-1))
		xp := make([]float32, k-1+l) // one channel's padded sequence
		for bi := 0; bi < b; bi++ {
			for ci := 0; ci < c; ci++ {
				ch := bi*c + ci
				clear(xp[:k-1])
				if pd != nil {
					copy(xp, pd[ch*(k-1):(ch+1)*(k-1)])
				}
				copy(xp[k-1:], xd[ch*l:(ch+1)*l])
				kw := wd[ci*k : (ci+1)*k]
				var b0 float32
				if bd != nil {
					b0 = bd[ci]
				}
				o := out[ch*l : (ch+1)*l]
				for t := range o {
					s := b0
					for i, wv := range kw {
						s += wv * xp[t+i]
					}
					if silu {
						s *= float32(sigmoid(float64(s)))
					}
					o[t] = s
				}
				copy(present[ch*(k-1):], xp[l:])
			}
		}
		return []*tensor.Tensor{
			{DType: x.DType, Shape: x.Shape, Data: lnRound(out, x.DType)},
			{DType: x.DType, Shape: []int{b, c, k - 1}, Data: lnRound(present, x.DType)},
		}, nil
	}, nil
}
