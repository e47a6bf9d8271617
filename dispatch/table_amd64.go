//go:build amd64

package dispatch

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/kernels/amd64"
)

// XCR0 bits: the OS saves (and so lets programs use) the SSE and AVX
// registers (bits 1-2), the AVX-512 opmask and zmm registers (bits 5-7)
// and the AMX tiles (bits 17-18).
const (
	xcr0AVX    = 0x6
	xcr0AVX512 = 0xe6
	xcr0AMX    = 0x60000 // tile configuration and tile data (bits 17-18)
)

// osSaves reports whether the OS saves the register state in mask: cpuid
// says what the CPU has, XCR0 what the OS lets a program use.
func osSaves(mask uint64) bool {
	return amd64.XCR0(cpuid.CPU.Supports(cpuid.OSXSAVE))&mask == mask
}

func isaTables() []*Table {
	avx2 := func() bool {
		return amd64.Available && cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3) && osSaves(xcr0AVX)
	}
	avx512 := func(extra ...cpuid.FeatureID) bool {
		return avx2() && cpuid.CPU.Supports(append(extra, cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL)...) && osSaves(xcr0AVX512)
	}
	ts := []*Table{{
		Name:           "avx512vnni",
		Needs:          "AVX-512 F, BW, VL and VNNI (zmm vpdpbusd), AVX2 and FMA, with the OS saving zmm state (XCR0)",
		MR:             8,
		NP:             3,
		QBlock:         amd64.QBlockAVX512VNNI,
		FullRange:      true,
		QFinish:        true,
		FMR:            8,
		FNP:            3,
		FBlock:         amd64.FBlockAVX512,
		FRow:           amd64.FRowAVX512,
		FFinish:        true,
		FDraws:         true,
		MinMax:         amd64.MinMaxAVX512,
		MinMaxRows:     amd64.MinMaxRowsAVX512,
		QuantizeU8:     amd64.QuantizeU8AVX512,
		QuantizeRowsU8: amd64.QuantizeRowsU8AVX512,
		QuantizeRunsU8: amd64.QuantizeRunsU8AVX512,
		GatherRunsU8:   amd64.GatherRunsU8AVX512,
		QuantizeDivU8:  amd64.QuantizeDivU8AVX512,
		SoftmaxRow:     amd64.SoftmaxRowAVX512,
		Gelu:           amd64.GeluAVX512,
		AddBias:        amd64.AddBiasAVX512,
		Sigmoid:        amd64.SigmoidAVX512,
		Tanh:           amd64.TanhAVX512,
		GeluTanh:       amd64.GeluTanhAVX512,
		XSigmoid:       amd64.XSigmoidAVX512,

		ConvTaps:       amd64.ConvTapsAVX2,
		TransposeCols:  amd64.TransposeColsAVX2,
		Transpose8:     amd64.Transpose8AVX2,
		ConvFinish:     amd64.ConvFinishAVX512,
		ConvHard:       amd64.ConvHardAVX512,
		ScaleRows:      amd64.ScaleRowsAVX2,
		PoolSum:        amd64.PoolSumAVX2,
		ColumnPoolSums: amd64.ColumnPoolSumsAVX512,
		LeakyRelu:      amd64.LeakyReluAVX512,
		MaxMinConst:    amd64.MaxMinConstAVX512,
		MaxPair:        amd64.MaxPairAVX512,
		MaxCols:        amd64.MaxColsAVX512,
		LayerNormSums:  amd64.LayerNormSumsAVX2,
		LayerNormApply: amd64.LayerNormApplyAVX2,
		TouchRows:      amd64.TouchRows,
		DepthwiseRows:  amd64.DepthwiseRowsAVX512,
		DepthwiseAlign: 8,
		PadChannels:    amd64.PadChannelsAVX512,
		CopyBlock:      amd64.CopyBlockAVX512,
		EveryOther:     amd64.EveryOtherAVX512,
		FakeQuant:      amd64.FakeQuantAVX512,
		FakeQuantTable: amd64.FakeQuantTableAVX512,

		supported: func() bool { return avx512(cpuid.AVX512VNNI) },
	}, {
		Name:           "avx512",
		Needs:          "AVX-512 F, BW and VL (zmm FMA), AVX2 and FMA, with the OS saving zmm state (XCR0)",
		MR:             32,
		NP:             1,
		QBlock:         amd64.QBlockAVX2,
		FMR:            8,
		FNP:            3,
		FBlock:         amd64.FBlockAVX512,
		FRow:           amd64.FRowAVX512,
		FFinish:        true,
		FDraws:         true,
		MinMax:         amd64.MinMaxAVX512,
		MinMaxRows:     amd64.MinMaxRowsAVX512,
		QuantizeU8:     amd64.QuantizeU8AVX512,
		QuantizeRowsU8: amd64.QuantizeRowsU8AVX512,
		QuantizeRunsU8: amd64.QuantizeRunsU8AVX512,
		GatherRunsU8:   amd64.GatherRunsU8AVX512,
		QuantizeDivU8:  amd64.QuantizeDivU8AVX512,
		SoftmaxRow:     amd64.SoftmaxRowAVX512,
		Gelu:           amd64.GeluAVX512,
		AddBias:        amd64.AddBiasAVX512,
		Sigmoid:        amd64.SigmoidAVX512,
		Tanh:           amd64.TanhAVX512,
		GeluTanh:       amd64.GeluTanhAVX512,
		XSigmoid:       amd64.XSigmoidAVX512,

		ConvTaps:       amd64.ConvTapsAVX2,
		TransposeCols:  amd64.TransposeColsAVX2,
		Transpose8:     amd64.Transpose8AVX2,
		ConvFinish:     amd64.ConvFinishAVX512,
		ConvHard:       amd64.ConvHardAVX512,
		ScaleRows:      amd64.ScaleRowsAVX2,
		PoolSum:        amd64.PoolSumAVX2,
		ColumnPoolSums: amd64.ColumnPoolSumsAVX512,
		LeakyRelu:      amd64.LeakyReluAVX512,
		MaxMinConst:    amd64.MaxMinConstAVX512,
		MaxPair:        amd64.MaxPairAVX512,
		MaxCols:        amd64.MaxColsAVX512,
		LayerNormSums:  amd64.LayerNormSumsAVX2,
		LayerNormApply: amd64.LayerNormApplyAVX2,
		TouchRows:      amd64.TouchRows,
		DepthwiseRows:  amd64.DepthwiseRowsAVX512,
		DepthwiseAlign: 8,
		PadChannels:    amd64.PadChannelsAVX512,
		CopyBlock:      amd64.CopyBlockAVX512,
		EveryOther:     amd64.EveryOtherAVX512,
		FakeQuant:      amd64.FakeQuantAVX512,
		FakeQuantTable: amd64.FakeQuantTableAVX512,

		supported: func() bool { return avx512() },
	}, {
		Name:           "avxvnni",
		Needs:          "AVX-VNNI (VEX ymm vpdpbusd), AVX2 and FMA, with the OS saving ymm state (XCR0)",
		MR:             6,
		NP:             1,
		QBlock:         amd64.QBlockAVXVNNI,
		FullRange:      true,
		FMR:            24,
		FNP:            1,
		FBlock:         amd64.FBlockAVX2,
		FRow:           amd64.FRowAVX2,
		MinMax:         amd64.MinMaxAVX2,
		MinMaxRows:     minMaxRowsWith(amd64.MinMaxAVX2),
		QuantizeU8:     amd64.QuantizeU8AVX2,
		QuantizeRowsU8: rowsWith(amd64.MinMaxAVX2, amd64.QuantizeU8AVX2),
		QuantizeRunsU8: runsWith(amd64.QuantizeU8AVX2),
		GatherRunsU8:   kernels.GatherRunsU8,
		QuantizeDivU8:  amd64.QuantizeDivU8AVX2,
		SoftmaxRow:     amd64.SoftmaxRowAVX2,
		Gelu:           amd64.GeluAVX2,
		AddBias:        amd64.AddBiasAVX2,
		Sigmoid:        amd64.SigmoidAVX2,
		Tanh:           amd64.TanhAVX2,
		GeluTanh:       amd64.GeluTanhAVX2,
		XSigmoid:       amd64.XSigmoidAVX2,

		ConvTaps:       amd64.ConvTapsAVX2,
		TransposeCols:  amd64.TransposeColsAVX2,
		Transpose8:     amd64.Transpose8AVX2,
		ConvFinish:     amd64.ConvFinishAVX2,
		ConvHard:       amd64.ConvHardAVX2,
		ScaleRows:      amd64.ScaleRowsAVX2,
		PoolSum:        amd64.PoolSumAVX2,
		ColumnPoolSums: amd64.ColumnPoolSumsAVX2,
		LeakyRelu:      amd64.LeakyReluAVX2,
		MaxMinConst:    amd64.MaxMinConstAVX2,
		MaxPair:        amd64.MaxPairAVX2,
		MaxCols:        amd64.MaxColsAVX2,
		LayerNormSums:  amd64.LayerNormSumsAVX2,
		LayerNormApply: amd64.LayerNormApplyAVX2,
		TouchRows:      amd64.TouchRows,
		DepthwiseRows:  amd64.DepthwiseRowsAVX2,
		DepthwiseAlign: 8,
		PadChannels:    kernels.PadChannels,
		CopyBlock:      kernels.CopyBlock,
		EveryOther:     kernels.EveryOther,
		FakeQuant:      amd64.FakeQuantAVX2,
		FakeQuantTable: amd64.FakeQuantTableAVX2,

		supported: func() bool { return avx2() && cpuid.CPU.Supports(cpuid.AVXVNNI) },
	}, {
		Name:           "avx2",
		Needs:          "AVX2 and FMA, with the OS saving ymm state (XCR0)",
		MR:             32,
		NP:             1,
		QBlock:         amd64.QBlockAVX2,
		FMR:            24,
		FNP:            1,
		FBlock:         amd64.FBlockAVX2,
		FRow:           amd64.FRowAVX2,
		MinMax:         amd64.MinMaxAVX2,
		MinMaxRows:     minMaxRowsWith(amd64.MinMaxAVX2),
		QuantizeU8:     amd64.QuantizeU8AVX2,
		QuantizeRowsU8: rowsWith(amd64.MinMaxAVX2, amd64.QuantizeU8AVX2),
		QuantizeRunsU8: runsWith(amd64.QuantizeU8AVX2),
		GatherRunsU8:   kernels.GatherRunsU8,
		QuantizeDivU8:  amd64.QuantizeDivU8AVX2,
		SoftmaxRow:     amd64.SoftmaxRowAVX2,
		Gelu:           amd64.GeluAVX2,
		AddBias:        amd64.AddBiasAVX2,
		Sigmoid:        amd64.SigmoidAVX2,
		Tanh:           amd64.TanhAVX2,
		GeluTanh:       amd64.GeluTanhAVX2,
		XSigmoid:       amd64.XSigmoidAVX2,

		ConvTaps:       amd64.ConvTapsAVX2,
		TransposeCols:  amd64.TransposeColsAVX2,
		Transpose8:     amd64.Transpose8AVX2,
		ConvFinish:     amd64.ConvFinishAVX2,
		ConvHard:       amd64.ConvHardAVX2,
		ScaleRows:      amd64.ScaleRowsAVX2,
		PoolSum:        amd64.PoolSumAVX2,
		ColumnPoolSums: amd64.ColumnPoolSumsAVX2,
		LeakyRelu:      amd64.LeakyReluAVX2,
		MaxMinConst:    amd64.MaxMinConstAVX2,
		MaxPair:        amd64.MaxPairAVX2,
		MaxCols:        amd64.MaxColsAVX2,
		LayerNormSums:  amd64.LayerNormSumsAVX2,
		LayerNormApply: amd64.LayerNormApplyAVX2,
		TouchRows:      amd64.TouchRows,
		DepthwiseRows:  amd64.DepthwiseRowsAVX2,
		DepthwiseAlign: 8,
		PadChannels:    kernels.PadChannels,
		CopyBlock:      kernels.CopyBlock,
		EveryOther:     kernels.EveryOther,
		FakeQuant:      amd64.FakeQuantAVX2,
		FakeQuantTable: amd64.FakeQuantTableAVX2,

		supported: avx2,
	}}
	// The amx table is the avx512vnni table with its products' blocks on
	// AMX tiles: up to 96 rows × 2 panels a block, a pass over K for each
	// 32 rows of it, every other kernel the same.
	amx := *ts[0]
	amx.Name = "amx"
	amx.Needs = "AMX-TILE and AMX-INT8 (tdpbusd) with Linux granting the tile state, and what avx512vnni needs"
	amx.MR, amx.MRStep, amx.NP, amx.QBlock = 96, 32, 2, amd64.QBlockAMX
	amx.supported = func() bool {
		return ts[0].supported() && cpuid.CPU.Supports(cpuid.AMXTILE, cpuid.AMXINT8) && osSaves(xcr0AMX) && amd64.RequestAMX()
	}
	return append([]*Table{&amx}, ts...)
}
