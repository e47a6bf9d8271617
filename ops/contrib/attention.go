package contrib

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "Attention", Since: 1, Fold: true}, buildAttention)
}

// AttentionAttrs are Attention's attributes.
type AttentionAttrs struct {
	NumHeads int64 `onnx:"num_heads"`
	// QKVHiddenSizes are the hidden sizes of Q, K and V (the first two
	// equal); nil: a third of the weights' columns each.
	QKVHiddenSizes  []int64 `onnx:"qkv_hidden_sizes"`
	Unidirectional  int64   `onnx:"unidirectional"`
	MaskFilterValue float32 `onnx:"mask_filter_value" default:"-10000"`
	// Scale multiplies the products of queries and keys; 0, the default,
	// stands for 1/√head_size.
	Scale                  float32 `onnx:"scale"`
	DoRotary               int64   `onnx:"do_rotary"`
	RotaryEmbeddingDim     int64   `onnx:"rotary_embedding_dim"`
	PastPresentShareBuffer int64   `onnx:"past_present_share_buffer"`
}

// The inputs of Attention.
const (
	attInput = iota
	attWeights
	attBias
	attMask
	attPast
	attAttnBias
	attPastSeqLen
)

// attention implements com.microsoft's Attention, the self-attention of
// BERT and GPT-2 that ONNX Runtime's transformer optimizer fuses: the
// input [batch, sequence, input_hidden] projected by the merged weights
// [input_hidden, hidden + hidden + v_hidden] plus the bias into queries,
// keys and values, split into num_heads heads, and for batch item b, head
// h and query i
//
//	output[b, i, h] = softmax(scale·Q[b,h,i]·K[b,h]ᵀ + attention_bias[b,h,i] + mask[b,i])·V[b,h]
//
// with K and V the keys and values of past followed by those of the run
// (total_sequence = past_sequence + sequence), and scale 1/√head_size
// unless the attribute gives it. hidden and v_hidden are those of
// qkv_hidden_sizes, or a third of the weights' columns each.
//
// The inputs, as ONNX Runtime's CPU kernel takes them: bias [hidden +
// hidden + v_hidden] (absent: zeros); past [2, batch, num_heads,
// past_sequence, head_size], the keys then the values of earlier runs
// (hidden = v_hidden); attention_bias [batch or 1, num_heads or 1,
// sequence, total_sequence], not with a past; mask_index (INT32)
// [batch], the number of keys each batch item attends to, [2·batch],
// those numbers followed by the first key each attends to, [3·batch + 2],
// whose first batch values are those numbers (the CPU kernel reads
// nothing else of it), [batch, total_sequence] or [batch, sequence,
// total_sequence], a key attended where the value is above 0, and
// [batch, 1] or [1, 1], which masks nothing. A key not attended gets
// mask_filter_value added to its score. unidirectional makes query i
// attend to keys up to past_sequence + i only (the lowest float32 added
// to the others' scores, as ONNX Runtime masks them). The outputs are
// output [batch, sequence, v_hidden] and present [2, batch, num_heads,
// total_sequence, head_size], the keys and values attended.
//
// When the weights are a constant FLOAT tensor, a matmul.Linear holds
// them: the projection runs on the int8 kernels when the model is loaded
// with quantization and the weights are large enough, as ai.onnx MatMul's
// does; otherwise it runs on the engine's float kernels. Each projected
// value is the float32 product plus the bias, each score the float32
// product of query and key times scale, plus the attention bias, plus
// the mask; FLOAT16 inputs are computed in float32 and the outputs
// rounded once. Megatron's 4-D mask_index and do_rotary (which ONNX
// Runtime's CPU kernel refuses too) and past_present_share_buffer (past
// and present in one buffer) are refused; the past_sequence_length
// input, which only past_present_share_buffer reads, is not read.
type attention struct {
	heads   int
	qkv     []int // hidden sizes of Q, K and V; nil: a third of the weights' columns each
	filter  float32
	scale   float32 // 0: 1/√head_size
	causal  bool
	lin     *matmul.Linear // the weights, when a constant FLOAT tensor
	outs    int            // how many outputs the node has
	present bool           // whether the graph reads present
}

