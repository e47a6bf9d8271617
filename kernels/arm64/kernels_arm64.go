//go:build gc && !purego

package arm64

// Available reports whether this build contains the assembly kernels.
const Available = true

// qTile4SMULL computes kernels.QTile(4, ...) on s = u-128 with widening
// multiplies (SMULL, SMULL2, SADALP): acc = Σ (u-128)·b. Requires ASIMD;
// len(u) >= 3*ldu+4*kq, len(bp) >= 64*kq, len(acc) >= 64.
//
//go:noescape
func qTile4SMULL(u []uint8, ldu int, bp []int8, kq int, acc []int32)

// qTile1SMULL is the one-row qTile4SMULL. len(acc) >= 16.
//
//go:noescape
func qTile1SMULL(u []uint8, bp []int8, kq int, acc []int32)

// qTile4SDOT is qTile4SMULL with SDOT. Requires ASIMD and dotprod.
//
//go:noescape
func qTile4SDOT(u []uint8, ldu int, bp []int8, kq int, acc []int32)

// qTile1SDOT is the one-row qTile4SDOT.
//
//go:noescape
func qTile1SDOT(u []uint8, bp []int8, kq int, acc []int32)

// fTile4NEON computes kernels.FTile(4, a, lda, bp, k, c, ldc) with fused
// multiply-adds, starting from c's values when load != 0.
// len(a) >= 3*lda+k, len(bp) >= 16*k, len(c) >= 3*ldc+16.
//
//go:noescape
func fTile4NEON(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load int)

// fTile1NEON computes kernels.FTile(1, a, 0, bp, k, c, 0) with fused
// multiply-adds, starting from c's values when load != 0.
//
//go:noescape
func fTile1NEON(a []float32, bp []float32, k int, c []float32, load int)

// qTile4I8MM computes kernels.QTile(4, u, ldu, bp, kq, acc) with USMMLA on
// the raw activations (no offset). Requires ASIMD and I8MM;
// len(u) >= 3*ldu+4*kq, len(bp) >= 64*kq, len(acc) >= 64.
//
//go:noescape
func qTile4I8MM(u []uint8, ldu int, bp []int8, kq int, acc []int32)

// qTile1I8MM is the one-row qTile4I8MM. len(acc) >= 16.
//
//go:noescape
func qTile1I8MM(u []uint8, bp []int8, kq int, acc []int32)

// minMax4NEON folds x (len a positive multiple of 4) into lane minimums,
// maximums and sums of x*0.
//
//go:noescape
func minMax4NEON(x []float32, out *[12]float32)

// quantizeDivU8NEON computes u[i] = roundEven(clamp(x[i]/f, lo, hi))
// + zp for len(x) a multiple of 8.
//
//go:noescape
func quantizeDivU8NEON(x []float32, f float32, zp int32, lo, hi float32, u []uint8)

// quantizeU8NEON computes u[i] = roundEven(clamp(x[i]*f, lo, hi)) + zp
// for len(x) a multiple of 8.
//
//go:noescape
func quantizeU8NEON(x []float32, f float32, zp int32, lo, hi float32, u []uint8)
