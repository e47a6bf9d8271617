//go:build gc && !purego

package amd64

// Ops per iteration of the peak loops.
const (
	PeakInt8OpsPerIter = 8 * 64
	PeakF32OpsPerIter  = 12 * 16
)

// PeakInt8 runs the int8 peak loop. Requires AVX2.
func PeakInt8(iters int) int32 { return peakInt8AVX2(max(iters, 1)) }

// PeakF32 runs the float32 FMA peak loop. Requires AVX2 and FMA.
func PeakF32(iters int) float32 { return peakF32FMA(max(iters, 1)) }

// ReadSum streams buf through vector loads. Requires AVX2.
func ReadSum(buf []byte) uint64 { return readSumAVX2(buf) }
