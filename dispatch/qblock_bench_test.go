package dispatch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// BenchmarkQBlock runs one table's block of its full tile (MR rows × NP
// panels, per-channel output) over K of 64, 256 and 1024 from the cache,
// on every table: what a call costs beyond its multiply-adds shows as the
// short blocks' lower rate. ops/s counts a multiply-add as two.
func BenchmarkQBlock(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, k := range []int{64, 256, 1024} {
		for _, tb := range Available() {
			rows, np, kq := tb.MR, tb.NP, k/kernels.KGroup
			ldu, pstr := 4*kq, 64*kq
			q := &kernels.QBlock{
				U: activations(r, rows*ldu, 0), LDU: ldu, Rows: rows,
				B: weights(r, np*pstr, 0), PStr: pstr, NP: np, KQ: kq,
				Flags: kernels.QOutChannel,
				Off:   make([]int32, rows), SA: make([]float32, rows),
				Colsum: make([]int32, np*16), SB: make([]float32, np*16),
				C: make([]float32, rows*np*16), LDC: np * 16,
			}
			b.Run(fmt.Sprintf("%s/%dx%dx%d", tb.Name, rows, k, np*16), func(b *testing.B) {
				for b.Loop() {
					tb.QBlock(q)
				}
				ops := 2 * float64(rows*k*np*16) * float64(b.N)
				b.ReportMetric(ops/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}
