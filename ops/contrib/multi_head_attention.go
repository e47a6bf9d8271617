package contrib

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "MultiHeadAttention", Since: 1, Fold: true}, buildMultiHeadAttention)
}

// MultiHeadAttentionAttrs are MultiHeadAttention's attributes.
type MultiHeadAttentionAttrs struct {
	NumHeads        int64   `onnx:"num_heads"`
	MaskFilterValue float32 `onnx:"mask_filter_value" default:"-10000"`
	// Scale multiplies the products of queries and keys; 0, the default,
	// stands for 1/√head_size.
	Scale          float32 `onnx:"scale"`
	Unidirectional int64   `onnx:"unidirectional"`
}

// The inputs of MultiHeadAttention.
const (
	mhaQuery = iota
	mhaKey
	mhaValue
	mhaBias
	mhaMask
	mhaAttnBias
	mhaPastKey
	mhaPastValue
	mhaPastSeqLen
	mhaCacheIndirection
)

// multiHeadAttention implements com.microsoft's MultiHeadAttention: the
// attention of num_heads heads over projected queries, keys and values,
// for batch item b, head h and query i
//
//	output[b, i, h] = softmax(scale·Q[b,h,i]·K[b,h]ᵀ + attention_bias[b,h,i] + mask[b,i])·V[b,h]
//
// with K and V the keys and values of past_key and past_value followed by
// those of the run (total_sequence = past_sequence + kv_sequence), and
// scale 1/√head_size unless the attribute gives it. The forms of the
// inputs, as ONNX Runtime documents them:
//
//   - query [batch, sequence, hidden], key [batch, kv_sequence, hidden],
//     value [batch, kv_sequence, v_hidden], hidden = num_heads·head_size
//     (v_hidden: num_heads·v_head_size); bias [2·hidden + v_hidden] is
//     added to each (query, key, value) before the heads are split;
//   - query as above, key and value [batch, num_heads, kv_sequence,
//     head_size], the cached keys and values of cross attention, taken as
//     they are: the bias's key and value parts are not added to them (as
//     in ONNX Runtime, they are already projected);
//   - packed QKV: query [batch, sequence, num_heads, 3, head_size] holding
//     each head's query, key and value, no key and no value; bias as in
//     the first form;
//   - packed KV: query [batch, sequence, hidden] and key [batch,
//     kv_sequence, num_heads, 2, head_size] holding each head's key and
//     value, no value and no bias.
//
// past_key and past_value, [batch, num_heads, past_sequence, head_size]
// and [batch, num_heads, past_sequence, v_head_size], are taken with the
// first form only. key_padding_mask (INT32) is [batch], the number of
// keys each batch item attends to (the rest padding), or [3·batch + 2],
// whose first batch values are those numbers (ONNX Runtime's CPU kernel
// reads nothing else of it either), or [batch, total_sequence] or [batch,
// sequence, total_sequence], a key attended where the value is above 0; a
// padded key's score gets mask_filter_value added. attention_bias is
// [batch or 1, num_heads or 1, sequence, total_sequence]. unidirectional
// makes query i attend to keys up to past_sequence + i only (the lowest
// float32 added to the others' scores, as ONNX Runtime masks them) and
// needs kv_sequence = sequence. The outputs are output [batch, sequence, v_hidden] and
// present_key and present_value, the keys and values attended
// ([batch, num_heads, total_sequence, head_size or v_head_size]).
//
// Each score is computed as ONNX Runtime computes it: the float32
// product of query and key, times scale, plus the attention bias, plus
// the mask, each step rounded to float32; FLOAT16 inputs are converted to
// float32 first and the outputs rounded once. The past_sequence_length
// and cache_indirection inputs (a buffer shared by past and present, beam
// search) and the qk output are refused.
type multiHeadAttention struct {
	heads  int
	filter float32
	scale  float32 // 0: 1/√head_size
	causal bool
	outs   int     // how many outputs the node has
	want   [3]bool // which of output, present_key, present_value the graph reads
}

