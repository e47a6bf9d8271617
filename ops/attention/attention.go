package attention

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Attention (opsets 23 and 24; 24 adds nonpad_kv_seqlen): scaled
// dot-product attention over heads, Y = softmax(scale·QKᵀ + bias)·V, with
// grouped key/value heads (query head h reads key/value head
// h / (q_num_heads / kv_num_heads)). Each key/value head is packed once
// for all the query heads that share it; the scores of one head are held
// a block of query rows at a time.

// Attention is the ai.onnx Attention operator: six inputs at opset 23,
// seven (nonpad_kv_seqlen) from 24.
var Attention = ops.Op{
	ops.Register(ops.Descriptor{Type: "Attention", Since: 23, Until: 23, Fold: true}, func(n *ops.Node, at *AttentionAttrs) (ops.Operator, error) {
		return buildAttention(n, at, 6)
	}),
	ops.Register(ops.Descriptor{Type: "Attention", Since: 24, Fold: true}, func(n *ops.Node, at *AttentionAttrs) (ops.Operator, error) {
		return buildAttention(n, at, 7)
	}),
}

// AttentionAttrs are Attention's attributes.
type AttentionAttrs struct {
	IsCausal           bool     `onnx:"is_causal"`
	KVNumHeads         int64    `onnx:"kv_num_heads"`
	QNumHeads          int64    `onnx:"q_num_heads"`
	QKMatMulOutputMode int64    `onnx:"qk_matmul_output_mode"`
	Scale              *float32 `onnx:"scale"` // nil: 1/sqrt(head_size)
	Softcap            float32  `onnx:"softcap"`
	SoftmaxPrecision   *int64   `onnx:"softmax_precision"`
}

// attentionOp is a compiled Attention node: its attributes and which of
// its optional outputs the graph reads.
type attentionOp struct {
	at                  *AttentionAttrs
	wantPresent, wantQK bool
}

// buildAttention compiles an Attention node of at most maxIn inputs.
func buildAttention(n *ops.Node, at *AttentionAttrs, maxIn int) (*attentionOp, error) {
	if err := n.CheckArity(3, maxIn, 1, 4); err != nil {
		return nil, err
	}
	if at.QKMatMulOutputMode < 0 || at.QKMatMulOutputMode > 3 {
		return nil, fmt.Errorf("qk_matmul_output_mode %d is not 0 to 3", at.QKMatMulOutputMode)
	}
	if at.Softcap < 0 || at.Softcap != at.Softcap {
		return nil, fmt.Errorf("softcap %v is negative", at.Softcap)
	}
	if at.QNumHeads < 0 || at.KVNumHeads < 0 {
		return nil, fmt.Errorf("negative head counts %d, %d", at.QNumHeads, at.KVNumHeads)
	}
	if p := at.SoftmaxPrecision; p != nil {
		switch onnxpb.DataType(*p) {
		case onnxpb.Float, onnxpb.Float16, onnxpb.BFloat16, onnxpb.Double:
		default:
			return nil, ops.Unsupportedf("Attention softmax_precision %v", onnxpb.DataType(*p))
		}
	}
	outs := n.Outputs
	return &attentionOp{
		at:          at,
		wantPresent: len(outs) > 1 && outs[1] != "" || len(outs) > 2 && outs[2] != "",
		wantQK:      len(outs) > 3 && outs[3] != "",
	}, nil
}

// Run computes Y and, when the graph reads them, present_key,
// present_value and qk_matmul_output.
func (op *attentionOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return op.run(c, in, 0)
}

