package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQBlockRows: a block run n rows at a time on the reference gives
// what one call gives, for every output the flags choose (Acc, FSum, C
// with the finish and its residual), and leaves q as it found it.
func TestQBlockRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const rows, np, kq, accStr, ldc, ldr = 19, 2, 5, 2 * PanelN, 2*PanelN + 3, 2*PanelN + 1
	flagSets := []int{0, QLoadAcc, QOutChannel | QLoadAcc, QOutChannel | QFinish,
		QOutBlock | QLoadSum, QOutBlock | QLoadSum | QFinal}
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	ints := func(n, lim int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(r.IntN(2*lim) - lim)
		}
		return s
	}
	u := make([]uint8, rows*4*kq)
	for i := range u {
		u[i] = uint8(r.IntN(129))
	}
	b := make([]int8, np*64*kq)
	for i := range b {
		b[i] = int8(r.IntN(255) - 127)
	}
	acc0, fsum0, res := ints(rows*accStr, 1000), fill(rows*accStr), fill(rows*ldr)
	for _, flags := range flagSets {
		for _, n := range []int{1, 4, 8, 18, 19} {
			run := func(block func(*QBlock)) (*QBlock, []int32, []float32, []float32) {
				acc, fsum := slices.Clone(acc0), slices.Clone(fsum0)
				c := make([]float32, rows*ldc)
				q := &QBlock{U: u, LDU: 4 * kq, Rows: rows, B: b, PStr: 64 * kq, NP: np, KQ: kq, Flags: flags,
					Acc: acc, AccStr: accStr, FSum: fsum, Off: ints(rows, 128), SA: fill(rows),
					Colsum: ints(np*PanelN, 5000), SB: fill(np * PanelN), C: c, LDC: ldc,
					Bias: fill(np * PanelN), Res: res, LDR: ldr, Lo: -1e30, Hi: 1e30}
				block(q)
				return q, acc, fsum, c
			}
			seed := r.Uint64()
			r = rand.New(rand.NewPCG(seed, 1))
			_, wantAcc, wantSum, wantC := run(QBlockRef)
			r = rand.New(rand.NewPCG(seed, 1))
			q, acc, fsum, c := run(func(q *QBlock) { QBlockRows(q, n, QBlockRef) })
			if !slices.Equal(acc, wantAcc) || !slices.Equal(fsum, wantSum) || !slices.Equal(c, wantC) {
				t.Fatalf("flags %#x, %d rows at a time: outputs differ from one call", flags, n)
			}
			if q.Rows != rows || len(q.U) != len(u) || len(q.Off) != rows || len(q.C) != rows*ldc || len(q.Res) != len(res) || len(q.Acc) != len(acc0) {
				t.Fatalf("flags %#x, %d rows at a time: q not restored (rows %d)", flags, n, q.Rows)
			}
		}
	}
}