func buildAttention(n *ops.Node, at *AttentionAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 7, 1, 2); err != nil {
		return nil, err
	}
	if at.NumHeads <= 0 || at.NumHeads > 1<<20 {
		return nil, fmt.Errorf("num_heads %d is out of range (it is required and positive)", at.NumHeads)
	}
	switch {
	case at.Unidirectional != 0 && at.Unidirectional != 1:
		return nil, ops.Unsupportedf("Attention unidirectional=%d (it is 0 or 1)", at.Unidirectional)
	case at.DoRotary != 0:
		return nil, ops.Unsupportedf("Attention do_rotary=%d (rotary embedding inside the attention)", at.DoRotary)
	case at.PastPresentShareBuffer != 0:
		return nil, ops.Unsupportedf("Attention past_present_share_buffer=%d (past and present sharing one buffer)", at.PastPresentShareBuffer)
	}
	op := &attention{heads: int(at.NumHeads), filter: at.MaskFilterValue, scale: at.Scale, causal: at.Unidirectional == 1,
		outs: len(n.Outputs), present: len(n.Outputs) > 1 && n.Outputs[1] != ""}
	if s := at.QKVHiddenSizes; s != nil {
		if len(s) != 3 {
			return nil, fmt.Errorf("qkv_hidden_sizes has %d values, want 3", len(s))
		}
		for _, h := range s {
			if h <= 0 || h > 1<<30 || h%at.NumHeads != 0 {
				return nil, fmt.Errorf("qkv_hidden_sizes %v: each must be a positive multiple of num_heads %d", s, at.NumHeads)
			}
		}
		if s[0] != s[1] {
			return nil, fmt.Errorf("qkv_hidden_sizes %v: the hidden sizes of Q and K differ", s)
		}
		op.qkv = []int{int(s[0]), int(s[1]), int(s[2])}
		if op.present && s[1] != s[2] {
			return nil, ops.Unsupportedf("Attention's present output with K and V of different hidden sizes (qkv_hidden_sizes %v)", s)
		}
	}
	if w := n.Const(attWeights); w != nil {
		if w.Rank() != 2 {
			return nil, fmt.Errorf("the weights must be 2-D, got %s", tensor.ShapeString(w.Shape))
		}
		if _, _, err := op.hidden(w.Shape[1]); err != nil {
			return nil, err
		}
		if w.DType == tensor.Float32 {
			var err error
			if op.lin, err = matmul.NewLinear(n, attWeights, w, n.QDQInput(attWeights)); err != nil {
				return nil, err
			}
		}
	}
	return op, nil
}

// hidden returns the hidden sizes of Q (and K) and V for weights of cols
// columns.
func (op *attention) hidden(cols int) (hq, hv int, err error) {
	if op.qkv != nil {
		if cols != op.qkv[0]+op.qkv[1]+op.qkv[2] {
			return 0, 0, ops.InputErrorf("Attention's weights have %d columns, want %d (the sum of qkv_hidden_sizes %v)", cols, op.qkv[0]+op.qkv[1]+op.qkv[2], op.qkv)
		}
		return op.qkv[0], op.qkv[2], nil
	}
	if cols%3 != 0 || cols/3%op.heads != 0 || cols == 0 {
		return 0, 0, ops.InputErrorf("Attention's weights have %d columns: without qkv_hidden_sizes they must be 3·hidden, hidden a positive multiple of num_heads %d", cols, op.heads)
	}
	return cols / 3, cols / 3, nil
}

// attLayout is the geometry of one run.
type attLayout struct {
	batch, seq, past, in int // in: the input's hidden size
	heads, hd, hv        int // head sizes of Q and K, and of V
}

func (l attLayout) total() int { return l.past + l.seq }
func (l attLayout) cols() int  { return l.heads * (2*l.hd + l.hv) }

// mha returns the layout's batch, heads, sequence and past as
// MultiHeadAttention's helpers take them.
func (l attLayout) mha() mhaLayout {
	return mhaLayout{batch: l.batch, seq: l.seq, kvSeq: l.seq, past: l.past, heads: l.heads, hd: l.hd, hv: l.hv}
}

func (op *attention) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	const name = "Attention"
	opt := func(i int) *tensor.Tensor { return ops.Optional(in, i) }
	x, w := in[attInput], opt(attWeights)
	if op.lin != nil {
		w = nil // held by the kernels
	}
	bias, past := opt(attBias), opt(attPast)
	if err := sameType(name, x, w, bias, past, opt(attAttnBias)); err != nil {
		return nil, err
	}
	if past != nil && opt(attAttnBias) != nil {
		return nil, ops.InputErrorf("%s takes no attention_bias with a past", name)
	}
	l, err := op.layout(x, w, bias, past)
	if err != nil {
		return nil, err
	}
	adjust, err := op.adjuster(l, opt(attMask), opt(attAttnBias))
	if err != nil {
		return nil, err
	}
	proj, err := op.project(c, l, x, w)
	if err != nil {
		return nil, err
	}
	q, kv, err := op.split(l, proj, bias, past)
	if err != nil {
		return nil, err
	}
	nk := l.batch * l.heads * l.total() * l.hd
	k, v := kv[:nk], kv[nk:]
	scale := op.scale
	if scale == 0 {
		scale = 1 / float32(math.Sqrt(float64(l.hd)))
	}
	a := &sdpa{batch: l.batch, heads: l.heads, seqQ: l.seq, seqKV: l.total(), headQK: l.hd, headV: l.hv,
		scale: scale, q: q, k: k, v: v, adjust: adjust}
	y := make([]float32, l.batch*l.seq*l.heads*l.hv)
	if err := a.run(c, y); err != nil {
		return nil, err
	}
	outs := []*tensor.Tensor{result(x.DType, []int{l.batch, l.seq, l.heads * l.hv}, y), nil}
	if op.present {
		outs[1] = result(x.DType, []int{2, l.batch, l.heads, l.total(), l.hd}, kv)
	}
	return outs[:op.outs], nil
}

