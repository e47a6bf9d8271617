package model

import (
	"context"
	"fmt"
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Attention (opsets 23 and 24) and the preview FlexAttention: scaled
// dot-product attention over heads, Y = softmax(scale·QKᵀ + bias)·V, with
// grouped key/value heads (query head h reads key/value head
// h / (q_num_heads / kv_num_heads)). FP32, FP16 and BF16 compute in
// float32: both products run on the float kernels
// (gemm.Engine.MatMulStrided), head by head on the inputs and output in
// place (by row strides), each key/value head packed once for all the
// query heads that share it, and the softmax is the table's row kernel. FP64 computes in float64 with plain loops, which are
// also the float32 path's reference in tests.

func init() {
	register(Descriptor{Type: "Attention", Since: 23, Until: 23, Fold: true}, func(n *node, at *AttentionAttrs) (opFunc, error) {
		return buildAttention(n, at, 6)
	})
	register(Descriptor{Type: "Attention", Since: 24, Fold: true}, func(n *node, at *AttentionAttrs) (opFunc, error) {
		return buildAttention(n, at, 7)
	})
	register(Descriptor{Domain: "ai.onnx.preview", Type: "FlexAttention", Since: 1, Fold: true}, buildFlexAttention)
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

// attnView addresses a rank-4 (batch, head, sequence, feature) tensor, or
// a rank-3 (batch, sequence, head·feature) one, by strides: element
// (b, h, s, f) is data[b·bs + h·hs + s·ss + f].
type attnView[T float32 | float64] struct {
	data       []T
	bs, hs, ss int
}

func (v attnView[T]) at(b, h int) int { return b*v.bs + h*v.hs }

// headMajor views data of shape (batch, heads, seq, dim).
func headMajor[T float32 | float64](data []T, heads, seq, dim int) attnView[T] {
	return attnView[T]{data: data, bs: heads * seq * dim, hs: seq * dim, ss: dim}
}

// seqMajor views data of shape (batch, seq, heads·dim).
func seqMajor[T float32 | float64](data []T, heads, seq, dim int) attnView[T] {
	return attnView[T]{data: data, bs: seq * heads * dim, hs: dim, ss: heads * dim}
}

// attnShape is one attention problem's sizes.
type attnShape struct {
	b, hq, hkv int
	sq, t      int // query length and key/value length (past included)
	d, dv      int // query/key and value head sizes
}

// attnKernels computes one head's two products.
type attnKernels[T float32 | float64] interface {
	// prepareK and prepareV ready key/value head g of batch b.
	prepareK(b, g int)
	prepareV(b, g int)
	// qk sets s (m×t) = q·Kᵀ for q (m×d, row stride ldq).
	qk(q []T, ldq, m int, s []T)
	// pv sets y (m×dv, row stride ldy) = p·V for p (m×t).
	pv(p []T, m int, y []T, ldy int)
	// err reports the first failure of a product (a kernel that
	// panicked), nil when there was none.
	err() error
}

// attnF32 runs the products on the float kernels, reading Q and writing
// Y in place by their row strides (rank-3 heads are columns of a row).
type attnF32 struct {
	exec   *gemm.Engine
	k, v   attnView[float32]
	sh     attnShape
	kp, vp *gemm.FWeights // Kᵀ and V of one head, packed (buffers reused)
	failed error
}

func (a *attnF32) err() error { return a.failed }

func (a *attnF32) matmul(x []float32, m, ldx int, w *gemm.FWeights, y []float32, ldy int) {
	if err := a.exec.MatMulStrided(x, m, ldx, w, y, ldy); err != nil && a.failed == nil {
		a.failed = err
	}
}

func newAttnF32(exec *gemm.Engine, k, v attnView[float32], sh attnShape) *attnF32 {
	return &attnF32{exec: exec, k: k, v: v, sh: sh}
}

func (a *attnF32) prepareK(b, g int) {
	t, d := a.sh.t, a.sh.d
	if t == 0 || d == 0 {
		return
	}
	base := a.k.at(b, g)
	a.kp = gemm.RepackFT(a.kp, d, t, a.k.data[base:base+(t-1)*a.k.ss+d], a.k.ss)
}

func (a *attnF32) prepareV(b, g int) {
	if a.sh.t == 0 || a.sh.dv == 0 {
		return
	}
	base := a.v.at(b, g)
	a.vp = gemm.RepackF(a.vp, a.sh.t, a.sh.dv, a.v.data[base:base+(a.sh.t-1)*a.v.ss+a.sh.dv], a.v.ss)
}

func (a *attnF32) qk(q []float32, ldq, sq int, s []float32) {
	t, d := a.sh.t, a.sh.d
	s = s[:sq*t]
	if d == 0 || t == 0 || sq == 0 {
		clear(s)
		return
	}
	a.matmul(q[:(sq-1)*ldq+d], sq, ldq, a.kp, s, t)
}

func (a *attnF32) pv(p []float32, sq int, y []float32, ldy int) {
	t, dv := a.sh.t, a.sh.dv
	if sq == 0 || dv == 0 {
		return
	}
	if t == 0 {
		for i := 0; i < sq; i++ {
			clear(y[i*ldy : i*ldy+dv])
		}
		return
	}
	a.matmul(p[:sq*t], sq, t, a.vp, y[:(sq-1)*ldy+dv], ldy)
}

// attnRef computes the products with plain loops, in T.
type attnRef[T float32 | float64] struct {
	k, v attnView[T]
	sh   attnShape
	kb   int // base of the current key head
	vb   int // and value head
}

func (a *attnRef[T]) err() error { return nil }

func (a *attnRef[T]) prepareK(b, g int) { a.kb = a.k.at(b, g) }
func (a *attnRef[T]) prepareV(b, g int) { a.vb = a.v.at(b, g) }

func (a *attnRef[T]) qk(q []T, ldq, m int, s []T) {
	for i := 0; i < m; i++ {
		for j := 0; j < a.sh.t; j++ {
			var acc T
			kr := a.k.data[a.kb+j*a.k.ss:]
			for f := 0; f < a.sh.d; f++ {
				acc += q[i*ldq+f] * kr[f]
			}
			s[i*a.sh.t+j] = acc
		}
	}
}

func (a *attnRef[T]) pv(p []T, m int, y []T, ldy int) {
	for i := 0; i < m; i++ {
		for c := 0; c < a.sh.dv; c++ {
			var acc T
			for j := 0; j < a.sh.t; j++ {
				acc += p[i*a.sh.t+j] * a.v.data[a.vb+j*a.v.ss+c]
			}
			y[i*ldy+c] = acc
		}
	}
}

// attnBias adds the attention mask, the causal mask and the key padding
// to rows of scores.
type attnBias[T float32 | float64] struct {
	mask    []T    // additive mask values (a boolean mask becomes 0/-inf)
	mlen    int    // its last dimension; keys from mlen on are masked
	mstr    [3]int // its strides along batch, head and query; 0 broadcasts
	causal  bool
	offset  []int   // per batch: key j is hidden from query i when j > i + offset
	nonpad  []int64 // per batch: keys from nonpad[b] on are padding (nil: none)
	present bool    // false: no bias at all
}

func (ab *attnBias[T]) add(row []T, b, h, i int) {
	if !ab.present {
		return
	}
	ninf := T(math.Inf(-1))
	if ab.mask != nil {
		m := ab.mask[b*ab.mstr[0]+h*ab.mstr[1]+i*ab.mstr[2]:]
		n := min(ab.mlen, len(row))
		for j, v := range m[:n] {
			row[j] += v
		}
		for j := n; j < len(row); j++ {
			row[j] = ninf
		}
	}
	if ab.causal {
		for j := max(i+ab.offset[b]+1, 0); j < len(row); j++ {
			row[j] = ninf
		}
	}
	if ab.nonpad != nil {
		for j := int(ab.nonpad[b]); j < len(row); j++ {
			row[j] = ninf
		}
	}
}

// newAttnBias prepares the mask (nil when absent), which broadcasts to
// (batch, q heads, q length, ≤ t).
func newAttnBias[T float32 | float64](mask *tensor.Tensor, sh attnShape, floatMask func(*tensor.Tensor) ([]T, error)) (*attnBias[T], error) {
	ab := &attnBias[T]{}
	if mask == nil {
		return ab, nil
	}
	ab.present = true
	r := mask.Rank()
	if r < 1 || r > 4 {
		return nil, inputErrorf("attn_mask must have rank 1 to 4, got shape %s", tensor.ShapeString(mask.Shape))
	}
	full := [4]int{1, 1, 1, 1}
	copy(full[4-r:], mask.Shape)
	want := [3]int{sh.b, sh.hq, sh.sq}
	ab.mlen = full[3]
	if ab.mlen > sh.t {
		return nil, inputErrorf("attn_mask of shape %s is longer than the %d keys", tensor.ShapeString(mask.Shape), sh.t)
	}
	stride := ab.mlen
	for d := 2; d >= 0; d-- {
		switch full[d] {
		case want[d]:
			ab.mstr[d] = stride
		case 1:
			ab.mstr[d] = 0
		default:
			return nil, inputErrorf("attn_mask of shape %s does not broadcast to (%d, %d, %d, %d)", tensor.ShapeString(mask.Shape), sh.b, sh.hq, sh.sq, sh.t)
		}
		if full[d] == want[d] && want[d] == 1 {
			ab.mstr[d] = 0
		}
		stride *= full[d]
	}
	if bm, ok := mask.Data.([]bool); ok {
		ab.mask = make([]T, len(bm))
		ninf := T(math.Inf(-1))
		for i, keep := range bm {
			if !keep {
				ab.mask[i] = ninf
			}
		}
		return ab, nil
	}
	var err error
	ab.mask, err = floatMask(mask)
	return ab, err
}

// attnRows applies, in place, what comes between the two products to
// scores of one head (rows from query i0 on): scale, softcap, bias and
// softmax, recording qk_matmul_output (rows of qk, nil when not wanted)
// after stage mode.
type attnRows[T float32 | float64] struct {
	scale, softcap T
	bias           *attnBias[T]
	mode           int64
	soft           func([]float32, float32) // the float32 softmax kernel
}

func (ar *attnRows[T]) apply(s []T, t, b, h, i0 int, qk []T) {
	if s32, ok := any(s).([]float32); ok && qk == nil && ar.softcap == 0 && !ar.bias.present {
		// the scale is the kernel's first step: one pass less
		for i := 0; i*t < len(s32); i++ {
			ar.soft(s32[i*t:(i+1)*t], float32(ar.scale))
		}
		return
	}
	for i := 0; i*t < len(s); i++ {
		row := s[i*t : (i+1)*t]
		for j := range row {
			row[j] *= ar.scale
		}
		if qk != nil && ar.mode == 0 {
			copy(qk[i*t:], row)
		}
		if ar.softcap > 0 {
			softcapRow(row, ar.softcap)
		}
		if qk != nil && ar.mode == 1 {
			copy(qk[i*t:], row)
		}
		ar.bias.add(row, b, h, i0+i)
		if qk != nil && ar.mode == 2 {
			copy(qk[i*t:], row)
		}
		softmaxRow(row, ar.soft)
		if qk != nil && ar.mode == 3 {
			copy(qk[i*t:], row)
		}
	}
}

// softcapRow sets x to c·tanh(x/c).
func softcapRow[T float32 | float64](x []T, c T) {
	if x32, ok := any(x).([]float32); ok {
		c32 := float32(c)
		for j, v := range x32 {
			x32[j] = c32 * tanh32(v/c32)
		}
		return
	}
	for j, v := range x {
		x[j] = c * T(math.Tanh(float64(v/c)))
	}
}

// tanh32 is tanh in float32 through exp32: sign(x)·(1-e)/(1+e) with
// e = exp(-2|x|), within a few float32 ulps of 1 in absolute terms.
func tanh32(x float32) float32 {
	if x != x {
		return x
	}
	a := x
	if a < 0 {
		a = -a
	}
	e := exp32(-2 * a)
	r := (1 - e) / (1 + e)
	if x < 0 {
		return -r
	}
	return r
}

// softmaxRow normalizes x to exp(x - max) / Σ exp(x - max); a row with
// no finite maximum (every key masked) becomes NaN, as numpy's does.
// float32 rows run on soft, a kernel table's SoftmaxRow.
func softmaxRow[T float32 | float64](x []T, soft func([]float32, float32)) {
	if x32, ok := any(x).([]float32); ok {
		soft(x32, 1)
		return
	}
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	var s float64
	for j, v := range x {
		e := math.Exp(float64(v) - m)
		x[j] = T(e)
		s += e
	}
	for j := range x {
		x[j] = T(float64(x[j]) / s)
	}
}

// attnChunk bounds the scores one head holds at a time (query rows ×
// keys): long sequences are taken a block of query rows at a time.
// runAttention's chunk is this bound.
const attnChunk = 1 << 16

// runAttention runs every head: for each batch and key/value head, the
// keys and values are prepared once, then each query head of the group
// takes its scores, rows and output, a block of query rows at a time. qk,
// when not nil, receives qk_matmul_output (b, hq, sq, t).
func runAttention[T float32 | float64](sh attnShape, q, y attnView[T], kern attnKernels[T], rows *attnRows[T], qk []T, chunk int) {
	chunk = max(1, min(sh.sq, chunk/max(sh.t, 1)))
	s := make([]T, chunk*sh.t)
	rep := sh.hq / sh.hkv
	for b := 0; b < sh.b; b++ {
		for g := 0; g < sh.hkv; g++ {
			kern.prepareK(b, g)
			kern.prepareV(b, g)
			for r := 0; r < rep; r++ {
				h := g*rep + r
				for i0 := 0; i0 < sh.sq; i0 += chunk {
					m := min(chunk, sh.sq-i0)
					sm := s[:m*sh.t]
					kern.qk(q.data[q.at(b, h)+i0*q.ss:], q.ss, m, sm)
					var qkh []T
					if qk != nil {
						qkh = qk[((b*sh.hq+h)*sh.sq+i0)*sh.t:]
					}
					rows.apply(sm, sh.t, b, h, i0, qkh)
					kern.pv(sm, m, y.data[y.at(b, h)+i0*y.ss:], y.ss)
				}
			}
		}
	}
}

func buildAttention(n *node, at *AttentionAttrs, maxIn int) (opFunc, error) {
	if err := n.checkArity(3, maxIn, 1, 4); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 3); err != nil {
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
			return nil, unsupportedf("Attention softmax_precision %v", onnxpb.DataType(*p))
		}
	}
	outs := n.pb.Outputs
	wantPresent := len(outs) > 1 && outs[1] != "" || len(outs) > 2 && outs[2] != ""
	wantQK := len(outs) > 3 && outs[3] != ""
	exec, soft := n.opts.Exec, kernelTable(n).SoftmaxRow
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		get := func(i int) *tensor.Tensor {
			if i < len(in) {
				return in[i]
			}
			return nil
		}
		a := &attentionCall{
			at: at, q: in[0], k: in[1], v: in[2], mask: get(3), pastK: get(4), pastV: get(5), nonpad: get(6),
			wantPresent: wantPresent, wantQK: wantQK, soft: soft,
		}
		if err := a.check(); err != nil {
			return nil, err
		}
		if a.q.DType == tensor.Float64 {
			return attentionIn(a, attnFloat64s, func(sh attnShape, k, v attnView[float64]) attnKernels[float64] {
				return &attnRef[float64]{k: k, v: v, sh: sh}
			})
		}
		return attentionIn(a, attnFloat32s, func(sh attnShape, k, v attnView[float32]) attnKernels[float32] {
			return newAttnF32(exec, k, v, sh)
		})
	}, nil
}

