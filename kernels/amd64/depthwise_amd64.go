//go:build gc && !purego

package amd64

import (
	"unsafe"

	"github.com/quantserve/quantserve/kernels"
)

// depthwiseRowsAVX2 computes kernels.DepthwiseRows(dst, src, w, offs,
// step, channels) on channels [0, width) of each pixel, with fused
// multiply-adds. Requires AVX2 and FMA, len(dst) = pixels·channels,
// width a positive multiple of 8 at most channels, len(offs) >= 1, and
// the reference's bounds on src and w.
//
//go:noescape
func depthwiseRowsAVX2(dst, src, w []float32, offs []int, step, channels, width, pixels int)

// depthwiseRowsAVX512 is depthwiseRowsAVX2 on 16 channels a register,
// width a multiple of 16. Requires AVX-512 F.
//
//go:noescape
func depthwiseRowsAVX512(dst, src, w []float32, offs []int, step, channels, width, pixels int)

// DepthwiseRowsAVX2 computes kernels.DepthwiseRows(dst, src, w, offs,
// step, channels) with fused multiply-adds: the reference's sums within
// the rounding it states. Rows of adjacent output pixels under a grid of
// 3 or 5 taps a row (depthwiseGrid) go eight pixels at a time through the
// grid kernels, the rest through the row kernel: the same bits. Requires
// AVX2 and FMA.
func DepthwiseRowsAVX2(dst, src, w []float32, offs []int, step, channels int) {
	if channels%8 == 0 {
		dst, src = depthwiseGrid(depthwiseGrid3AVX2, depthwiseGrid5AVX2, dst, src, w, offs, step, channels)
	}
	depthwiseRows(depthwiseRowsAVX2, dst, src, w, offs, step, channels)
}

// DepthwiseRowsAVX512 computes what DepthwiseRowsAVX2 does, bit for bit,
// 16 channels a register where a pixel's channels span whole 64-byte
// lines (channels and step multiples of 16): 1.4-1.55x DepthwiseRowsAVX2
// on 16-96 channels of 3x3 and 5x5 taps (Zen 5). The grid kernels also
// take an odd multiple of 8 channels of adjacent pixels, their last 8 a
// 32-byte vector: on one output row of 96 pixels (BenchmarkDepthwiseGrid,
// Zen 4) 1.07x AVX2's grid kernels on 24 channels, 1.30x on 88, 1.07x on
// 200, and 200 channels as fast as the same pixels padded to 208 were,
// without the padding's copies. Other rows go to DepthwiseRowsAVX2,
// whose 32-byte loads cross no line where most of the 64-byte ones
// would, and which was faster there (24 channels: 0.85x). Requires
// AVX-512 F.
func DepthwiseRowsAVX512(dst, src, w []float32, offs []int, step, channels int) {
	if channels%16 == 8 && step == channels {
		// An odd multiple of 8 channels: the grid kernels' whole blocks
		// of pixels end on a block of 8 channels; the row kernel of AVX2
		// takes the rest.
		dst, src = depthwiseGrid(depthwiseGrid3AVX512, depthwiseGrid5AVX512, dst, src, w, offs, step, channels)
		depthwiseRows(depthwiseRowsAVX2, dst, src, w, offs, step, channels)
		return
	}
	if channels%16 != 0 || step%16 != 0 {
		DepthwiseRowsAVX2(dst, src, w, offs, step, channels)
		return
	}
	dst, src = depthwiseGrid(depthwiseGrid3AVX512, depthwiseGrid5AVX512, dst, src, w, offs, step, channels)
	depthwiseRows(depthwiseRowsAVX512, dst, src, w, offs, step, channels)
}

// depthwiseRows runs kernel on the channels below a multiple of 8 and
// the reference on the rest (the same bits whichever kernel), after
// checking in Go the bounds the assembly trusts.
func depthwiseRows(kernel func(dst, src, w []float32, offs []int, step, channels, width, pixels int), dst, src, w []float32, offs []int, step, channels int) {
	if channels <= 0 || len(dst) < channels || len(offs) == 0 {
		return
	}
	width := channels &^ 7
	if width == 0 {
		kernels.DepthwiseRows(dst, src, w, offs, step, channels)
		return
	}
	if step < 0 {
		panic("amd64: DepthwiseRows: negative step")
	}
	top := 0
	for _, o := range offs {
		if o < 0 {
			panic("amd64: DepthwiseRows: negative offset")
		}
		top = max(top, o)
	}
	n := len(dst) / channels
	dst = dst[:n*channels]
	src = src[:(n-1)*step+top+channels]
	w = w[:len(offs)*channels]
	kernel(dst, src, w, offs, step, channels, width, n)
	if width < channels {
		kernels.DepthwiseRowsCols(dst, src, w, offs, step, channels, width)
	}
}

// The grid kernels (depthwise_grid_amd64.s, written by _gendw) compute
// kernels.DepthwiseRows(dst, src, w, offs, channels, channels) for offs
// rows of 3 or 5 adjacent pixels (gridShape), channels a positive
// multiple of 8 (the AVX512 ones end an odd multiple of 8 on a 32-byte
// vector) and pixels a positive multiple of 8, adding each output's taps
// in the order of offs with fused multiply-adds: the row kernels' bits.
// Eight output pixels of a vector of channels stay in registers while
// each input pixel of a tap row is loaded once for the taps it is under:
// on one output row of PaddleOCR's layers (BenchmarkDepthwiseGrid, Zen
// 5) 1.5-1.7x the row kernel's rate with AVX-512, 1.4-1.5x with AVX2.
//
//go:noescape
func depthwiseGrid3AVX512(dst, src, w []float32, offs []int, channels, pixels int)

