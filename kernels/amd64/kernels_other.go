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

// FTile6AVX2 forwards to kernels.FTile in builds without assembly.
func FTile6AVX2(a []float32, lda int, bp []float32, k int, c []float32, ldc int) {
	kernels.FTile(6, a, lda, bp, k, c, ldc)
}

// FTile1AVX2 forwards to kernels.FTile in builds without assembly.
func FTile1AVX2(a []float32, bp []float32, k int, c []float32) { kernels.FTile(1, a, 0, bp, k, c, 0) }

// MinMaxAVX2 forwards to kernels.MinMax in builds without assembly.
func MinMaxAVX2(x []float32) (lo, hi float32, finite bool) { return kernels.MinMax(x) }

// QuantizeU8AVX2 forwards to kernels.QuantizeU8 in builds without assembly.
func QuantizeU8AVX2(x []float32, inv float32, zp int32, u []uint8) {
	kernels.QuantizeU8(x, inv, zp, u)
}

// QPanelAVX2 forwards to kernels.QPanel in builds without assembly.
func QPanelAVX2(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int) {
	kernels.QPanel(u, ldu, tiles, bp, kq, off, sa, colsum, sb, c, ldc)
}