// attentionCall is one run of an Attention node.
type attentionCall struct {
	at                                  *AttentionAttrs
	q, k, v, mask, pastK, pastV, nonpad *tensor.Tensor
	wantPresent, wantQK                 bool
	chunk                               int // scores held at a time; 0: attnChunk
	// soft runs float32 rows: the SoftmaxRow of the node's engine.
	soft func([]float32, float32)

	sh    attnShape
	rank3 bool
	past  int
}

// check validates the inputs' types and shapes and works out the sizes.
func (a *attentionCall) check() error {
	q, k, v := a.q, a.k, a.v
	for _, x := range []*tensor.Tensor{q, k, v} {
		if !x.DType.IsFloat() {
			return inputErrorf("Attention takes floating-point Q, K and V, got %v", x.DType)
		}
	}
	if k.DType != q.DType {
		return inputErrorf("Attention: K is %v, Q is %v", k.DType, q.DType)
	}
	if q.Rank() != k.Rank() || q.Rank() != v.Rank() || q.Rank() != 3 && q.Rank() != 4 {
		return inputErrorf("Attention takes Q, K and V all of rank 3 or all of rank 4, got %s, %s, %s", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
	}
	sh := &a.sh
	if q.Rank() == 4 {
		sh.b, sh.hq, sh.sq, sh.d = q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
		sh.hkv, sh.t = k.Shape[1], k.Shape[2]
		if k.Shape[0] != sh.b || k.Shape[3] != sh.d || v.Shape[0] != sh.b || v.Shape[1] != sh.hkv || v.Shape[2] != sh.t {
			return inputErrorf("Attention: Q %s, K %s and V %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
		}
		sh.dv = v.Shape[3]
		if a.at.QNumHeads > 0 && int64(sh.hq) != a.at.QNumHeads || a.at.KVNumHeads > 0 && int64(sh.hkv) != a.at.KVNumHeads {
			return inputErrorf("Attention: Q and K have %d and %d heads, the node says %d and %d", sh.hq, sh.hkv, a.at.QNumHeads, a.at.KVNumHeads)
		}
	} else {
		a.rank3 = true
		if a.at.QNumHeads <= 0 || a.at.KVNumHeads <= 0 {
			return inputErrorf("Attention on rank-3 inputs needs q_num_heads and kv_num_heads")
		}
		if a.at.QNumHeads > math.MaxInt32 || a.at.KVNumHeads > math.MaxInt32 {
			return inputErrorf("Attention: too many heads")
		}
		sh.hq, sh.hkv = int(a.at.QNumHeads), int(a.at.KVNumHeads)
		sh.b, sh.sq, sh.t = q.Shape[0], q.Shape[1], k.Shape[1]
		if q.Shape[2]%sh.hq != 0 || k.Shape[2]%sh.hkv != 0 || v.Shape[2]%sh.hkv != 0 {
			return inputErrorf("Attention: hidden sizes %d, %d, %d do not split into %d and %d heads", q.Shape[2], k.Shape[2], v.Shape[2], sh.hq, sh.hkv)
		}
		sh.d, sh.dv = q.Shape[2]/sh.hq, v.Shape[2]/sh.hkv
		if k.Shape[0] != sh.b || v.Shape[0] != sh.b || v.Shape[1] != sh.t || k.Shape[2]/sh.hkv != sh.d {
			return inputErrorf("Attention: Q %s, K %s and V %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
		}
	}
	if sh.hkv == 0 || sh.hq%sh.hkv != 0 {
		return inputErrorf("Attention: %d query heads do not group over %d key/value heads", sh.hq, sh.hkv)
	}
	if (a.pastK == nil) != (a.pastV == nil) {
		return inputErrorf("Attention takes past_key and past_value together")
	}
	if a.pastK != nil {
		pk, pv := a.pastK, a.pastV
		if pk.DType != k.DType || pv.DType != v.DType {
			return inputErrorf("Attention: past key/value types %v, %v differ from K and V's", pk.DType, pv.DType)
		}
		if pk.Rank() != 4 || pv.Rank() != 4 || pk.Shape[0] != sh.b || pk.Shape[1] != sh.hkv || pk.Shape[3] != sh.d ||
			pv.Shape[0] != sh.b || pv.Shape[1] != sh.hkv || pv.Shape[2] != pk.Shape[2] || pv.Shape[3] != sh.dv {
			return inputErrorf("Attention: past_key %s and past_value %s do not fit (%d, %d, past, %d|%d)", tensor.ShapeString(pk.Shape), tensor.ShapeString(pv.Shape), sh.b, sh.hkv, sh.d, sh.dv)
		}
		a.past = pk.Shape[2]
		sh.t += a.past
	}
	if _, err := tensor.NumElements([]int{sh.b, sh.hq, sh.sq, sh.t}); err != nil {
		return inputErrorf("Attention: %v", err)
	}
	if _, err := tensor.NumElements([]int{sh.b, sh.hq, sh.sq, sh.dv}); err != nil {
		return inputErrorf("Attention: %v", err)
	}
	if a.mask != nil && a.mask.DType != tensor.Bool && a.mask.DType != q.DType {
		return inputErrorf("Attention: attn_mask must be BOOL or %v, got %v", q.DType, a.mask.DType)
	}
	if np := a.nonpad; np != nil {
		vals, ok := np.Data.([]int64)
		if !ok || np.Rank() != 1 || len(vals) != sh.b {
			return inputErrorf("Attention: nonpad_kv_seqlen must be INT64 of shape (%d), got %v%s", sh.b, np.DType, tensor.ShapeString(np.Shape))
		}
		for _, x := range vals {
			if x < 0 || x > int64(sh.t) {
				return inputErrorf("Attention: nonpad_kv_seqlen %d is not in [0, %d]", x, sh.t)
			}
		}
	}
	return nil
}

// attentionIn computes Attention in T: toT converts a floating-point
// tensor's values, newKern makes the product kernels.
func attentionIn[T float32 | float64](a *attentionCall, toT func(*tensor.Tensor) []T, newKern func(attnShape, attnView[T], attnView[T]) attnKernels[T]) ([]*tensor.Tensor, error) {
	sh := a.sh
	qd, kd, vd := toT(a.q), toT(a.k), toT(a.v)
	var q, k, v attnView[T]
	if a.rank3 {
		q = seqMajor(qd, sh.hq, sh.sq, sh.d)
		k = seqMajor(kd, sh.hkv, sh.t-a.past, sh.d)
		v = seqMajor(vd, sh.hkv, sh.t-a.past, sh.dv)
	} else {
		q = headMajor(qd, sh.hq, sh.sq, sh.d)
		k = headMajor(kd, sh.hkv, sh.t-a.past, sh.d)
		v = headMajor(vd, sh.hkv, sh.t-a.past, sh.dv)
	}
	// present_key/value: the past followed by this step's keys/values,
	// head-major; built when there is a past or they are wanted.
	var presentK, presentV []T
	if a.pastK != nil || a.wantPresent {
		var pk, pv []T
		if a.pastK != nil {
			pk, pv = toT(a.pastK), toT(a.pastV)
		}
		presentK = concatHeads(pk, k, sh.b, sh.hkv, a.past, sh.t-a.past, sh.d)
		presentV = concatHeads(pv, v, sh.b, sh.hkv, a.past, sh.t-a.past, sh.dv)
		k = headMajor(presentK, sh.hkv, sh.t, sh.d)
		v = headMajor(presentV, sh.hkv, sh.t, sh.dv)
	}
	floatMask := func(m *tensor.Tensor) ([]T, error) { return toT(m), nil }
	bias, err := newAttnBias(a.mask, sh, floatMask)
	if err != nil {
		return nil, err
	}
	if a.at.IsCausal {
		bias.present, bias.causal = true, true
		bias.offset = make([]int, sh.b)
		for b := range bias.offset {
			switch {
			case a.pastK != nil:
				bias.offset[b] = a.past
			case a.nonpad != nil:
				bias.offset[b] = int(a.nonpad.Data.([]int64)[b]) - sh.sq
			}
		}
	}
	if a.nonpad != nil {
		bias.present = true
		bias.nonpad = a.nonpad.Data.([]int64)
	}
	scale := 1 / math.Sqrt(float64(sh.d))
	if a.at.Scale != nil {
		scale = float64(*a.at.Scale)
	}
	rows := &attnRows[T]{scale: T(scale), softcap: T(a.at.Softcap), bias: bias, mode: a.at.QKMatMulOutputMode, soft: a.soft}
	yd := make([]T, sh.b*sh.hq*sh.sq*sh.dv)
	y := headMajor(yd, sh.hq, sh.sq, sh.dv)
	yShape := []int{sh.b, sh.hq, sh.sq, sh.dv}
	if a.rank3 {
		y = seqMajor(yd, sh.hq, sh.sq, sh.dv)
		yShape = []int{sh.b, sh.sq, sh.hq * sh.dv}
	}
	var qk []T
	if a.wantQK {
		qk = make([]T, sh.b*sh.hq*sh.sq*sh.t)
	}
	chunk := a.chunk
	if chunk == 0 {
		chunk = attnChunk
	}
	kern := newKern(sh, k, v)
	runAttention(sh, q, y, kern, rows, qk, chunk)
	if err := kern.err(); err != nil {
		return nil, err
	}

	out := []*tensor.Tensor{{DType: a.q.DType, Shape: yShape, Data: attnRoundAs(yd, a.q.DType)}, nil, nil, nil}
	if presentK != nil {
		out[1] = &tensor.Tensor{DType: a.k.DType, Shape: []int{sh.b, sh.hkv, sh.t, sh.d}, Data: attnRoundAs(presentK, a.k.DType)}
		out[2] = &tensor.Tensor{DType: a.v.DType, Shape: []int{sh.b, sh.hkv, sh.t, sh.dv}, Data: attnRoundAs(presentV, a.v.DType)}
	}
	if qk != nil {
		out[3] = &tensor.Tensor{DType: a.q.DType, Shape: []int{sh.b, sh.hq, sh.sq, sh.t}, Data: attnRoundAs(qk, a.q.DType)}
	}
	return out, nil
}

// concatHeads returns past (b, h, p, d) followed along the sequence by
// cur (viewed by its strides, s positions), head-major.
func concatHeads[T float32 | float64](past []T, cur attnView[T], b, h, p, s, d int) []T {
	out := make([]T, b*h*(p+s)*d)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			dst := out[(bi*h+hi)*(p+s)*d:]
			if p > 0 {
				copy(dst[:p*d], past[(bi*h+hi)*p*d:])
			}
			base := cur.at(bi, hi)
			for j := 0; j < s; j++ {
				copy(dst[(p+j)*d:(p+j+1)*d], cur.data[base+j*cur.ss:])
			}
		}
	}
	return out
}

// attnFloat32s returns a floating-point tensor's values as float32 (its
// own slice for FP32).
func attnFloat32s(x *tensor.Tensor) []float32 {
	v, _ := lnFloat32s(x, "")
	return v
}

func attnFloat64s(x *tensor.Tensor) []float64 {
	if d, ok := x.Data.([]float64); ok {
		return d
	}
	return x.Float64s()
}

// attnRoundAs returns v as a slice of the floating-point type dt.
func attnRoundAs[T float32 | float64](v []T, dt tensor.DataType) any {
	switch x := any(v).(type) {
	case []float32:
		return lnRound(x, dt)
	case []float64:
		return roundFloat64s(x, dt)
	}
	return nil
}

// FlexAttentionAttrs are the attributes of ai.onnx.preview.FlexAttention.
type FlexAttentionAttrs struct {
	ScoreMod         *onnxpb.Graph `onnx:"score_mod"`
	ProbMod          *onnxpb.Graph `onnx:"prob_mod"`
	Scale            *float32      `onnx:"scale"`
	SoftmaxPrecision *int64        `onnx:"softmax_precision"`
}

// buildFlexAttention implements FlexAttention: rank-4 Q, K, V, scores
// (in the softmax precision: FLOAT, or DOUBLE for FP64 inputs) passed
// whole through the score_mod subgraph before the softmax and through
// prob_mod after it.
func buildFlexAttention(n *node, at *FlexAttentionAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 3); err != nil {
		return nil, err
	}
	var mods [2]*subgraph
	for i, g := range []*onnxpb.Graph{at.ScoreMod, at.ProbMod} {
		if g == nil {
			continue
		}
		sub, err := n.subgraph(g)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", [2]string{"score_mod", "prob_mod"}[i], err)
		}
		if len(sub.names) != 1 || len(sub.outs) != 1 {
			return nil, fmt.Errorf("%s takes one input and gives one output, has %d and %d", [2]string{"score_mod", "prob_mod"}[i], len(sub.names), len(sub.outs))
		}
		mods[i] = sub
	}
	precision := int64(0)
	if p := at.SoftmaxPrecision; p != nil {
		switch onnxpb.DataType(*p) {
		case onnxpb.Float, onnxpb.Double:
			precision = *p
		default:
			return nil, unsupportedf("FlexAttention softmax_precision %v", onnxpb.DataType(*p))
		}
	}
	exec, soft := n.opts.Exec, kernelTable(n).SoftmaxRow
	n.runCtx = func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		q, k, v := in[0], in[1], in[2]
		for _, x := range []*tensor.Tensor{q, k, v} {
			if !x.DType.IsFloat() || x.DType != q.DType || x.Rank() != 4 {
				return nil, inputErrorf("FlexAttention takes rank-4 Q, K and V of one floating-point type, got %v%s, %v%s, %v%s", q.DType, tensor.ShapeString(q.Shape), k.DType, tensor.ShapeString(k.Shape), v.DType, tensor.ShapeString(v.Shape))
			}
		}
		sh := attnShape{b: q.Shape[0], hq: q.Shape[1], sq: q.Shape[2], d: q.Shape[3], hkv: k.Shape[1], t: k.Shape[2], dv: v.Shape[3]}
		if k.Shape[0] != sh.b || v.Shape[0] != sh.b || k.Shape[3] != sh.d || v.Shape[1] != sh.hkv || v.Shape[2] != sh.t || sh.hkv == 0 || sh.hq%sh.hkv != 0 {
			return nil, inputErrorf("FlexAttention: Q %s, K %s and V %s do not agree", tensor.ShapeString(q.Shape), tensor.ShapeString(k.Shape), tensor.ShapeString(v.Shape))
		}
		if _, err := tensor.NumElements([]int{sh.b, sh.hq, sh.sq, sh.t}); err != nil {
			return nil, inputErrorf("FlexAttention: %v", err)
		}
		scale := 1 / math.Sqrt(float64(sh.d))
		if at.Scale != nil {
			scale = float64(*at.Scale)
		}
		f := flexCall{ctx: ctx, in: in, mods: mods, sh: sh, scale: scale, soft: soft}
		if precision == int64(onnxpb.Double) || precision == 0 && q.DType == tensor.Float64 {
			return flexIn(&f, attnFloat64s, func(k, v attnView[float64]) attnKernels[float64] { return &attnRef[float64]{k: k, v: v, sh: sh} })
		}
		return flexIn(&f, attnFloat32s, func(k, v attnView[float32]) attnKernels[float32] { return newAttnF32(exec, k, v, sh) })
	}
	return nil, nil
}