// layout checks the shapes of the input, the weights (w, nil when the
// kernels hold them), the bias and the past against num_heads and each
// other.
func (op *attention) layout(x, w, bias, past *tensor.Tensor) (attLayout, error) {
	const name = "Attention"
	shape := tensor.ShapeString
	l := attLayout{heads: op.heads}
	if x.Rank() != 3 {
		return l, ops.InputErrorf("%s's input must be [batch, sequence, input_hidden], got %s", name, shape(x.Shape))
	}
	l.batch, l.seq, l.in = x.Shape[0], x.Shape[1], x.Shape[2]
	var k, cols int
	if op.lin != nil {
		k, cols = op.lin.K(), op.lin.N()
	} else {
		if w.Rank() != 2 {
			return l, ops.InputErrorf("%s's weights must be 2-D, got %s", name, shape(w.Shape))
		}
		k, cols = w.Shape[0], w.Shape[1]
	}
	if k != l.in {
		return l, ops.InputErrorf("%s's weights have %d rows for an input hidden size of %d", name, k, l.in)
	}
	hq, hv, err := op.hidden(cols)
	if err != nil {
		return l, err
	}
	l.hd, l.hv = hq/op.heads, hv/op.heads
	if bias != nil && (bias.Rank() != 1 || bias.Shape[0] != cols) {
		return l, ops.InputErrorf("%s's bias must be [%d] (hidden + hidden + v_hidden), got %s", name, cols, shape(bias.Shape))
	}
	if past != nil {
		if hq != hv {
			return l, ops.InputErrorf("%s takes a past only with K and V of one hidden size, got %d and %d", name, hq, hv)
		}
		d := past.Shape
		if past.Rank() != 5 || d[0] != 2 || d[1] != l.batch || d[2] != l.heads || d[4] != l.hd {
			return l, ops.InputErrorf("%s's past must be [2, %d, %d, past_sequence, %d], got %s", name, l.batch, l.heads, l.hd, shape(d))
		}
		l.past = d[3]
	}
	return l, nil
}

// project returns the input times the weights, [batch·sequence, hidden +
// hidden + v_hidden], in float32 on c's engine: on the Linear that holds
// constant FLOAT weights, or on the float kernels.
func (op *attention) project(c *ops.Context, l attLayout, x, w *tensor.Tensor) ([]float32, error) {
	if op.lin != nil {
		if x.DType != tensor.Float32 {
			return nil, ops.InputErrorf("Attention with FLOAT weights takes a FLOAT input, got %v", x.DType)
		}
		y, err := op.lin.Apply(c, x)
		if err != nil {
			return nil, err
		}
		return y.Data.([]float32), nil
	}
	xv, err := values("Attention", "input", x)
	if err != nil {
		return nil, err
	}
	wv, err := values("Attention", "weights", w)
	if err != nil {
		return nil, err
	}
	m, cols := l.batch*l.seq, l.cols()
	proj := make([]float32, m*cols)
	if m == 0 || l.in == 0 {
		return proj, nil // no rows, or sums over nothing
	}
	if err := c.Engine().MatMul(xv, m, gemm.PackF(l.in, cols, wv, cols), proj); err != nil {
		return nil, err
	}
	return proj, nil
}

