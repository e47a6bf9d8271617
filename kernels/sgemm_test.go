package kernels

import (
	"math/rand/v2"
	"testing"
)

func TestSgemmMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][3]int{{0, 3, 4}, {1, 1, 1}, {3, 5, 7}, {8, 1, 33}, {2, 17, 0}} {
		m, n, k := s[0], s[1], s[2]
		lda, ldb, ldc := k+1, n+2, n+3
		a := make([]float32, m*lda)
		b := make([]float32, k*ldb)
		c := make([]float32, m*ldc)
		for i := range a {
			a[i] = r.Float32()*2 - 1
		}
		for i := range b {
			b[i] = r.Float32()*2 - 1
		}
		for i := range c {
			c[i] = 42 // padding must survive, the m×n block is overwritten
		}
		Sgemm(m, n, k, a, lda, b, ldb, c, ldc)
		for i := 0; i < m; i++ {
			for j := 0; j < ldc; j++ {
				if j >= n {
					if c[i*ldc+j] != 42 {
						t.Fatalf("%v: padding C[%d,%d] overwritten", s, i, j)
					}
					continue
				}
				var want float32
				for p := 0; p < k; p++ {
					want += a[i*lda+p] * b[p*ldb+j]
				}
				if c[i*ldc+j] != want {
					t.Fatalf("%v: C[%d,%d] = %v, want %v", s, i, j, c[i*ldc+j], want)
				}
			}
		}
	}
}

// TestPackFBTMatchesPackFB: packing btᵀ from bt (strided, garbage in the
// stride's gap and in the destination) gives PackFB's panels of the
// transposed copy.
func TestPackFBTMatchesPackFB(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][2]int{{1, 1}, {7, 16}, {64, 128}, {5, 33}} {
		k, n := s[0], s[1]
		ldbt := k + 3
		bt := make([]float32, n*ldbt)
		for i := range bt {
			bt[i] = r.Float32()*2 - 1
		}
		b := make([]float32, k*n)
		for j := 0; j < n; j++ {
			for kk := 0; kk < k; kk++ {
				b[kk*n+j] = bt[j*ldbt+kk]
			}
		}
		want := make([]float32, PackedFBLen(k, n))
		PackFB(k, n, b, n, want)
		got := make([]float32, len(want))
		for i := range got {
			got[i] = 7
		}
		PackFBT(k, n, bt, ldbt, got)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("k=%d n=%d: packed[%d] = %v, want %v", k, n, i, got[i], want[i])
			}
		}
	}
}