type flexCall struct {
	soft  func([]float32, float32)
	ctx   context.Context
	in    []*tensor.Tensor
	mods  [2]*subgraph
	sh    attnShape
	scale float64
}

func flexIn[T float32 | float64](f *flexCall, toT func(*tensor.Tensor) []T, newKern func(k, v attnView[T]) attnKernels[T]) ([]*tensor.Tensor, error) {
	sh := f.sh
	q := headMajor(toT(f.in[0]), sh.hq, sh.sq, sh.d)
	kern := newKern(headMajor(toT(f.in[1]), sh.hkv, sh.t, sh.d), headMajor(toT(f.in[2]), sh.hkv, sh.t, sh.dv))
	scoreShape := []int{sh.b, sh.hq, sh.sq, sh.t}
	scores := make([]T, sh.b*sh.hq*sh.sq*sh.t)
	rep, blk := sh.hq/sh.hkv, sh.sq*sh.t
	sc := T(f.scale)
	for b := 0; b < sh.b; b++ {
		for g := 0; g < sh.hkv; g++ {
			kern.prepareK(b, g)
			for r := 0; r < rep; r++ {
				h := g*rep + r
				s := scores[(b*sh.hq+h)*blk : (b*sh.hq+h+1)*blk]
				kern.qk(q.data[q.at(b, h):], q.ss, sh.sq, s)
				for j := range s {
					s[j] *= sc
				}
			}
		}
	}
	modify := func(i int) error {
		if f.mods[i] == nil {
			return nil
		}
		x := tensor.From(scoreShape, scores)
		out, err := f.mods[i].call(f.ctx, f.in, []*tensor.Tensor{x})
		if err != nil {
			return err
		}
		got, ok := out[0].Data.([]T)
		if !ok || !equalShape(out[0].Shape, scoreShape) {
			return inputErrorf("FlexAttention: %s returned %v%s for %v%s", [2]string{"score_mod", "prob_mod"}[i], out[0].DType, tensor.ShapeString(out[0].Shape), x.DType, tensor.ShapeString(scoreShape))
		}
		scores = got
		return nil
	}
	if err := modify(0); err != nil {
		return nil, err
	}
	if f.mods[0] != nil { // the subgraph's result may be a value it shares
		scores = append([]T(nil), scores...)
	}
	for i := 0; i*sh.t < len(scores) && sh.t > 0; i++ {
		softmaxRow(scores[i*sh.t:(i+1)*sh.t], f.soft)
	}
	if err := modify(1); err != nil {
		return nil, err
	}
	yd := make([]T, sh.b*sh.hq*sh.sq*sh.dv)
	y := headMajor(yd, sh.hq, sh.sq, sh.dv)
	for b := 0; b < sh.b; b++ {
		for g := 0; g < sh.hkv; g++ {
			kern.prepareV(b, g)
			for r := 0; r < rep; r++ {
				h := g*rep + r
				kern.pv(scores[(b*sh.hq+h)*blk:], sh.sq, y.data[y.at(b, h):], y.ss)
			}
		}
	}
	if err := kern.err(); err != nil {
		return nil, err
	}
	dt := f.in[0].DType
	return []*tensor.Tensor{{DType: dt, Shape: []int{sh.b, sh.hq, sh.sq, sh.dv}, Data: attnRoundAs(yd, dt)}}, nil
}