// split returns the projected queries by head, [batch, num_heads,
// sequence, head_size], and the keys then the values attended, [batch,
// num_heads, total_sequence, head_size] then [..., v_head_size] in one
// buffer (present, when the head sizes are one): the bias added, the
// past's keys and values before the run's.
func (op *attention) split(l attLayout, proj []float32, bias, past *tensor.Tensor) (q, kv []float32, err error) {
	var bv, pv []float32
	if bias != nil {
		if bv, err = values("Attention", "bias", bias); err != nil {
			return nil, nil, err
		}
	}
	if past != nil {
		if pv, err = values("Attention", "past", past); err != nil {
			return nil, nil, err
		}
	}
	n, hd, hv, t, cols := l.heads, l.hd, l.hv, l.total(), l.cols()
	var bq, bk, bvv []float32
	if bv != nil {
		bq, bk, bvv = bv[:n*hd], bv[n*hd:2*n*hd], bv[2*n*hd:]
	}
	ml := l.mha()
	q = make([]float32, l.batch*n*l.seq*hd)
	kv = make([]float32, l.batch*n*t*(hd+hv))
	k, v := kv[:l.batch*n*t*hd], kv[l.batch*n*t*hd:]
	if len(proj) > 0 { // the run has tokens
		toHeads(q, ml, l.seq, 0, hd, tokens{proj, l.seq, cols, hd}, bq)
		toHeads(k, ml, t, l.past, hd, tokens{proj[n*hd:], l.seq, cols, hd}, bk)
		toHeads(v, ml, t, l.past, hv, tokens{proj[2*n*hd:], l.seq, cols, hv}, bvv)
	}
	if pv != nil {
		half := l.batch * n * l.past * hd
		pastHeads(k, pv[:half], ml, hd)
		pastHeads(v, pv[half:], ml, hv)
	}
	return q, kv, nil
}

// adjuster returns the function that adds attention_bias and the mask
// (mask_index and the causal mask) to a row of scaled scores, in that
// order, or nil when there is neither (see scoreAdjuster).
func (op *attention) adjuster(l attLayout, mask, ab *tensor.Tensor) (func(row []float32, b, h, i int), error) {
	return scoreAdjuster("Attention", l.batch, l.heads, l.seq, l.past, l.total(), op.causal, ab, func() ([]float32, int, int, error) {
		return op.padding(l, mask)
	})
}

// padding returns mask_index as the value added to each score,
// mask_filter_value or 0: batch item b's row for query i at pad[b·pb +
// i·ps:] (ps = 0: one row serves every query), or nil without a mask
// (or with one that masks nothing).
func (op *attention) padding(l attLayout, mask *tensor.Tensor) (pad []float32, pb, ps int, err error) {
	const name = "Attention"
	if mask == nil {
		return nil, 0, 0, nil
	}
	m, ok := mask.Data.([]int32)
	if !ok {
		return nil, 0, 0, ops.InputErrorf("%s's mask_index must be INT32, got %v", name, mask.DType)
	}
	b, s, t := l.batch, l.seq, l.total()
	d := mask.Shape
	switch {
	case mask.Rank() == 1 && (d[0] == b || d[0] == 2*b || d[0] == 3*b+2):
		// The keys attended by each batch item: [end], [end, start], or
		// [end, start, cumulated lengths] of which ONNX Runtime's CPU
		// kernel reads the ends only.
		pad = make([]float32, b*t)
		for i := 0; i < b; i++ {
			row := pad[i*t : (i+1)*t]
			for j := min(max(int(m[i]), 0), t); j < t; j++ {
				row[j] = op.filter
			}
			if d[0] == 2*b {
				for j := 0; j < min(max(int(m[b+i]), 0), t); j++ {
					row[j] = op.filter
				}
			}
		}
		return pad, t, 0, nil
	case mask.Rank() == 2 && d[0] == b && d[1] == t: // 1: attended, 0: not
		return op.keep(m), t, 0, nil
	case mask.Rank() == 2 && (d[0] == b || d[0] == 1) && d[1] == 1: // one value broadcast to every score: no mask
		return nil, 0, 0, nil
	case mask.Rank() == 3 && d[0] == b && d[1] == s && d[2] == t:
		return op.keep(m), s * t, t, nil
	case mask.Rank() == 4:
		return nil, 0, 0, ops.Unsupportedf("%s's 4-D mask_index %s (Megatron's [batch, 1, max_sequence, max_sequence])", name, tensor.ShapeString(d))
	}
	return nil, 0, 0, ops.InputErrorf("%s's mask_index must be [%d], [%d], [%d], [%d, %d], [%d, %d, %d] or [%d, 1], got %s",
		name, b, 2*b, 3*b+2, b, t, b, s, t, b, tensor.ShapeString(d))
}

// keep returns 0 for each value of m above 0 (a key attended) and
// mask_filter_value for the others.
func (op *attention) keep(m []int32) []float32 {
	pad := make([]float32, len(m))
	for j, x := range m {
		if x <= 0 {
			pad[j] = op.filter
		}
	}
	return pad
}
