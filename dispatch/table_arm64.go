//go:build arm64

package dispatch

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/kernels/arm64"
)

func isaTables() []*Table {
	neon := func(variant string, q4 func([]uint8, int, []int8, int, []int32), q1 func([]uint8, []int8, int, []int32), needs ...cpuid.FeatureID) *Table {
		t := &Table{
			Name:       "neon",
			Variant:    variant,
			QOffset:    arm64.QOffset,
			QTile4:     q4,
			QTile1:     q1,
			FRows:      4,
			FTileN:     arm64.FTile4NEON,
			FTile1:     arm64.FTile1NEON,
			MinMax:     arm64.MinMaxNEON,
			QuantizeU8: arm64.QuantizeU8NEON,
			supported: func() bool {
				return arm64.Available && cpuid.CPU.Supports(append(needs, cpuid.ASIMD)...)
			},
		}
		t.QPanel = panelFrom(t)
		return t
	}
	return []*Table{
		neon("sdot", arm64.QTile4SDOT, arm64.QTile1SDOT, cpuid.ASIMDDP),
		neon("smull", arm64.QTile4SMULL, arm64.QTile1SMULL),
	}
}

// panelFrom builds the panel kernel from t.QTile4 and the epilogue in Go.
func panelFrom(t *Table) func(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int) {
	return func(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int) {
		var acc [4 * kernels.PanelN]int32
		for tile := 0; tile < tiles; tile++ {
			t.QTile4(u[4*tile*ldu:], ldu, bp, kq, acc[:])
			for r := 0; r < 4; r++ {
				i := 4*tile + r
				for j := 0; j < kernels.PanelN; j++ {
					c[i*ldc+j] = float32(acc[r*kernels.PanelN+j]+off[i]*colsum[j]) * sa[i] * sb[j]
				}
			}
		}
	}
}