// RotaryEmbeddingAttrs are RotaryEmbedding's attributes.
type RotaryEmbeddingAttrs struct {
	Interleaved        bool  `onnx:"interleaved"`
	NumHeads           int64 `onnx:"num_heads"`
	RotaryEmbeddingDim int64 `onnx:"rotary_embedding_dim"` // 0: the head size
}

func init() {
	register(Descriptor{Type: "RotaryEmbedding", Since: 23, Fold: true}, buildRotaryEmbedding)
}

// buildRotaryEmbedding implements RotaryEmbedding (opset 23): the first
// rotary_embedding_dim features of each head are rotated pairwise, pairs
// being (i, i + dim/2) or, interleaved, (2i, 2i+1), by the angles whose
// cosines and sines the caches hold for each token's position.
func buildRotaryEmbedding(n *node, at *RotaryEmbeddingAttrs) (opFunc, error) {
	if err := n.checkArity(3, 4, 1, 1); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 3); err != nil {
		return nil, err
	}
	if at.NumHeads < 0 || at.RotaryEmbeddingDim < 0 {
		return nil, fmt.Errorf("negative num_heads %d or rotary_embedding_dim %d", at.NumHeads, at.RotaryEmbeddingDim)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, cos, sin := in[0], in[1], in[2]
		var pos *tensor.Tensor
		if len(in) > 3 {
			pos = in[3]
		}
		rg, err := newRotaryGeom(at, x, cos, sin, pos)
		if err != nil {
			return nil, err
		}
		var out any
		if xd, ok := x.Data.([]float64); ok {
			out = rotaryApply(rg, xd, attnFloat64s(cos), attnFloat64s(sin))
		} else {
			xf, err := lnFloat32s(x, "RotaryEmbedding")
			if err != nil {
				return nil, err
			}
			out = lnRound(rotaryApply(rg, xf, attnFloat32s(cos), attnFloat32s(sin)), x.DType)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
	}, nil
}

