package kernels

// Sgemm computes C = A·B for row-major float32 matrices: A is m×k with row
// stride lda, B is k×n with row stride ldb, C is m×n with row stride ldc.
// C's previous contents are overwritten.
//
//	for i := range m {
//		for j := range n {
//			var s float32
//			for p := range k {
//				s += A[i*lda+p] * B[p*ldb+j]
//			}
//			C[i*ldc+j] = s
//		}
//	}
//
// The loop below runs in the order i, p, j, which streams B's rows and
// produces the same sums, added in the same p order.
func Sgemm(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		clear(ci)
		ai := a[i*lda : i*lda+k]
		for p, av := range ai {
			bp := b[p*ldb : p*ldb+n]
			for j, bv := range bp {
				ci[j] += av * bv
			}
		}
	}
}

// PackedFBLen returns the length of PackFB's output for a K×N matrix.
func PackedFBLen(k, n int) int { return k * ((n + PanelN - 1) / PanelN * PanelN) }

// PackFB packs b (K×N row-major, row stride ldb) into panels of 16
// columns, zero-padding N to a multiple of 16:
//
//	dst[panel*K*16 + k*16 + col] = b[k*ldb + panel*16 + col]
func PackFB(k, n int, b []float32, ldb int, dst []float32) {
	dst = dst[:PackedFBLen(k, n)]
	for p := 0; p*PanelN < n; p++ {
		panel := dst[p*k*PanelN:]
		w := min(PanelN, n-p*PanelN)
		for kk := 0; kk < k; kk++ {
			row := panel[kk*PanelN : kk*PanelN+PanelN]
			copy(row, b[kk*ldb+p*PanelN:kk*ldb+p*PanelN+w])
			clear(row[w:])
		}
	}
}

// PackFBT packs b = btᵀ (K×N) as PackFB does, from bt (N×K row-major,
// row stride ldbt): attention's keys, whose transpose is the product's B,
// packed without a transposed copy:
//
//	dst[panel*K*16 + k*16 + col] = bt[(panel*16 + col)*ldbt + k]
func PackFBT(k, n int, bt []float32, ldbt int, dst []float32) {
	PackFBTWith(Transpose8, k, n, bt, ldbt, dst)
}

// PackFBTWith is PackFBT moving each eight rows of bt into a panel's
// columns with transpose8 (a table's Transpose8, the same values), the
// last few of the last panel one value at a time.
func PackFBTWith(transpose8 func(dst, src []float32, ldd, lds, n int), k, n int, bt []float32, ldbt int, dst []float32) {
	dst = dst[:PackedFBLen(k, n)]
	for p := 0; p*PanelN < n; p++ {
		panel := dst[p*k*PanelN : (p+1)*k*PanelN]
		w := min(PanelN, n-p*PanelN)
		col := 0
		for ; col+8 <= w && k > 0; col += 8 {
			transpose8(panel[col:], bt[(p*PanelN+col)*ldbt:], PanelN, ldbt, k)
		}
		for ; col < w; col++ {
			src := bt[(p*PanelN+col)*ldbt:][:k]
			for kk, v := range src {
				panel[kk*PanelN+col] = v
			}
		}
		for ; col < PanelN; col++ {
			for kk := 0; kk < k; kk++ {
				panel[kk*PanelN+col] = 0
			}
		}
	}
}

// FTile is the reference of the float tiles: for rows r < rows and the 16
// columns of one packed panel bp,
//
//	c[r*ldc+col] = Σ_{p<k} a[r*lda+p] * bp[p*16+col]   (in p order, each step a
//	                                                    fused multiply-add: FMA32)
func FTile(rows int, a []float32, lda int, bp []float32, k int, c []float32, ldc int) {
	for r := 0; r < rows; r++ {
		for col := 0; col < PanelN; col++ {
			var s float32
			for p := 0; p < k; p++ {
				s = FMA32(a[r*lda+p], bp[p*PanelN+col], s)
			}
			c[r*ldc+col] = s
		}
	}
}
