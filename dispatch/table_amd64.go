//go:build amd64

package dispatch

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/kernels/amd64"
)

func isaTables() []*Table {
	return []*Table{{
		Name:       "avx2",
		QTile4:     amd64.QTile4AVX2,
		QTile1:     amd64.QTile1AVX2,
		QPanel:     amd64.QPanelAVX2,
		FRows:      6,
		FTileN:     amd64.FTile6AVX2,
		FTile1:     amd64.FTile1AVX2,
		MinMax:     amd64.MinMaxAVX2,
		QuantizeU8: amd64.QuantizeU8AVX2,
		supported: func() bool {
			return amd64.Available && cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3)
		},
	}}
}