// rotaryGeom is one RotaryEmbedding call's layout.
type rotaryGeom struct {
	b, h, s, d  int
	rd          int // features rotated
	interleaved bool
	x           attnView[float32] // strides only
	pos         []int64           // (b, s) cache rows; nil: the caches are (b, s, rd/2)
}

func newRotaryGeom(at *RotaryEmbeddingAttrs, x, cos, sin, pos *tensor.Tensor) (*rotaryGeom, error) {
	if !x.DType.IsFloat() || cos.DType != x.DType || sin.DType != x.DType {
		return nil, inputErrorf("RotaryEmbedding takes a floating-point input and caches of its type, got %v, %v, %v", x.DType, cos.DType, sin.DType)
	}
	rg := &rotaryGeom{interleaved: at.Interleaved}
	switch x.Rank() {
	case 4:
		rg.b, rg.h, rg.s, rg.d = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		rg.x = headMajor[float32](nil, rg.h, rg.s, rg.d)
	case 3:
		if at.NumHeads <= 0 || at.NumHeads > math.MaxInt32 || x.Shape[2]%int(at.NumHeads) != 0 {
			return nil, inputErrorf("RotaryEmbedding on a rank-3 input needs num_heads dividing its hidden size %d, has %d", x.Shape[2], at.NumHeads)
		}
		rg.b, rg.s, rg.h = x.Shape[0], x.Shape[1], int(at.NumHeads)
		rg.d = x.Shape[2] / rg.h
		rg.x = seqMajor[float32](nil, rg.h, rg.s, rg.d)
	default:
		return nil, inputErrorf("RotaryEmbedding takes a rank-3 or rank-4 input, got %s", tensor.ShapeString(x.Shape))
	}
	rg.rd = rg.d
	if at.RotaryEmbeddingDim > 0 {
		if at.RotaryEmbeddingDim > int64(rg.d) {
			return nil, inputErrorf("rotary_embedding_dim %d exceeds the head size %d", at.RotaryEmbeddingDim, rg.d)
		}
		rg.rd = int(at.RotaryEmbeddingDim)
	}
	if rg.rd%2 != 0 {
		return nil, inputErrorf("RotaryEmbedding rotates pairs: %d features is odd", rg.rd)
	}
	half := rg.rd / 2
	if !equalShape(cos.Shape, sin.Shape) {
		return nil, inputErrorf("RotaryEmbedding: cos_cache %s and sin_cache %s differ", tensor.ShapeString(cos.Shape), tensor.ShapeString(sin.Shape))
	}
	if pos != nil {
		p, ok := pos.Data.([]int64)
		if !ok || !equalShape(pos.Shape, []int{rg.b, rg.s}) {
			return nil, inputErrorf("RotaryEmbedding: position_ids must be INT64 of shape (%d, %d), got %v%s", rg.b, rg.s, pos.DType, tensor.ShapeString(pos.Shape))
		}
		if cos.Rank() != 2 || cos.Shape[1] != half {
			return nil, inputErrorf("RotaryEmbedding: caches indexed by position must be (max_position, %d), got %s", half, tensor.ShapeString(cos.Shape))
		}
		for _, v := range p {
			if v < 0 || v >= int64(cos.Shape[0]) {
				return nil, inputErrorf("RotaryEmbedding: position %d is outside the cache's %d rows", v, cos.Shape[0])
			}
		}
		rg.pos = p
	} else if !equalShape(cos.Shape, []int{rg.b, rg.s, half}) {
		return nil, inputErrorf("RotaryEmbedding without position_ids needs caches of shape (%d, %d, %d), got %s", rg.b, rg.s, half, tensor.ShapeString(cos.Shape))
	}
	return rg, nil
}

