package kernels

// The quantized matrix product.
//
// Weights B are int8 in [-127, 127], K×N, quantized per output channel (or
// per block of 32 along K). Activations are quantized per row to unsigned
// bytes u in [0, 127] with a zero point zp where the row's 0 falls: the
// row's range [min(lo, 0), max(hi, 0)] spread over 127 steps
// (quant.RowParams), zp = 0 for rows with no negative value. Every product
// u·b therefore fits the u8×s8 pair sums of x86's vpmaddubsw without
// saturating (2·127·127 = 32258 < 32767), which is what makes the AVX2
// kernel exact.
//
// The integer result is
//
//	acc[m][n] = Σ_k (u[m][k] - zp[m]) · b[k][n]
//	          = Σ_k u[m][k]·b[k][n] - zp[m]·colsum[n]
//
// and the float result C[m][n] = float32(acc) · sa[m] · sb[n], evaluated
// left to right in float32.

// QDot returns Σ x[i]·y[i] accumulated in int32. It requires
// len(y) >= len(x).
//
//	var s int32
//	for i := range x {
//		s += int32(x[i]) * int32(y[i])
//	}
func QDot(x, y []int8) int32 {
	y = y[:len(x)]
	var s int32
	for i := range x {
		s += int32(x[i]) * int32(y[i])
	}
	return s
}

// QGemmRef is the definition of the quantized product on unpacked operands:
// u is M×K (row stride ldu), zp and sa have M entries, b is K×N row-major,
// sb has N entries, c is M×N (row stride ldc).
//
//	for m, n: acc := Σ_k (int32(u[m*ldu+k]) - zp[m]) * int32(b[k*N+n])
//	          c[m*ldc+n] = float32(acc) * sa[m] * sb[n]
func QGemmRef(m, n, k int, u []uint8, ldu int, zp []int32, sa []float32, b []int8, sb []float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc int32
			for p := 0; p < k; p++ {
				acc += (int32(u[i*ldu+p]) - zp[i]) * int32(b[p*n+j])
			}
			c[i*ldc+j] = float32(acc) * sa[i] * sb[j]
		}
	}
}

// QGemmBlockRef is QGemmRef with per-block weight scales: sb has
// ceil(K/32)×N entries, sb[blk*N+n] scaling k in [32·blk, 32·blk+32):
//
//	c[m*ldc+n] = sa[m] * Σ_blk float32(acc_blk) * sb[blk*N+n]
//
// with the block sum accumulated in float32 in block order.
func QGemmBlockRef(m, n, k int, u []uint8, ldu int, zp []int32, sa []float32, b []int8, sb []float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var sum float32
			for blk := 0; blk*BlockSize < k; blk++ {
				var acc int32
				for p := blk * BlockSize; p < min(k, (blk+1)*BlockSize); p++ {
					acc += (int32(u[i*ldu+p]) - zp[i]) * int32(b[p*n+j])
				}
				sum += float32(float32(acc) * sb[blk*n+j]) // no fused multiply-add
			}
			c[i*ldc+j] = sa[i] * sum
		}
	}
}

// BlockSize is the number of values along K sharing one per-block scale.
const BlockSize = 32

// Panel geometry of packed weights: panels of PanelN columns; within a
// panel, K in groups of 4, each group stored as PanelN columns × 4 bytes
// (the 4 k of one column contiguous).
const (
	PanelN = 16
	KGroup = 4
)

// PackedKLen returns K rounded up to a multiple of KGroup.
func PackedKLen(k int) int { return (k + KGroup - 1) / KGroup * KGroup }

// PackedQBLen returns the length of PackQB's output for a K×N matrix.
func PackedQBLen(k, n int) int {
	return PackedKLen(k) * (n + PanelN - 1) / PanelN * PanelN
}

// PackQB packs b (K×N row-major int8) into panels, zero-padding K to a
// multiple of 4 and N to a multiple of 16:
//
//	dst[panel*Kp*16 + (k/4)*64 + col*4 + k%4] = b[k*N + panel*16 + col]
func PackQB(k, n int, b []int8, dst []int8) {
	kp := PackedKLen(k)
	dst = dst[:PackedQBLen(k, n)]
	clear(dst)
	for p := 0; p*PanelN < n; p++ {
		panel := dst[p*kp*PanelN:]
		for kk := 0; kk < k; kk++ {
			for col := 0; col < PanelN && p*PanelN+col < n; col++ {
				panel[kk/4*64+col*4+kk%4] = b[kk*n+p*PanelN+col]
			}
		}
	}
}

// QTile is the reference of the quantized micro-kernel: for rows r < rows
// (1 or 4) and the 16 columns of one packed panel bp over kq groups of 4,
//
//	acc[r*16+col] = Σ_{g<kq} Σ_{j<4} int32(u[r*ldu+4g+j]) * int32(bp[g*64+col*4+j])
//
// u holds unsigned activations (no zero point applied); acc is overwritten.
func QTile(rows int, u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	for r := 0; r < rows; r++ {
		for col := 0; col < PanelN; col++ {
			var s int32
			for g := 0; g < kq; g++ {
				for j := 0; j < 4; j++ {
					s += int32(u[r*ldu+4*g+j]) * int32(bp[g*64+col*4+j])
				}
			}
			acc[r*PanelN+col] = s
		}
	}
}

// QPanel runs tiles 4-row tiles of u against one packed panel bp, each
// with the per-channel epilogue: for rows i < 4·tiles and j < 16,
//
//	c[i*ldc+j] = float32(acc[i][j] + off[i]*colsum[j]) * sa[i] * sb[j]
//
// where acc is QTile's sum and off[i] corrects row i's zero point.
func QPanel(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int) {
	var acc [4 * PanelN]int32
	for t := 0; t < tiles; t++ {
		QTile(4, u[4*t*ldu:], ldu, bp, kq, acc[:])
		for r := 0; r < 4; r++ {
			i := 4*t + r
			for j := 0; j < PanelN; j++ {
				c[i*ldc+j] = float32(acc[r*PanelN+j]+off[i]*colsum[j]) * sa[i] * sb[j]
			}
		}
	}
}
