//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// Available reports whether this build contains the assembly kernels.
const Available = true

// qTile4AVX2 computes kernels.QTile(4, u, ldu, bp, kq, acc): a 4×16 tile of
// unsigned activations times one packed weight panel. Requires AVX2,
// len(u) >= 3*ldu+4*kq, len(bp) >= 64*kq, len(acc) >= 64.
//
//go:noescape
func qTile4AVX2(u []uint8, ldu int, bp []int8, kq int, acc []int32)

// qPanelAVX2 computes kernels.QPanel: tiles 4-row tiles against one
// packed panel, each with its per-channel epilogue. Requires AVX2;
// len(u) >= (4*tiles-1)*ldu+4*kq, len(bp) >= 64*kq, len(off), len(sa) >=
// 4*tiles, len(colsum), len(sb) >= 16, len(c) >= (4*tiles-1)*ldc+16.
//
//go:noescape
func qPanelAVX2(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int)

// qTile1AVX2 computes kernels.QTile(1, u, 0, bp, kq, acc). Requires AVX2,
// len(u) >= 4*kq, len(bp) >= 64*kq, len(acc) >= 16.
//
//go:noescape
func qTile1AVX2(u []uint8, bp []int8, kq int, acc []int32)

// fTile6AVX2 computes kernels.FTile(6, a, lda, bp, k, c, ldc) with fused
// multiply-adds, starting from c's values when load != 0. Requires AVX2
// and FMA, len(a) >= 5*lda+k, len(bp) >= 16*k, len(c) >= 5*ldc+16.
//
//go:noescape
func fTile6AVX2(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load int)

// fTile1AVX2 computes kernels.FTile(1, a, 0, bp, k, c, 0) with fused
// multiply-adds, starting from c's values when load != 0. Requires AVX2
// and FMA, len(a) >= k, len(bp) >= 16*k, len(c) >= 16.
//
//go:noescape
func fTile1AVX2(a []float32, bp []float32, k int, c []float32, load int)

// minMax8AVX2 folds x (len a positive multiple of 8) into lanes:
// out[0:8] lane minimums, out[8:16] lane maximums, out[16:24] lane sums of
// x*0 (0 when every value is finite, NaN otherwise). Requires AVX2.
//
//go:noescape
func minMax8AVX2(x []float32, out *[24]float32)

// quantizeU8AVX2 computes kernels.QuantizeU8(x, inv, zp, u) for len(x) a
// multiple of 8. Requires AVX2, len(u) >= len(x).
//
//go:noescape
func quantizeU8AVX2(x []float32, f float32, zp int32, u []uint8)

// quantizeDivU8AVX2 computes kernels.QuantizeDivU8(x, scale, zp, u) for
// len(x) a multiple of 8. Requires AVX2, len(u) >= len(x).
//
//go:noescape
func quantizeDivU8AVX2(x []float32, f float32, zp int32, u []uint8)

// peakInt8AVX2 runs iters iterations of 8 independent
// vpmaddubsw+vpmaddwd+vpaddd chains (512 integer ops each) in registers.
//
//go:noescape
func peakInt8AVX2(iters int) int32

// peakF32FMA runs iters iterations of 12 independent FMA chains (192
// flops each) in registers.
//
//go:noescape
func peakF32FMA(iters int) float32

// readSumAVX2 streams buf (its length rounded down to 128 bytes) through
// four vector loads per step and returns a fold of it.
//
//go:noescape
func readSumAVX2(buf []byte) uint64

// readSum4AVX2 streams buf[0:4·quarter] (quarter a multiple of 128) as
// four interleaved streams, one per quarter, and returns a fold of it.
//
//go:noescape
func readSum4AVX2(buf []byte, quarter int) uint64

// xgetbv0 returns XCR0, the register state the OS saves: bits 1-2 for
// SSE and AVX, 5-7 for AVX-512. Requires OSXSAVE.
//
//go:noescape
func xgetbv0() uint64

// qBlockVNNI512 computes kernels.QBlockRef(q) with zmm vpdpbusd, 8 rows ×
// 3 panels. Requires AVX512F, AVX512BW, AVX512VNNI; q checked with
// q.Check(8, 3).
//
//go:noescape
func qBlockVNNI512(q *kernels.QBlock)

// fBlockAVX512 computes kernels.FBlockRef(f) with zmm fused multiply-adds,
// 8 rows × 3 panels. Requires AVX512F; f checked with f.Check(8, 3).
//
//go:noescape
func fBlockAVX512(f *kernels.FBlock)

// qBlockAVXVNNI computes kernels.QBlockRef(q) with the VEX-encoded ymm
// vpdpbusd of AVX-VNNI, 6 rows × 1 panel. Requires AVX2 and AVX-VNNI; q
// checked with q.Check(6, 1).
//
//go:noescape
func qBlockAVXVNNI(q *kernels.QBlock)

// peakVNNI512 runs iters iterations of 24 independent zmm vpdpbusd chains
// (24·128 integer ops each) in registers.
//
//go:noescape
func peakVNNI512(iters int) int32

// peakAVXVNNI runs iters iterations of 12 independent ymm (VEX) vpdpbusd
// chains (12·64 integer ops each) in registers.
//
//go:noescape
func peakAVXVNNI(iters int) int32

// peakF32Zmm runs iters iterations of 24 independent zmm FMA chains (24·32
// flops each) in registers.
//
//go:noescape
func peakF32Zmm(iters int) float32
