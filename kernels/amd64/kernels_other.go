//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// Available reports whether this build contains the assembly kernels.
const Available = false

// QTile4AVX2 forwards to kernels.QTile in builds without assembly.
func QTile4AVX2(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	kernels.QTile(4, u, ldu, bp, kq, acc)
}

// QTile1AVX2 forwards to kernels.QTile in builds without assembly.
func QTile1AVX2(u []uint8, bp []int8, kq int, acc []int32) { kernels.QTile(1, u, 0, bp, kq, acc) }

// FTile6AVX2 forwards to kernels.FBlockRef in builds without assembly.
func FTile6AVX2(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load bool) {
	fTile(6, a, lda, bp, k, c, ldc, load)
}

// FTile1AVX2 forwards to kernels.FBlockRef in builds without assembly.
func FTile1AVX2(a []float32, bp []float32, k int, c []float32, load bool) {
	fTile(1, a, k, bp, k, c, 16, load)
}

func fTile(rows int, a []float32, lda int, bp []float32, k int, c []float32, ldc int, load bool) {
	f := &kernels.FBlock{A: a, LDA: lda, Rows: rows, B: bp, NP: 1, K: k, C: c, LDC: ldc}
	if load {
		f.Flags = kernels.FLoadC
	}
	kernels.FBlockRef(f)
}

// MinMaxAVX2 forwards to kernels.MinMax in builds without assembly.
func MinMaxAVX2(x []float32) (lo, hi float32, finite bool) { return kernels.MinMax(x) }

// QuantizeDivU8AVX2 forwards to kernels.QuantizeDivU8 in builds without
// assembly.
func QuantizeDivU8AVX2(x []float32, scale float32, zp int32, u []uint8) {
	kernels.QuantizeDivU8(x, scale, zp, u)
}

// QuantizeU8AVX2 forwards to kernels.QuantizeU8 in builds without assembly.
func QuantizeU8AVX2(x []float32, inv float32, zp int32, u []uint8) {
	kernels.QuantizeU8(x, inv, zp, u)
}

// QPanelAVX2 forwards to kernels.QPanel in builds without assembly.
func QPanelAVX2(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int) {
	kernels.QPanel(u, ldu, tiles, bp, kq, off, sa, colsum, sb, c, ldc)
}

// QBlockAVX2 forwards to kernels.QBlockRef in builds without assembly.
func QBlockAVX2(q *kernels.QBlock) { kernels.QBlockRef(q) }

// FBlockAVX2 forwards to kernels.FBlockRef in builds without assembly.
func FBlockAVX2(f *kernels.FBlock) { kernels.FBlockRef(f) }

// QBlockAVX512VNNI forwards to kernels.QBlockRef in builds without assembly.
func QBlockAVX512VNNI(q *kernels.QBlock) { kernels.QBlockRef(q) }

// FBlockAVX512 forwards to kernels.FBlockRef in builds without assembly.
func FBlockAVX512(f *kernels.FBlock) { kernels.FBlockRef(f) }

// QBlockAVXVNNI forwards to kernels.QBlockRef in builds without assembly.
func QBlockAVXVNNI(q *kernels.QBlock) { kernels.QBlockRef(q) }

// QBlockAMX forwards to kernels.QBlockRef in builds without assembly.
func QBlockAMX(q *kernels.QBlock) { kernels.QBlockRef(q) }

// RequestAMX reports false in builds without assembly.
func RequestAMX() bool { return false }

// XCR0 returns 0 in builds without assembly.
func XCR0(osxsave bool) uint64 { return 0 }