// rotaryApply returns x rotated as rg describes, in T.
func rotaryApply[T float32 | float64](rg *rotaryGeom, x, cos, sin []T) []T {
	out := make([]T, len(x))
	copy(out, x) // features past rd pass through
	half := rg.rd / 2
	for b := 0; b < rg.b; b++ {
		for s := 0; s < rg.s; s++ {
			row := b*rg.s + s // the caches' row
			if rg.pos != nil {
				row = int(rg.pos[row])
			}
			c, sn := cos[row*half:(row+1)*half], sin[row*half:(row+1)*half]
			for h := 0; h < rg.h; h++ {
				off := rg.x.at(b, h) + s*rg.x.ss
				xi, yo := x[off:off+rg.rd], out[off:off+rg.rd]
				if rg.interleaved {
					for i := 0; i < half; i++ {
						x1, x2 := xi[2*i], xi[2*i+1]
						yo[2*i] = c[i]*x1 - sn[i]*x2
						yo[2*i+1] = sn[i]*x1 + c[i]*x2
					}
					continue
				}
				for i := 0; i < half; i++ {
					x1, x2 := xi[i], xi[i+half]
					yo[i] = c[i]*x1 - sn[i]*x2
					yo[i+half] = sn[i]*x1 + c[i]*x2
				}
			}
		}
	}
	return out
}

