//go:build gc && !purego

package amd64

import (
	"unsafe"

	"github.com/quantserve/quantserve/kernels"
)

// The row kernels of frow_amd64.s: fRowN* computes the sums of one row of
// a by N panels of b (pstrBytes apart, k of them each) into c (N·16
// values), starting from c's values when load is 1, from zero when 0.

//go:noescape
func fRow8AVX512(a, b *float32, pstrBytes, k int, c *float32, load int)

//go:noescape
func fRow4AVX512(a, b *float32, pstrBytes, k int, c *float32, load int)

//go:noescape
func fRow2AVX512(a, b *float32, pstrBytes, k int, c *float32, load int)

//go:noescape
func fRow1AVX512(a, b *float32, pstrBytes, k int, c *float32, load int)

//go:noescape
func fRow4AVX2(a, b *float32, pstrBytes, k int, c *float32, load int)

//go:noescape
func fRow2AVX2(a, b *float32, pstrBytes, k int, c *float32, load int)

//go:noescape
func fRow1AVX2(a, b *float32, pstrBytes, k int, c *float32, load int)

type rowKernel = func(a, b *float32, pstrBytes, k int, c *float32, load int)

// The row kernels by width, widest first: rows512[i] takes 8>>i panels,
// rows2[i] 4>>i.
var (
	rows512 = []rowKernel{fRow8AVX512, fRow4AVX512, fRow2AVX512, fRow1AVX512}
	rows2   = []rowKernel{fRow4AVX2, fRow2AVX2, fRow1AVX2}
)

// FRowAVX512 computes kernels.FBlockRef(f) for a block of one row and any
// number of panels, eight, four, two or one at a time on zmm. Requires
// AVX-512 F; f has Rows 1 and no Segs (kernels.FRowCheck).
func FRowAVX512(f *kernels.FBlock) {
	fRow(f, rows512, 8, ConvFinishAVX512)
}

// FRowAVX2 computes kernels.FBlockRef(f) for a block of one row and any
// number of panels, four, two or one at a time on ymm. Requires AVX2 and
// FMA; f has Rows 1 and no Segs (kernels.FRowCheck).
func FRowAVX2(f *kernels.FBlock) {
	fRow(f, rows2, 4, ConvFinishAVX2)
}

// fRow runs the row kernels of widths most, most/2, ..., 1 (ks, in
// that order) over f's panels, then f's finish on finish.
func fRow(f *kernels.FBlock, ks []rowKernel, most int, finish func(c, bias, res []float32, lo, hi float32)) {
	kernels.FRowCheck(f)
	load := f.Flags & kernels.FLoadC
	if f.K == 0 {
		if load == 0 {
			clear(f.C[:f.NP*kernels.PanelN])
		}
	} else {
		for p := 0; p < f.NP; {
			w, i := most, 0
			for w > f.NP-p {
				w, i = w/2, i+1
			}
			ks[i](unsafe.SliceData(f.A), &f.B[p*f.PStr], 4*f.PStr, f.K, &f.C[p*kernels.PanelN], load)
			p += w
		}
	}
	if f.Flags&kernels.FFinish != 0 {
		f.FinishRows(finish)
	}
}
