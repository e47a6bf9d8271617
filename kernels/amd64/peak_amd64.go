//go:build gc && !purego

package amd64

// Ops per iteration of the peak loops (a multiply-add counts as two).
const (
	PeakInt8OpsPerIter    = 8 * 64   // vpmaddubsw+vpmaddwd+vpaddd, ymm
	PeakF32OpsPerIter     = 12 * 16  // FMA, ymm
	PeakVNNI512OpsPerIter = 24 * 128 // vpdpbusd, zmm
	PeakAVXVNNIOpsPerIter = 12 * 64  // vpdpbusd, ymm (VEX)
	PeakF32ZmmOpsPerIter  = 24 * 32  // FMA, zmm
)

// PeakInt8 runs the int8 peak loop of the avx2 table. Requires AVX2.
func PeakInt8(iters int) int32 { return peakInt8AVX2(max(iters, 1)) }

// PeakF32 runs the float32 FMA peak loop. Requires AVX2 and FMA.
func PeakF32(iters int) float32 { return peakF32FMA(max(iters, 1)) }

// PeakVNNI512 runs the zmm vpdpbusd peak loop. Requires AVX512F and
// AVX512VNNI.
func PeakVNNI512(iters int) int32 { return peakVNNI512(max(iters, 1)) }

// PeakAVXVNNI runs the ymm (VEX) vpdpbusd peak loop. Requires AVX-VNNI.
func PeakAVXVNNI(iters int) int32 { return peakAVXVNNI(max(iters, 1)) }

// PeakF32Zmm runs the zmm FMA peak loop. Requires AVX512F.
func PeakF32Zmm(iters int) float32 { return peakF32Zmm(max(iters, 1)) }

// ReadSum streams buf through vector loads. Requires AVX2.
func ReadSum(buf []byte) uint64 { return readSumAVX2(buf) }

// ReadSum4 streams buf through vector loads as four interleaved streams
// (its quarters), as a product reads several weight panels at once: one
// stream alone keeps too few lines in flight to reach the bandwidth of
// some CPUs. Requires AVX2.
func ReadSum4(buf []byte) uint64 {
	q := len(buf) / 4 &^ 127
	return readSum4AVX2(buf[:4*q], q)
}