// run is Run on Q, K and V of rank 3 that are the three column blocks of
// one tensor of rows packed values wide (0: three tensors of their own).
func (op *attentionOp) run(c *ops.Context, in []*tensor.Tensor, packed int) ([]*tensor.Tensor, error) {
	a := &attentionCall{packed: packed,
		at: op.at, q: in[0], k: in[1], v: in[2],
		mask: ops.Optional(in, 3), pastK: ops.Optional(in, 4), pastV: ops.Optional(in, 5), nonpad: ops.Optional(in, 6),
		wantPresent: op.wantPresent, wantQK: op.wantQK,
		soft: c.Engine().Table().SoftmaxRow, pace: c,
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	if a.q.DType == tensor.Float64 {
		return attentionIn(a, float64s, refKernels[float64])
	}
	return attentionIn(a, float32s, f32Kernels)
}

// engineKernels returns the float kernels of engine e.
func engineKernels(e *gemm.Engine) func(attnShape, attnView[float32], attnView[float32]) attnKernels[float32] {
	return func(sh attnShape, k, v attnView[float32]) attnKernels[float32] { return newAttnF32(e, k, v, sh) }
}

// attentionCall is one run of an Attention node.
type attentionCall struct {
	at                                  *AttentionAttrs
	q, k, v, mask, pastK, pastV, nonpad *tensor.Tensor
	wantPresent, wantQK                 bool
	chunk                               int // scores held at a time; 0: attnChunk
	// soft runs float32 rows: the SoftmaxRow of the run's engine.
	soft func([]float32, float32)
	pace *ops.Context // nil: the run never stops early

	sh    attnShape
	rank3 bool
	past  int
	// packed, when not 0, is the row stride of rank-3 Q, K and V, the
	// column blocks of one tensor in that order (the tensors given share
	// its values and have each block's shape).
	packed int
}

// check validates the inputs' types and shapes and works out the sizes.
func (a *attentionCall) check() error {
	q, k, v := a.q, a.k, a.v
	for _, x := range []*tensor.Tensor{q, k, v} {
		if !x.DType.IsFloat() {
			return ops.InputErrorf("Attention takes floating-point Q, K and V, got %v", x.DType)
		}
	}
	if k.DType != q.DType {
		return ops.InputErrorf("Attention: K is %v, Q is %v", k.DType, q.DType)
	}
	if q.Rank() != k.Rank() || q.Rank() != v.Rank() || q.Rank() != 3 && q.Rank() != 4 {
		return ops.InputErrorf("Attention takes Q, K and V all of rank 3 or all of rank 4, got %s, %s, %s", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
	}
	sh := &a.sh
	if q.Rank() == 4 {
		sh.b, sh.hq, sh.sq, sh.d = q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
		sh.hkv, sh.t = k.Shape[1], k.Shape[2]
		if k.Shape[0] != sh.b || k.Shape[3] != sh.d || v.Shape[0] != sh.b || v.Shape[1] != sh.hkv || v.Shape[2] != sh.t {
			return ops.InputErrorf("Attention: Q %s, K %s and V %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
		}
		sh.dv = v.Shape[3]
		if a.at.QNumHeads > 0 && int64(sh.hq) != a.at.QNumHeads || a.at.KVNumHeads > 0 && int64(sh.hkv) != a.at.KVNumHeads {
			return ops.InputErrorf("Attention: Q and K have %d and %d heads, the node says %d and %d", sh.hq, sh.hkv, a.at.QNumHeads, a.at.KVNumHeads)
		}
	} else {
		a.rank3 = true
		if a.at.QNumHeads <= 0 || a.at.KVNumHeads <= 0 {
			return ops.InputErrorf("Attention on rank-3 inputs needs q_num_heads and kv_num_heads")
		}
		if a.at.QNumHeads > math.MaxInt32 || a.at.KVNumHeads > math.MaxInt32 {
			return ops.InputErrorf("Attention: too many heads")
		}
		sh.hq, sh.hkv = int(a.at.QNumHeads), int(a.at.KVNumHeads)
		sh.b, sh.sq, sh.t = q.Shape[0], q.Shape[1], k.Shape[1]
		if q.Shape[2]%sh.hq != 0 || k.Shape[2]%sh.hkv != 0 || v.Shape[2]%sh.hkv != 0 {
			return ops.InputErrorf("Attention: hidden sizes %d, %d, %d do not split into %d and %d heads", q.Shape[2], k.Shape[2], v.Shape[2], sh.hq, sh.hkv)
		}
		sh.d, sh.dv = q.Shape[2]/sh.hq, v.Shape[2]/sh.hkv
		if k.Shape[0] != sh.b || v.Shape[0] != sh.b || v.Shape[1] != sh.t || k.Shape[2]/sh.hkv != sh.d {
			return ops.InputErrorf("Attention: Q %s, K %s and V %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
		}
	}
	if sh.hkv == 0 || sh.hq%sh.hkv != 0 {
		return ops.InputErrorf("Attention: %d query heads do not group over %d key/value heads", sh.hq, sh.hkv)
	}
	if (a.pastK == nil) != (a.pastV == nil) {
		return ops.InputErrorf("Attention takes past_key and past_value together")
	}
	if a.pastK != nil {
		pk, pv := a.pastK, a.pastV
		if pk.DType != k.DType || pv.DType != v.DType {
			return ops.InputErrorf("Attention: past key/value types %v, %v differ from K and V's", pk.DType, pv.DType)
		}
		if pk.Rank() != 4 || pv.Rank() != 4 || pk.Shape[0] != sh.b || pk.Shape[1] != sh.hkv || pk.Shape[3] != sh.d ||
			pv.Shape[0] != sh.b || pv.Shape[1] != sh.hkv || pv.Shape[2] != pk.Shape[2] || pv.Shape[3] != sh.dv {
			return ops.InputErrorf("Attention: past_key %s and past_value %s do not fit (%d, %d, past, %d|%d)", tensor.ShapeString(pk.Shape), tensor.ShapeString(pv.Shape), sh.b, sh.hkv, sh.d, sh.dv)
		}
		a.past = pk.Shape[2]
		sh.t += a.past
	}
	if _, err := tensor.NumElements([]int{sh.b, sh.hq, sh.sq, sh.t}); err != nil {
		return ops.InputErrorf("Attention: %v", err)
	}
	if _, err := tensor.NumElements([]int{sh.b, sh.hq, sh.sq, sh.dv}); err != nil {
		return ops.InputErrorf("Attention: %v", err)
	}
	if a.mask != nil && a.mask.DType != tensor.Bool && a.mask.DType != q.DType {
		return ops.InputErrorf("Attention: attn_mask must be BOOL or %v, got %v", q.DType, a.mask.DType)
	}
	if np := a.nonpad; np != nil {
		vals, ok := np.Data.([]int64)
		if !ok || np.Rank() != 1 || len(vals) != sh.b {
			return ops.InputErrorf("Attention: nonpad_kv_seqlen must be INT64 of shape (%d), got %v%s", sh.b, np.DType, tensor.ShapeString(np.Shape))
		}
		for _, x := range vals {
			if x < 0 || x > int64(sh.t) {
				return ops.InputErrorf("Attention: nonpad_kv_seqlen %d is not in [0, %d]", x, sh.t)
			}
		}
	}
	return nil
}
