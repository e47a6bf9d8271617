//go:build !arm64 || !gc || purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// Available reports whether this build contains the assembly kernels.
const Available = false

// offsetTile computes kernels.QTile and subtracts 128·colsum, the result
// the NEON tiles return.
func offsetTile(rows int, u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	kernels.QTile(rows, u, ldu, bp, kq, acc)
	for col := 0; col < kernels.PanelN; col++ {
		var cs int32
		for g := 0; g < kq; g++ {
			for j := 0; j < 4; j++ {
				cs += int32(bp[g*64+col*4+j])
			}
		}
		for r := 0; r < rows; r++ {
			acc[r*kernels.PanelN+col] -= QOffset * cs
		}
	}
}

// QTile4SMULL forwards to the reference in builds without assembly.
func QTile4SMULL(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	offsetTile(4, u, ldu, bp, kq, acc)
}

// QTile1SMULL forwards to the reference in builds without assembly.
func QTile1SMULL(u []uint8, bp []int8, kq int, acc []int32) { offsetTile(1, u, 0, bp, kq, acc) }

// QTile4SDOT forwards to the reference in builds without assembly.
func QTile4SDOT(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	offsetTile(4, u, ldu, bp, kq, acc)
}

// QTile1SDOT forwards to the reference in builds without assembly.
func QTile1SDOT(u []uint8, bp []int8, kq int, acc []int32) { offsetTile(1, u, 0, bp, kq, acc) }

// FTile4NEON forwards to kernels.FBlockRef in builds without assembly.
func FTile4NEON(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load bool) {
	fTile(4, a, lda, bp, k, c, ldc, load)
}

// FTile1NEON forwards to kernels.FBlockRef in builds without assembly.
func FTile1NEON(a []float32, bp []float32, k int, c []float32, load bool) {
	fTile(1, a, k, bp, k, c, 16, load)
}

func fTile(rows int, a []float32, lda int, bp []float32, k int, c []float32, ldc int, load bool) {
	f := &kernels.FBlock{A: a, LDA: lda, Rows: rows, B: bp, NP: 1, K: k, C: c, LDC: ldc}
	if load {
		f.Flags = kernels.FLoadC
	}
	kernels.FBlockRef(f)
}

// QTile4I8MM forwards to the reference in builds without assembly.
func QTile4I8MM(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	kernels.QTile(4, u, ldu, bp, kq, acc)
}

// QTile1I8MM forwards to the reference in builds without assembly.
func QTile1I8MM(u []uint8, bp []int8, kq int, acc []int32) { kernels.QTile(1, u, 0, bp, kq, acc) }

// MinMaxNEON forwards to kernels.MinMax in builds without assembly.
func MinMaxNEON(x []float32) (lo, hi float32, finite bool) { return kernels.MinMax(x) }

// QuantizeDivU8NEON forwards to kernels.QuantizeDivU8 in builds without
// assembly.
func QuantizeDivU8NEON(x []float32, scale float32, zp int32, u []uint8) {
	kernels.QuantizeDivU8(x, scale, zp, u)
}

// QuantizeU8NEON forwards to kernels.QuantizeU8 in builds without assembly.
func QuantizeU8NEON(x []float32, inv float32, zp int32, u []uint8) {
	kernels.QuantizeU8(x, inv, zp, u)
}