func buildMultiHeadAttention(n *ops.Node, at *MultiHeadAttentionAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 10, 1, 4); err != nil {
		return nil, err
	}
	if at.NumHeads <= 0 || at.NumHeads > 1<<20 {
		return nil, fmt.Errorf("num_heads %d is out of range (it is required and positive)", at.NumHeads)
	}
	if at.Unidirectional != 0 && at.Unidirectional != 1 {
		return nil, ops.Unsupportedf("MultiHeadAttention unidirectional=%d (it is 0 or 1)", at.Unidirectional)
	}
	for i, name := range n.Inputs {
		if name != "" {
			if err := refusedInput(i); err != nil {
				return nil, err
			}
		}
	}
	if len(n.Outputs) > 3 && n.Outputs[3] != "" {
		return nil, ops.Unsupportedf("MultiHeadAttention's qk output")
	}
	op := &multiHeadAttention{heads: int(at.NumHeads), filter: at.MaskFilterValue, scale: at.Scale,
		causal: at.Unidirectional == 1, outs: len(n.Outputs)}
	for i := range op.want {
		op.want[i] = i < len(n.Outputs) && n.Outputs[i] != ""
	}
	return op, nil
}

// refusedInput returns the error of MultiHeadAttention's input i when it
// is one quantserve does not take.
func refusedInput(i int) error {
	switch i {
	case mhaPastSeqLen:
		return ops.Unsupportedf("MultiHeadAttention's past_sequence_length input (past and present sharing one buffer)")
	case mhaCacheIndirection:
		return ops.Unsupportedf("MultiHeadAttention's cache_indirection input (beam search)")
	}
	return nil
}

// mhaForm is the form of a run's query, key and value.
type mhaForm int

const (
	mhaSeparate  mhaForm = iota // query, key, value [batch, sequence, hidden]
	mhaCross                    // key, value [batch, num_heads, kv_sequence, head_size]
	mhaPackedQKV                // query [batch, sequence, num_heads, 3, head_size]
	mhaPackedKV                 // key [batch, kv_sequence, num_heads, 2, head_size]
)

// mhaLayout is the geometry of one run.
type mhaLayout struct {
	form                                   mhaForm
	batch, seq, kvSeq, past, heads, hd, hv int // hd: head_size of queries and keys; hv: of values
}

func (l *mhaLayout) total() int { return l.past + l.kvSeq }

func (op *multiHeadAttention) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	for i := mhaPastSeqLen; i < len(in); i++ {
		if in[i] != nil {
			if err := refusedInput(i); err != nil {
				return nil, err
			}
		}
	}
	opt := func(i int) *tensor.Tensor { return ops.Optional(in, i) }
	q := in[mhaQuery]
	if err := sameType("MultiHeadAttention", q, opt(mhaKey), opt(mhaValue), opt(mhaBias), opt(mhaAttnBias),
		opt(mhaPastKey), opt(mhaPastValue)); err != nil {
		return nil, err
	}
	l, err := op.layout(q, opt(mhaKey), opt(mhaValue), opt(mhaBias), opt(mhaPastKey), opt(mhaPastValue))
	if err != nil {
		return nil, err
	}
	adjust, err := op.adjuster(l, opt(mhaMask), opt(mhaAttnBias))
	if err != nil {
		return nil, err
	}
	qh, kh, vh, err := op.split(l, in)
	if err != nil {
		return nil, err
	}
	scale := op.scale
	if scale == 0 {
		scale = 1 / float32(math.Sqrt(float64(l.hd)))
	}
	a := &sdpa{batch: l.batch, heads: l.heads, seqQ: l.seq, seqKV: l.total(), headQK: l.hd, headV: l.hv,
		scale: scale, q: qh, k: kh, v: vh, adjust: adjust}
	y := make([]float32, l.batch*l.seq*l.heads*l.hv)
	if err := a.run(c, y); err != nil {
		return nil, err
	}
	dt := q.DType
	outs := []*tensor.Tensor{result(dt, []int{l.batch, l.seq, l.heads * l.hv}, y), nil, nil, nil}
	if op.want[1] {
		outs[1] = result(dt, []int{l.batch, l.heads, l.total(), l.hd}, kh)
	}
	if op.want[2] {
		outs[2] = result(dt, []int{l.batch, l.heads, l.total(), l.hv}, vh)
	}
	return outs[:op.outs], nil
}

