package dispatch

import "github.com/quantserve/quantserve/quant"

// FakeQuantKernels returns the kernels of t that quant.FakeQuant's
// ApplyVector and ApplyTable run a quantize-dequantize pair on: none for
// the pure-Go table, whose three passes over a chunk take about three
// times the pair's scalar loop (26 against 9 µs per 4,096 values).
func (t *Table) FakeQuantKernels() quant.FakeQuantKernels {
	if t == generic {
		return quant.FakeQuantKernels{}
	}
	return quant.FakeQuantKernels{MinMax: t.MinMax, Hard: t.ConvHard, Finish: t.ConvFinish, Scale: t.ScaleRows}
}
