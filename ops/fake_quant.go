package ops

import (
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/quant"
)

// FakeQuantKernels returns the kernels of tb that quant.FakeQuant's
// ApplyVector and ApplyTable run a quantize-dequantize pair on: none for
// the pure-Go table, whose three passes over a chunk take about three
// times the pair's scalar loop.
func FakeQuantKernels(tb *dispatch.Table) quant.FakeQuantKernels {
	if tb.Name == "generic" {
		return quant.FakeQuantKernels{}
	}
	return quant.FakeQuantKernels{MinMax: tb.MinMax, Hard: tb.ConvHard, Finish: tb.ConvFinish, Scale: tb.ScaleRows}
}
