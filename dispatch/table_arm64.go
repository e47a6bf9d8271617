//go:build arm64

package dispatch

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/kernels/arm64"
)

func isaTables() []*Table {
	neon := func(name, needs string, qoffset int32, q4 kernels.Tile4, q1 kernels.Tile1, features ...cpuid.FeatureID) *Table {
		return &Table{
			Name:    name,
			Needs:   needs,
			QOffset: qoffset,
			MR:      4,
			NP:      1,
			QBlock: func(q *kernels.QBlock) {
				q.Check(4, 1)
				kernels.QBlockTiles(q, q4, q1)
			},
			FullRange: true, // SMULL/SADALP, SDOT and USMMLA widen before they add
			FMR:       4,
			FNP:       1,
			FBlock: func(f *kernels.FBlock) {
				f.Check(4, 1)
				kernels.FBlockTiles(f, 4, arm64.FTile4NEON, arm64.FTile1NEON)
			},
			FRow: func(f *kernels.FBlock) {
				kernels.FRowCheck(f)
				kernels.FBlockTiles(f, 4, arm64.FTile4NEON, arm64.FTile1NEON)
			},
			MinMax:         arm64.MinMaxNEON,
			MinMaxRows:     minMaxRowsWith(arm64.MinMaxNEON),
			QuantizeU8:     arm64.QuantizeU8NEON,
			QuantizeRowsU8: rowsWith(arm64.MinMaxNEON, arm64.QuantizeU8NEON),
			QuantizeRunsU8: runsWith(arm64.QuantizeU8NEON),
			GatherRunsU8:   kernels.GatherRunsU8,
			QuantizeDivU8:  arm64.QuantizeDivU8NEON,
			SoftmaxRow:     arm64.SoftmaxRowNEON,
			Gelu:           arm64.GeluNEON,
			AddBias:        arm64.AddBiasNEON,
			Sigmoid:        arm64.SigmoidNEON,
			Tanh:           arm64.TanhNEON,
			GeluTanh:       arm64.GeluTanhNEON,
			XSigmoid:       arm64.XSigmoidNEON,

			ConvTaps:       arm64.ConvTapsNEON,
			TransposeCols:  kernels.TransposeCols[float32],
			Transpose8:     kernels.Transpose8,
			ConvFinish:     arm64.ConvFinishNEON,
			ConvHard:       arm64.ConvHardNEON,
			ScaleRows:      arm64.ScaleRowsNEON,
			PoolSum:        kernels.PoolSum,
			ColumnPoolSums: arm64.ColumnPoolSumsNEON,
			LeakyRelu:      arm64.LeakyReluNEON,
			MaxMinConst:    arm64.MaxMinConstNEON,
			MaxPair:        arm64.MaxPairNEON,
			MaxCols:        colsWith(arm64.MaxPairNEON),
			LayerNormSums:  arm64.LayerNormSumsNEON,
			LayerNormApply: arm64.LayerNormApplyNEON,
			TouchRows:      arm64.TouchRows,
			DepthwiseRows:  arm64.DepthwiseRowsNEON,
			PadChannels:    kernels.PadChannels,
			CopyBlock:      kernels.CopyBlock,
			EveryOther:     kernels.EveryOther,
			FakeQuant:      arm64.FakeQuantNEON,
			FakeQuantTable: arm64.FakeQuantTableNEON,

			supported: func() bool {
				return arm64.Available && cpuid.CPU.Supports(append(features, cpuid.ASIMD)...)
			},
		}
	}
	return []*Table{
		neon("i8mm", "ASIMD and I8MM (USMMLA)", 0, arm64.QTile4I8MM, arm64.QTile1I8MM, cpuid.I8MM),
		neon("sdot", "ASIMD and dotprod (SDOT)", arm64.QOffset, arm64.QTile4SDOT, arm64.QTile1SDOT, cpuid.ASIMDDP),
		neon("neon", "ASIMD (SMULL, SADALP)", arm64.QOffset, arm64.QTile4SMULL, arm64.QTile1SMULL),
	}
}
