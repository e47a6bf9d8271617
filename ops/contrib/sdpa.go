package contrib

import (
	"math"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// sdpaChunk bounds the scores one head holds at a time (query rows ×
// keys): a long query is taken a block of rows at a time.
const sdpaChunk = 1 << 16

// sdpa is one scaled dot-product attention over heads laid out batch,
// head, sequence, head values (BNSH): for batch item b and head h, query
// i's output is
//
//	softmax(adjust(scale·q[b,h,i]·k[b,h]ᵀ))·v[b,h]
//
// q is [batch, heads, seqQ, headQK], k [batch, heads, seqKV, headQK] and
// v [batch, heads, seqKV, headV], headQK > 0; the output is written to
// out, [batch, seqQ, heads·headV] (each head's values a column block of
// its token's row). The products run on the engine's float kernels
// (float32 sums), each score is scale times its sum rounded to float32,
// adjust (when not nil) then changes a query's row of scores in place
// (adding a bias and a mask), and the engine's SoftmaxRow normalizes the
// row. A head with no keys (seqKV = 0) gives zeros.
type sdpa struct {
	batch, heads, seqQ, seqKV, headQK, headV int

	scale   float32
	q, k, v []float32
	adjust  func(row []float32, b, h, i int)
}

// run computes the attention into out, looking at the request's context
// before each head.
func (a *sdpa) run(c *ops.Context, out []float32) error {
	if a.seqQ == 0 {
		return nil
	}
	e := c.Engine()
	soft := e.Table().SoftmaxRow
	t, d, dv := a.seqKV, a.headQK, a.headV
	ld := a.heads * dv // out's row stride
	chunk := max(1, min(a.seqQ, sdpaChunk/max(t, 1)))
	scores := make([]float32, chunk*t)
	var kp, vp *gemm.FWeights // a head's Kᵀ and V, packed (one buffer each)
	for b := 0; b < a.batch; b++ {
		for h := 0; h < a.heads; h++ {
			if err := c.Err(); err != nil {
				return err
			}
			bh := b*a.heads + h
			q := a.q[bh*a.seqQ*d : (bh+1)*a.seqQ*d]
			y := out[b*a.seqQ*ld+h*dv:]
			if t == 0 || dv == 0 {
				for i := 0; i < a.seqQ; i++ {
					clear(y[i*ld : i*ld+dv])
				}
				continue
			}
			kp = e.RepackFT(kp, d, t, a.k[bh*t*d:(bh+1)*t*d], d)
			vp = gemm.RepackF(vp, t, dv, a.v[bh*t*dv:(bh+1)*t*dv], dv)
			for i0 := 0; i0 < a.seqQ; i0 += chunk {
				m := min(chunk, a.seqQ-i0)
				s := scores[:m*t]
				if err := e.MatMul(q[i0*d:(i0+m)*d], m, kp, s); err != nil {
					return err
				}
				for i := 0; i < m; i++ {
					row := s[i*t : (i+1)*t]
					for j, x := range row {
						row[j] = x * a.scale
					}
					if a.adjust != nil {
						a.adjust(row, b, h, i0+i)
					}
					soft(row, 1)
				}
				if err := e.MatMulStrided(s, m, t, vp, y[i0*ld:(i0+m-1)*ld+dv], ld); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scoreAdjuster returns the function that adds attention_bias ([batch or
// 1, heads or 1, seq, total]), the padding mask padding gives (the value
// added to each score: batch item b's row for query i at pad[b·pb+i·ps:])
// and, when causal, the causal mask to a row of scaled scores, in that
// order, or nil when there is none of them. name names the operator in
// errors.
func scoreAdjuster(name string, batch, heads, seq, past, total int, causal bool, ab *tensor.Tensor, padding func() (pad []float32, pb, ps int, err error)) (func(row []float32, b, h, i int), error) {
	t := total
	var bias []float32
	var bb, bh int // attention_bias's strides over batch and heads (0: broadcast)
	if ab != nil {
		d := ab.Shape
		if ab.Rank() != 4 || d[0] != batch && d[0] != 1 || d[1] != heads && d[1] != 1 || d[2] != seq || d[3] != t {
			return nil, ops.InputErrorf("%s's attention_bias must be [%d or 1, %d or 1, %d, %d], got %s", name, batch, heads, seq, t, tensor.ShapeString(d))
		}
		var err error
		if bias, err = values(name, "attention_bias", ab); err != nil {
			return nil, err
		}
		if d[1] != 1 {
			bh = seq * t
		}
		if d[0] != 1 {
			bb = d[1] * seq * t
		}
	}
	pad, pb, ps, err := padding()
	if err != nil {
		return nil, err
	}
	if bias == nil && pad == nil && !causal {
		return nil, nil
	}
	lowest := float32(-math.MaxFloat32)
	return func(row []float32, b, h, i int) {
		if bias != nil {
			for j, x := range bias[b*bb+h*bh+i*t:][:t] {
				row[j] += x
			}
		}
		n := t // keys attended by the causal mask
		if causal {
			n = min(t, past+i+1)
		}
		if pad != nil {
			for j, x := range pad[b*pb+i*ps:][:n] {
				row[j] += x
			}
		}
		for j := n; j < t; j++ {
			row[j] += lowest
		}
	}, nil
}
