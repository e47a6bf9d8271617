package attention

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// Forward is an Attention node's forward pass recomputed in float64 for a
// backward pass. Q is (B, QHeads, QLen, HeadSize), K (B, KVHeads, Len,
// HeadSize) and V (B, KVHeads, Len, VHeadSize), all head-major with the
// past prepended (Len = Past + this step's keys); Scores are the scaled
// products before softcap and Probs the softmax, both (B, QHeads, QLen,
// Len). Query head h reads key/value head h / (QHeads / KVHeads).
type Forward struct {
	B, QHeads, KVHeads, QLen, Len, HeadSize, VHeadSize, Past int
	Rank3                                                    bool // the inputs are (batch, seq, heads·size)
	Scale, Softcap                                           float64
	Q, K, V, Scores, Probs                                   []float64
}

// Trace recomputes the forward pass of an Attention node with attributes
// at on inputs in (as the node received them).
func Trace(at *AttentionAttrs, in []*tensor.Tensor) (*Forward, error) {
	get := func(i int) *tensor.Tensor {
		if i >= len(in) || in[i] == nil {
			return nil
		}
		if in[i].DType.IsFloat() {
			t, _ := tensorops.CastTo(in[i], tensor.Float64)
			return t
		}
		return in[i]
	}
	if len(in) < 3 || in[0] == nil || in[1] == nil || in[2] == nil {
		return nil, ops.InputErrorf("Attention takes Q, K and V")
	}
	a := &attentionCall{at: at, q: get(0), k: get(1), v: get(2), mask: get(3), pastK: get(4), pastV: get(5), nonpad: get(6), wantPresent: true, wantQK: true}
	if err := a.check(); err != nil {
		return nil, err
	}
	modes := *at
	modes.QKMatMulOutputMode = 0
	a.at = &modes
	scores, err := attentionIn(a, float64s, refKernels[float64])
	if err != nil {
		return nil, err
	}
	modes.QKMatMulOutputMode = 3
	probs, err := attentionIn(a, float64s, refKernels[float64])
	if err != nil {
		return nil, err
	}
	sh := a.sh
	f := &Forward{
		B: sh.b, QHeads: sh.hq, KVHeads: sh.hkv, QLen: sh.sq, Len: sh.t, HeadSize: sh.d, VHeadSize: sh.dv, Past: a.past,
		Rank3: a.rank3, Softcap: float64(at.Softcap), Scale: 1 / math.Sqrt(float64(sh.d)),
		K: float64s(probs[1]), V: float64s(probs[2]), Scores: float64s(scores[3]), Probs: float64s(probs[3]),
	}
	if at.Scale != nil {
		f.Scale = float64(*at.Scale)
	}
	f.Q = float64s(a.q)
	if a.rank3 {
		f.Q = concatHeads(nil, seqMajor(f.Q, sh.hq, sh.sq, sh.d), sh.b, sh.hq, 0, sh.sq, sh.d)
	}
	return f, nil
}