// layout checks the shapes of query, key, value, bias and the past
// against num_heads and each other.
func (op *multiHeadAttention) layout(q, k, v, bias, pk, pv *tensor.Tensor) (mhaLayout, error) {
	const name = "MultiHeadAttention"
	n := op.heads
	shape := tensor.ShapeString
	l, err := op.form(q, k, v)
	if err != nil {
		return l, err
	}
	if bias != nil {
		want := 2*n*l.hd + n*l.hv
		if l.form == mhaPackedKV {
			return l, ops.InputErrorf("%s takes no bias with a packed key and value", name)
		}
		if bias.Rank() != 1 || bias.Shape[0] != want {
			return l, ops.InputErrorf("%s's bias must be [%d] (hidden + hidden + v_hidden), got %s", name, want, shape(bias.Shape))
		}
	}
	switch {
	case pk == nil && pv == nil:
	case pk == nil || pv == nil:
		return l, ops.InputErrorf("%s's past_key and past_value must be given together", name)
	case l.form != mhaSeparate:
		return l, ops.InputErrorf("%s takes past_key and past_value only with query, key and value of shape [batch, sequence, hidden]", name)
	default:
		if pk.Rank() != 4 || pk.Shape[0] != l.batch || pk.Shape[1] != n || pk.Shape[3] != l.hd {
			return l, ops.InputErrorf("%s's past_key must be [%d, %d, past_sequence, %d], got %s", name, l.batch, n, l.hd, shape(pk.Shape))
		}
		if !slices.Equal(pv.Shape, []int{l.batch, n, pk.Shape[2], l.hv}) {
			return l, ops.InputErrorf("%s's past_value must be [%d, %d, %d, %d], got %s", name, l.batch, n, pk.Shape[2], l.hv, shape(pv.Shape))
		}
		l.past = pk.Shape[2]
	}
	if op.causal && l.kvSeq != l.seq {
		return l, ops.Unsupportedf("MultiHeadAttention unidirectional with %d keys and values for %d queries (causal attention here needs as many)", l.kvSeq, l.seq)
	}
	return l, nil
}

// form tells the form of query, key and value and checks their shapes.
func (op *multiHeadAttention) form(q, k, v *tensor.Tensor) (mhaLayout, error) {
	const name = "MultiHeadAttention"
	n := op.heads
	l := mhaLayout{heads: n}
	shape := tensor.ShapeString
	if q.Rank() == 5 {
		if k != nil || v != nil {
			return l, ops.InputErrorf("%s's packed query %s takes no key and no value", name, shape(q.Shape))
		}
		if q.Shape[2] != n || q.Shape[3] != 3 {
			return l, ops.InputErrorf("%s's packed query must be [batch, sequence, %d, 3, head_size], got %s", name, n, shape(q.Shape))
		}
		l.form, l.batch, l.seq, l.kvSeq, l.hd, l.hv = mhaPackedQKV, q.Shape[0], q.Shape[1], q.Shape[1], q.Shape[4], q.Shape[4]
	} else {
		if q.Rank() != 3 {
			return l, ops.InputErrorf("%s's query must be [batch, sequence, hidden] or [batch, sequence, num_heads, 3, head_size], got %s", name, shape(q.Shape))
		}
		if q.Shape[2]%n != 0 {
			return l, ops.InputErrorf("%s's hidden size %d is not a multiple of num_heads %d", name, q.Shape[2], n)
		}
		l.batch, l.seq, l.hd = q.Shape[0], q.Shape[1], q.Shape[2]/n
		b, h := l.batch, l.hd
		switch {
		case k == nil && v == nil:
			return l, ops.InputErrorf("%s takes a key and a value with a query %s (a packed query is [batch, sequence, num_heads, 3, head_size])", name, shape(q.Shape))
		case k == nil:
			return l, ops.InputErrorf("%s has a value but no key", name)
		case v == nil:
			if k.Rank() != 5 || !slices.Equal(k.Shape, []int{b, k.Shape[1], n, 2, h}) {
				return l, ops.InputErrorf("%s's key without a value must be packed, [%d, kv_sequence, %d, 2, %d], got %s", name, b, n, h, shape(k.Shape))
			}
			l.form, l.kvSeq, l.hv = mhaPackedKV, k.Shape[1], h
		case k.Rank() == 3 && v.Rank() == 3:
			if k.Shape[0] != b || k.Shape[2] != n*h {
				return l, ops.InputErrorf("%s's key must be [%d, kv_sequence, %d], got %s", name, b, n*h, shape(k.Shape))
			}
			if v.Shape[0] != b || v.Shape[1] != k.Shape[1] || v.Shape[2]%n != 0 {
				return l, ops.InputErrorf("%s's value must be [%d, %d, v_hidden] with v_hidden a multiple of %d, got %s", name, b, k.Shape[1], n, shape(v.Shape))
			}
			l.form, l.kvSeq, l.hv = mhaSeparate, k.Shape[1], v.Shape[2]/n
		case k.Rank() == 4 && v.Rank() == 4:
			if k.Shape[0] != b || k.Shape[1] != n || k.Shape[3] != h {
				return l, ops.InputErrorf("%s's key must be [%d, %d, kv_sequence, %d], got %s", name, b, n, h, shape(k.Shape))
			}
			if !slices.Equal(v.Shape[:3], k.Shape[:3]) {
				return l, ops.InputErrorf("%s's value must be [%d, %d, %d, v_head_size], got %s", name, b, n, k.Shape[2], shape(v.Shape))
			}
			l.form, l.kvSeq, l.hv = mhaCross, k.Shape[2], v.Shape[3]
		default:
			return l, ops.InputErrorf("%s's key and value must both be [batch, kv_sequence, hidden] or both [batch, num_heads, kv_sequence, head_size], got %s and %s",
				name, shape(k.Shape), shape(v.Shape))
		}
	}
	if l.hd == 0 {
		return l, ops.InputErrorf("%s's heads have no values (head_size 0)", name)
	}
	return l, nil
}