//go:noescape
func depthwiseGrid5AVX512(dst, src, w []float32, offs []int, channels, pixels int)

//go:noescape
func depthwiseGrid3AVX2(dst, src, w []float32, offs []int, channels, pixels int)

//go:noescape
func depthwiseGrid5AVX2(dst, src, w []float32, offs []int, channels, pixels int)

// depthwiseGrid runs the whole blocks of eight pixels of a DepthwiseRows
// problem through grid3 or grid5 when its taps are rows of 3 or 5
// adjacent pixels and its output pixels adjacent in src (step =
// channels), after checking in Go the bounds the assembly trusts, and
// returns the rest of dst and src for the row kernel (all of them when
// the problem is no grid).
func depthwiseGrid(grid3, grid5 func(dst, src, w []float32, offs []int, channels, pixels int), dst, src, w []float32, offs []int, step, channels int) ([]float32, []float32) {
	if channels <= 0 || step != channels {
		return dst, src
	}
	n := len(dst) / channels &^ 7
	if n == 0 {
		return dst, src
	}
	kw, top := gridShape(offs, channels)
	kernel := grid3
	switch kw {
	case 3:
	case 5:
		kernel = grid5
	default:
		return dst, src
	}
	kernel(dst[:n*channels], src[:(n-1)*step+top+channels], w[:len(offs)*channels], offs, channels, n)
	return dst[n*channels:], src[n*step:]
}

// gridShape returns kw when offs are rows of kw adjacent pixels of
// channels values (offs[r·kw + x] = offs[r·kw] + x·channels) for a kw
// of 3 or 5, the widths the grid kernels take, else 0; and the largest
// offset, in the same one pass (it runs on every call). A negative
// offset panics.
func gridShape(offs []int, channels int) (kw, top int) {
	grid3, grid5 := len(offs) > 0 && len(offs)%3 == 0, len(offs) > 0 && len(offs)%5 == 0
	for i, o := range offs {
		if o < 0 {
			panic("amd64: DepthwiseRows: negative offset")
		}
		top = max(top, o)
		if i > 0 && o != offs[i-1]+channels {
			grid3 = grid3 && i%3 == 0
			grid5 = grid5 && i%5 == 0
		}
	}
	switch {
	case grid3:
		return 3, top
	case grid5:
		return 5, top
	}
	return 0, top
}

// moveRowsAVX512 moves rows >= 1 rows of src (lds apart) to dst (ldd
// apart): full vectors a row, then, when tail (a mask of lanes) is not
// 0, the tail's lanes loaded and stored under the mask store, then zeros
// vectors of zeros. Requires AVX-512 F.
//
//go:noescape
func moveRowsAVX512(dst, src *float32, rows, ldd, lds, full, tail, store, zeros int)

// tailMask is the mask of the lanes of a vector that the last n%16 of n
// values fill (0: none).
func tailMask(n int) int {
	if r := n % 16; r > 0 {
		return 1<<r - 1
	}
	return 0
}

// PadChannelsAVX512 computes kernels.PadChannels(dst, src, n, ch, cs)
// with 16-lane moves, the lanes past ch loaded as zeros, for cs a
// multiple of 16 (the channels DepthwiseRowsAVX512 runs whole vectors
// of), and through the reference otherwise. Requires AVX-512 F.
func PadChannelsAVX512(dst, src []float32, n, ch, cs int) {
	kernels.CheckPadChannels(dst, src, n, ch, cs)
	if n == 0 || cs%16 != 0 || cs == ch {
		kernels.PadChannels(dst, src, n, ch, cs)
		return
	}
	// The vectors past the channels' own ((ch+15)/16 of them) are zeros.
	moveRowsAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), n, cs, ch, ch/16, tailMask(ch), 0xffff, cs/16-(ch+15)/16)
}

// CopyBlockAVX512 computes kernels.CopyBlock(dst, ldd, src, lds, rows,
// cols) with 16-lane moves, a row's last lanes a masked load and store.
// Requires AVX-512 F.
func CopyBlockAVX512(dst []float32, ldd int, src []float32, lds int, rows, cols int) {
	kernels.CheckCopyBlock(dst, ldd, src, lds, rows, cols)
	if rows == 0 || cols == 0 || ldd == cols && lds == cols {
		kernels.CopyBlock(dst, ldd, src, lds, rows, cols)
		return
	}
	tail := tailMask(cols)
	moveRowsAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), rows, ldd, lds, cols/16, tail, tail, 0)
}

// everyOtherAVX512 computes kernels.EveryOther for blocks >= 1 blocks of
// 16 values of dst, 32 of src each. Requires AVX-512 F.
//
//go:noescape
func everyOtherAVX512(dst, src *float32, blocks int)

// EveryOtherAVX512 computes kernels.EveryOther(dst, src): 16 values a
// permute of two vectors while 32 values of src remain, the rest through
// the reference. Requires AVX-512 F.
func EveryOtherAVX512(dst, src []float32) {
	kernels.CheckEveryOther(dst, src)
	blocks := min(len(dst), len(src)/2) / 16
	if blocks > 0 {
		everyOtherAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), blocks)
	}
	kernels.EveryOther(dst[16*blocks:], src[32*blocks:])
}
