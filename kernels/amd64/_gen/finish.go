package main

// The finish of a block kernel's outputs (kernels.QFinish, FFinish), which
// the int8 and the float kernel share: the residual's rows asked for as
// the kernel starts, the operands loaded for the epilogue, and each
// output vector's bias, residual and clamp, as ConvFinish computes them.
// Field offsets are the block's (qRes, fRes, ...).

// prefetchResidual writes, at the kernel's start (DI the block), a
// prefetch of the eight rows' three panels of the residual when the
// flag bit of the flags at flagsOff is set and Res (at resOff, its
// stride LDR at ldrOff) is not nil, then the label skip. The epilogue
// reads them after the K loop, which is short for the 1x1 convolutions
// of few input channels. It uses R8 and R9.
func prefetchResidual(skip string, bit, flagsOff, resOff, ldrOff int, flag string) {
	p("\tTESTQ $%d, %d(DI) // %s", bit, flagsOff, flag)
	p("\tJZ    %s", skip)
	p("\tMOVQ %d(DI), R8 // Res", resOff)
	p("\tTESTQ R8, R8")
	p("\tJZ    %s", skip)
	p("\tMOVQ %d(DI), R9", ldrOff)
	p("\tSHLQ $2, R9")
	for r := 0; r < 8; r++ {
		for pp := 0; pp < 3; pp++ {
			p("\tPREFETCHT0 %d(R8)", 64*pp)
		}
		if r < 7 {
			p("\tADDQ R9, R8")
		}
	}
	p("%s:", skip)
}

// loadFinish loads the finish's operands (DI the block): Bias to SI, lo
// and hi to Z28 and Z29, Res to DX and its stride in bytes to R8.
func loadFinish(biasOff, loOff, hiOff, resOff, ldrOff int) {
	p("\tMOVQ %d(DI), SI // Bias", biasOff)
	p("\tVBROADCASTSS %d(DI), Z28 // lo", loOff)
	p("\tVBROADCASTSS %d(DI), Z29 // hi", hiOff)
	p("\tMOVQ %d(DI), DX // Res", resOff)
	p("\tMOVQ %d(DI), R8", ldrOff)
	p("\tSHLQ $2, R8     // LDR in bytes")
}

// finishVector finishes output vector Z(z) of panel pp as loadFinish left
// the operands: + bias, + the residual's row with res, clamped to
// [Z28, Z29] as ConvFinish clamps.
func finishVector(z, pp int, res bool) {
	p("\tVADDPS %d(SI), Z%d, Z%d // + bias", pp*64, z, z)
	if res {
		p("\tVADDPS %d(DX), Z%d, Z%d // + residual", pp*64, z, z)
	}
	p("\tVMAXPS Z%d, Z28, Z%d // lo > v ? lo : v", z, z)
	p("\tVMINPS Z%d, Z29, Z%d // hi < v ? hi : v", z, z)
}
