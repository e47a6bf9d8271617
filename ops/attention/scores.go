package attention

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

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
		return nil, ops.InputErrorf("attn_mask must have rank 1 to 4, got shape %s", tensor.ShapeString(mask.Shape))
	}
	full := [4]int{1, 1, 1, 1}
	copy(full[4-r:], mask.Shape)
	want := [3]int{sh.b, sh.hq, sh.sq}
	ab.mlen = full[3]
	if ab.mlen > sh.t {
		return nil, ops.InputErrorf("attn_mask of shape %s is longer than the %d keys", tensor.ShapeString(mask.Shape), sh.t)
	}
	stride := ab.mlen
	for d := 2; d >= 0; d-- {
		switch full[d] {
		case want[d]:
			ab.mstr[d] = stride
		case 1:
			ab.mstr[d] = 0
		default:
			return nil, ops.InputErrorf("attn_mask of shape %s does not broadcast to (%d, %d, %d, %d)", tensor.ShapeString(mask.Shape), sh.b, sh.hq, sh.sq, sh.t)
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

// tanh32 is tanh in float32 through ops.Exp32: sign(x)·(1-e)/(1+e) with
// e = exp(-2|x|), within a few float32 ulps of 1 in absolute terms.
func tanh32(x float32) float32 {
	if x != x {
		return x
	}
	a := x
	if a < 0 {
		a = -a
	}
	e := ops.Exp32(-2 * a)
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
