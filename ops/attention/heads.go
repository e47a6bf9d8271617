package attention

import (
	"math"

	"github.com/quantserve/quantserve/gemm"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// attnChunk bounds the scores one head holds at a time (query rows ×
// keys): long sequences are taken a block of query rows at a time.
// runAttention's chunk is this bound.
const attnChunk = 1 << 16

// kernelsOn makes the product kernels one runner of a head loop uses,
// running its products on e.
type kernelsOn[T float32 | float64] func(e *gemm.Engine, sh attnShape, k, v attnView[T]) attnKernels[T]

// softmaxCost is the work (ops.ParallelFor's units) of a score's scaling,
// masking and softmax, beside the d + dv multiply-adds of its products.
const softmaxCost = ops.ScalarCost / 4

// runAttention runs every head: the heads (of every batch) split across
// the engine's cores, each runner with kernels of its own (newKern); a
// head's keys and values are prepared once per runner for the query heads
// of their group it takes in a row, then each query head takes its
// scores, rows and output, a block of query rows at a time. qk, when not
// nil, receives qk_matmul_output (b, hq, sq, t). It stops with the
// request's error once the request ends.
func runAttention[T float32 | float64](sh attnShape, q, k, v, y attnView[T], newKern kernelsOn[T], rows *attnRows[T], qk []T, chunk int, pace *ops.Context) error {
	chunk = max(1, min(sh.sq, chunk/max(sh.t, 1)))
	rep := sh.hq / sh.hkv
	heads := sh.b * sh.hq
	work := int(min(int64(heads)*int64(sh.sq)*int64(sh.t)*int64(sh.d+sh.dv+softmaxCost), math.MaxInt))
	return pace.ParallelFor(heads, work, func(e *gemm.Engine, u0, u1 int) error {
		kern := newKern(e, sh, k, v)
		defer kern.release()
		s, free := scratch[T](pace, chunk*sh.t)
		defer free()
		prepared := -1
		for u := u0; u < u1; u++ {
			b, h := u/sh.hq, u%sh.hq
			g := h / rep
			if kv := b*sh.hkv + g; kv != prepared {
				kern.prepareK(b, g)
				kern.prepareV(b, g)
				prepared = kv
			}
			for i0 := 0; i0 < sh.sq; i0 += chunk {
				if err := pace.Err(); err != nil {
					return err
				}
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
		return kern.err()
	})
}

// attentionIn computes Attention in T: toT converts a floating-point
// tensor's values, newKern makes the product kernels.
func attentionIn[T float32 | float64](a *attentionCall, toT func(*tensor.Tensor) []T, newKern kernelsOn[T]) ([]*tensor.Tensor, error) {
	sh := a.sh
	qd, kd, vd := toT(a.q), toT(a.k), toT(a.v)
	var q, k, v attnView[T]
	switch {
	case a.rank3 && a.packed > 0:
		q = packedBlock(qd, 0, a.packed, sh.sq, sh.d)
		k = packedBlock(kd, sh.hq*sh.d, a.packed, sh.t-a.past, sh.d)
		v = packedBlock(vd, sh.hq*sh.d+sh.hkv*sh.d, a.packed, sh.t-a.past, sh.dv)
	case a.rank3:
		q = seqMajor(qd, sh.hq, sh.sq, sh.d)
		k = seqMajor(kd, sh.hkv, sh.t-a.past, sh.d)
		v = seqMajor(vd, sh.hkv, sh.t-a.past, sh.dv)
	default:
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
	yd := ops.Output[T](a.pace, sh.b*sh.hq*sh.sq*sh.dv) // every head's rows are written
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
	if err := runAttention(sh, q, k, v, y, newKern, rows, qk, chunk, a.pace); err != nil {
		return nil, err
	}

	out := []*tensor.Tensor{{DType: a.q.DType, Shape: yShape, Data: roundAs(yd, a.q.DType)}, nil, nil, nil}
	if presentK != nil {
		out[1] = &tensor.Tensor{DType: a.k.DType, Shape: []int{sh.b, sh.hkv, sh.t, sh.d}, Data: roundAs(presentK, a.k.DType)}
		out[2] = &tensor.Tensor{DType: a.v.DType, Shape: []int{sh.b, sh.hkv, sh.t, sh.dv}, Data: roundAs(presentV, a.v.DType)}
	}
	if qk != nil {
		out[3] = &tensor.Tensor{DType: a.q.DType, Shape: []int{sh.b, sh.hq, sh.sq, sh.t}, Data: roundAs(qk, a.q.DType)}
	}
	return out, nil
}

// scratch returns n elements of scratch memory for one run, from the
// Context's pools when T is float32, and the function giving it back.
func scratch[T float32 | float64](c *ops.Context, n int) ([]T, func()) {
	var zero T
	if _, ok := any(zero).(float32); ok {
		b := c.Scratch(n)
		return any(b).([]T), func() { c.Free(b) }
	}
	return make([]T, n), func() {}
}