// AttentionForward is an Attention node's forward pass recomputed in
// float64 for a backward pass. Q is (B, QHeads, QLen, HeadSize), K
// (B, KVHeads, Len, HeadSize) and V (B, KVHeads, Len, VHeadSize), all
// head-major with the past prepended (Len = Past + this step's keys);
// Scores are the scaled products before softcap and Probs the softmax,
// both (B, QHeads, QLen, Len). Query head h reads key/value head
// h / (QHeads / KVHeads).
type AttentionForward struct {
	B, QHeads, KVHeads, QLen, Len, HeadSize, VHeadSize, Past int
	Rank3                                                    bool // the inputs are (batch, seq, heads·size)
	Scale, Softcap                                           float64
	Q, K, V, Scores, Probs                                   []float64
}

// TraceAttention recomputes the forward pass of an Attention node with
// attributes at on inputs in (as the node received them).
func TraceAttention(at *AttentionAttrs, in []*tensor.Tensor) (*AttentionForward, error) {
	get := func(i int) *tensor.Tensor {
		if i >= len(in) || in[i] == nil {
			return nil
		}
		if in[i].DType.IsFloat() {
			t, _ := castTo(in[i], tensor.Float64)
			return t
		}
		return in[i]
	}
	if len(in) < 3 || in[0] == nil || in[1] == nil || in[2] == nil {
		return nil, inputErrorf("Attention takes Q, K and V")
	}
	a := &attentionCall{at: at, q: get(0), k: get(1), v: get(2), mask: get(3), pastK: get(4), pastV: get(5), nonpad: get(6), wantPresent: true, wantQK: true}
	if err := a.check(); err != nil {
		return nil, err
	}
	ref := func(sh attnShape, k, v attnView[float64]) attnKernels[float64] {
		return &attnRef[float64]{k: k, v: v, sh: sh}
	}
	modes := *at
	modes.QKMatMulOutputMode = 0
	a.at = &modes
	scores, err := attentionIn(a, attnFloat64s, ref)
	if err != nil {
		return nil, err
	}
	modes.QKMatMulOutputMode = 3
	probs, err := attentionIn(a, attnFloat64s, ref)
	if err != nil {
		return nil, err
	}
	sh := a.sh
	f := &AttentionForward{
		B: sh.b, QHeads: sh.hq, KVHeads: sh.hkv, QLen: sh.sq, Len: sh.t, HeadSize: sh.d, VHeadSize: sh.dv, Past: a.past,
		Rank3: a.rank3, Softcap: float64(at.Softcap), Scale: 1 / math.Sqrt(float64(sh.d)),
		K: attnFloat64s(probs[1]), V: attnFloat64s(probs[2]), Scores: attnFloat64s(scores[3]), Probs: attnFloat64s(probs[3]),
	}
	if at.Scale != nil {
		f.Scale = float64(*at.Scale)
	}
	f.Q = attnFloat64s(a.q)
	if a.rank3 {
		f.Q = concatHeads(nil, seqMajor(f.Q, sh.hq, sh.sq, sh.d), sh.b, sh.hq, 0, sh.sq, sh.d)
	}
	return f, nil
}
