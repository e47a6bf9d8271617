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