// split returns the queries, keys and values of a run by head, laid out
// [batch, num_heads, sequence, head values], the bias added (in float32,
// before the heads are taken apart) and the past's keys and values before
// the run's.
func (op *multiHeadAttention) split(l mhaLayout, in []*tensor.Tensor) (q, k, v []float32, err error) {
	const name = "MultiHeadAttention"
	vals := func(i int, what string) []float32 {
		t := ops.Optional(in, i)
		if t == nil || err != nil {
			return nil
		}
		var x []float32
		x, err = values(name, what, t)
		return x
	}
	qv, kv, vv := vals(mhaQuery, "query"), vals(mhaKey, "key"), vals(mhaValue, "value")
	bias := vals(mhaBias, "bias")
	pk, pv := vals(mhaPastKey, "past_key"), vals(mhaPastValue, "past_value")
	if err != nil {
		return nil, nil, nil, err
	}
	n, hd, hv, t := l.heads, l.hd, l.hv, l.total()
	var bq, bk, bv []float32
	if bias != nil {
		bq, bk, bv = bias[:n*hd], bias[n*hd:2*n*hd], bias[2*n*hd:]
	}
	q = make([]float32, l.batch*n*l.seq*hd)
	if l.form == mhaCross { // the cache as it is
		toHeads(q, l, l.seq, 0, hd, tokens{qv, l.seq, n * hd, hd}, bq)
		return q, slices.Clone(kv), slices.Clone(vv), nil
	}
	k, v = make([]float32, l.batch*n*t*hd), make([]float32, l.batch*n*t*hv)
	switch l.form {
	case mhaSeparate:
		toHeads(q, l, l.seq, 0, hd, tokens{qv, l.seq, n * hd, hd}, bq)
		toHeads(k, l, t, l.past, hd, tokens{kv, l.kvSeq, n * hd, hd}, bk)
		toHeads(v, l, t, l.past, hv, tokens{vv, l.kvSeq, n * hv, hv}, bv)
		if pk != nil {
			pastHeads(k, pk, l, hd)
			pastHeads(v, pv, l, hv)
		}
	case mhaPackedQKV: // [batch, sequence, num_heads, 3, head_size]
		toHeads(q, l, t, 0, hd, tokens{qv, t, 3 * n * hd, 3 * hd}, bq)
		toHeads(k, l, t, 0, hd, tokens{qv[hd:], t, 3 * n * hd, 3 * hd}, bk)
		toHeads(v, l, t, 0, hd, tokens{qv[2*hd:], t, 3 * n * hd, 3 * hd}, bv)
	case mhaPackedKV: // [batch, kv_sequence, num_heads, 2, head_size]
		toHeads(q, l, l.seq, 0, hd, tokens{qv, l.seq, n * hd, hd}, nil)
		toHeads(k, l, t, 0, hd, tokens{kv, t, 2 * n * hd, 2 * hd}, nil)
		toHeads(v, l, t, 0, hd, tokens{kv[hd:], t, 2 * n * hd, 2 * hd}, nil)
	}
	return q, k, v, nil
}

