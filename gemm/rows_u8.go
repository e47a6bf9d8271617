package gemm

import (
	"fmt"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// PrepareU8 readies r for m rows of k unsigned bytes that the caller
// writes in place, row i at u[i*ldu : i*ldu+k] (the bytes past k of each
// row are zero and must stay so), each row with zero point zp and scale 1.
// wide says whether some byte may exceed 128: QMatMulInt32 then runs in
// two passes on a table whose kernel is exact only up to 128, and
// QMatMulRows refuses such rows there. It lets an operator that quantizes
// its activations itself (with DynamicQuantizeLinear's rounding, say)
// write them straight into the rows the kernels read.
func (r *QRows) PrepareU8(m, k int, zp int32, wide bool) (u []uint8, ldu int, err error) {
	if m < 0 || k < 0 || zp < 0 || zp > 255 {
		return nil, 0, fmt.Errorf("gemm: %d rows of %d bytes, zero point %d", m, k, zp)
	}
	ldu = kernels.PackedKLen(k)
	r.m, r.k, r.ldu, r.offOK, r.wide = m, k, ldu, false, wide
	r.u = grow(r.u, paddedRows(m)*ldu)
	r.zp = grow(r.zp, m)
	r.scale = grow(r.scale, m)
	for i := 0; i < m; i++ {
		clear(r.u[i*ldu+k : (i+1)*ldu])
		r.zp[i], r.scale[i] = zp, 1
	}
	return r.u[:m*ldu], ldu, nil
}

// Wide reports whether r's bytes may exceed 128 (QMatMulRows then needs a
// FullRange table).
func (r *QRows) Wide() bool { return r.wide }

// WithScales returns weights that share q's packed values and column sums
// and scale column j by s[j] (N of them) in place of q's scales: for a
// product whose scales change from run to run (a dynamically quantized
// activation's scale times the weight's), QMatMulRows then writes
// float32(Σ (u - zp)·W[k][j]) · sa · s[j]. The copy is cheap: only the
// scales are new.
func (q *QWeights) WithScales(s []float32) (*QWeights, error) {
	if q.Scheme == quant.PerBlock || len(s) != q.N {
		return nil, fmt.Errorf("gemm: %d scales for %d columns of %v weights", len(s), q.N, q.Scheme)
	}
	c := *q
	c.Scheme = quant.PerChannel
	c.scales = make([]float32, q.cols)
	copy(c.scales, s)
	return &c, nil
}