// tokens says where the heads of a token-major input lie: token (b, s)
// of seq per batch item at x[(b·seq+s)·tok:], its head h at h·stride on.
type tokens struct {
	x                []float32
	seq, tok, stride int
}

// toHeads writes the heads of size values of src into dst [batch, heads,
// total, size], token s at sequence position off + s, plus bias[h·size:]
// (head h's part) when bias is not nil.
func toHeads(dst []float32, l mhaLayout, total, off, size int, src tokens, bias []float32) {
	for b := 0; b < l.batch; b++ {
		for s := 0; s < src.seq; s++ {
			row := src.x[(b*src.seq+s)*src.tok:]
			for h := 0; h < l.heads; h++ {
				o := ((b*l.heads+h)*total + off + s) * size
				d, x := dst[o:o+size], row[h*src.stride:h*src.stride+size]
				if bias == nil {
					copy(d, x)
					continue
				}
				for j, v := range x {
					d[j] = v + bias[h*size+j]
				}
			}
		}
	}
}

// pastHeads copies past, [batch, heads, past, size], to the first past
// positions of each head of dst, [batch, heads, total, size].
func pastHeads(dst, past []float32, l mhaLayout, size int) {
	p, t := l.past*size, l.total()*size
	for bh := 0; bh < l.batch*l.heads; bh++ {
		copy(dst[bh*t:bh*t+p], past[bh*p:(bh+1)*p])
	}
}

// adjuster returns the function that adds attention_bias and the mask
// (key_padding_mask and the causal mask) to a row of scaled scores, in that
// order, or nil when there is neither (see scoreAdjuster).
func (op *multiHeadAttention) adjuster(l mhaLayout, mask, ab *tensor.Tensor) (func(row []float32, b, h, i int), error) {
	return scoreAdjuster("MultiHeadAttention", l.batch, l.heads, l.seq, l.past, l.total(), op.causal, ab, func() ([]float32, int, int, error) {
		return op.padding(l, mask)
	})
}

// padding returns key_padding_mask as the value added to each score,
// mask_filter_value or 0: batch item b's row for query i at pad[b·pb +
// i·ps:] (ps = 0: one row serves every query), or nil without a mask.
func (op *multiHeadAttention) padding(l mhaLayout, mask *tensor.Tensor) (pad []float32, pb, ps int, err error) {
	if mask == nil {
		return nil, 0, 0, nil
	}
	m, ok := mask.Data.([]int32)
	if !ok {
		return nil, 0, 0, ops.InputErrorf("MultiHeadAttention's key_padding_mask must be INT32, got %v", mask.DType)
	}
	b, s, t := l.batch, l.seq, l.total()
	d := mask.Shape
	switch {
	case mask.Rank() == 1 && (d[0] == b || d[0] == 3*b+2): // the keys attended by each batch item
		pad = make([]float32, b*t)
		for i := 0; i < b; i++ {
			for j := min(max(int(m[i]), 0), t); j < t; j++ {
				pad[i*t+j] = op.filter
			}
		}
		return pad, t, 0, nil
	case slices.Equal(d, []int{b, t}):
		return op.keep(m), t, 0, nil
	case slices.Equal(d, []int{b, s, t}):
		return op.keep(m), s * t, t, nil
	}
	return nil, 0, 0, ops.InputErrorf("MultiHeadAttention's key_padding_mask must be [%d], [%d], [%d, %d] or [%d, %d, %d], got %s",
		b, 3*b+2, b, t, b, s, t, tensor.ShapeString(d))
}

// keep returns 0 for each value of m above 0 (a key attended) and
// mask_filter_value for the others.
func (op *multiHeadAttention) keep(m []int32) []float32 {
	pad := make([]float32, len(m))
	for j, x := range m {
		if x <= 0 {
			pad[j] = op.filter
		}
	}
	return pad
}
