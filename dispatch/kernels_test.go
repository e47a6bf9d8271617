package dispatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

const guard = 0x5a // sentinel around outputs

// qTileCase runs every table's quantized tiles on one input and compares
// them with kernels.QTile, checking guard bands and unmodified inputs.
func qTileCase(t *testing.T, u []uint8, ldu int, bp []int8, kq int) {
	t.Helper()
	for _, rows := range []int{1, 4} {
		want := make([]int32, rows*16)
		kernels.QTile(rows, u, ldu, bp, kq, want)
		colsum := make([]int32, 16)
		for g := 0; g < kq; g++ {
			for col := 0; col < 16; col++ {
				for j := 0; j < 4; j++ {
					colsum[col] += int32(bp[g*64+col*4+j])
				}
			}
		}
		uCopy, bpCopy := slices.Clone(u), slices.Clone(bp)
		if rows == 4 {
			qPanelCase(t, u, ldu, bp, kq, colsum)
		}
		for _, tb := range Available() {
			buf := make([]int32, rows*16+8)
			for i := range buf {
				buf[i] = guard
			}
			acc := buf[4 : 4+rows*16]
			if rows == 4 {
				tb.QTile4(u, ldu, bp, kq, acc)
			} else {
				tb.QTile1(u[:ldu], bp, kq, acc)
			}
			for i := range acc {
				if got := acc[i] + tb.QOffset*colsum[i%16]; got != want[i] {
					t.Fatalf("%v QTile rows=%d kq=%d: acc[%d] = %d, want %d", tb, rows, kq, i, got, want[i])
				}
			}
			for _, i := range []int{0, 1, 2, 3, len(buf) - 4, len(buf) - 3, len(buf) - 2, len(buf) - 1} {
				if buf[i] != guard {
					t.Fatalf("%v QTile rows=%d: guard band overwritten at %d", tb, rows, i)
				}
			}
			if !slices.Equal(u, uCopy) || !slices.Equal(bp, bpCopy) {
				t.Fatalf("%v QTile modified its inputs", tb)
			}
		}
	}
}

// qPanelCase runs every table's QPanel on one tile and compares it, bit
// for bit, with kernels.QPanel, including guard bands around c.
func qPanelCase(t *testing.T, u []uint8, ldu int, bp []int8, kq int, colsum []int32) {
	t.Helper()
	zp := []int32{0, 64, 0, 64}
	sa := []float32{0.5, 1.25, 3, 1e-3}
	sb := make([]float32, 16)
	for j := range sb {
		sb[j] = float32(j+1) / 7
	}
	const ldc = 19
	want := make([]float32, 3*ldc+16)
	for _, tb := range Available() {
		off := make([]int32, 4)
		refOff := make([]int32, 4)
		for r := range off {
			off[r] = tb.QOffset - zp[r]
			refOff[r] = -zp[r]
		}
		kernels.QPanel(u, ldu, 1, bp, kq, refOff, sa, colsum, sb, want, ldc)
		cbuf := make([]float32, len(want)+8)
		for i := range cbuf {
			cbuf[i] = guard
		}
		c := cbuf[4 : 4+len(want)]
		tb.QPanel(u, ldu, 1, bp, kq, off, sa, colsum, sb, c, ldc)
		for r := 0; r < 4; r++ {
			for j := 0; j < 16; j++ {
				if i := r*ldc + j; math.Float32bits(c[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v QPanel kq=%d: c[%d][%d] = %v, want %v", tb, kq, r, j, c[i], want[i])
				}
			}
		}
		if cbuf[3] != guard || cbuf[len(cbuf)-4] != guard {
			t.Fatalf("%v QPanel: guard band overwritten", tb)
		}
	}
}

// activations returns a u8 activation buffer for rows of ldu bytes:
// random values in [0, 128] with the range ends forced in.
func activations(r *rand.Rand, rows, ldu int, offset int) []uint8 {
	buf := make([]uint8, rows*ldu+offset)
	u := buf[offset:]
	for i := range u {
		switch r.IntN(6) {
		case 0:
			u[i] = 0
		case 1:
			u[i] = 128
		case 2:
			u[i] = 127
		default:
			u[i] = uint8(r.IntN(129))
		}
	}
	return u
}

func weights(r *rand.Rand, n int, offset int) []int8 {
	buf := make([]int8, n+offset)
	b := buf[offset:]
	for i := range b {
		switch r.IntN(6) {
		case 0:
			b[i] = 127
		case 1:
			b[i] = -127
		default:
			b[i] = int8(r.IntN(255) - 127)
		}
	}
	return b
}

// TestQTileEveryLength covers every k from 0 to 132 (kq 0..33), unaligned
// starts, and both extremes of saturation: u = 128 against b = ±127 in
// every position.
func TestQTileEveryLength(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for kq := 0; kq <= 33; kq++ {
		ldu := 4*kq + r.IntN(3)*4
		qTileCase(t, activations(r, 4, ldu, kq%3), ldu, weights(r, 64*kq, kq%2), kq)
	}
	for _, b := range []int8{127, -127} {
		kq := 40
		u := make([]uint8, 4*4*kq)
		for i := range u {
			u[i] = 128
		}
		bp := make([]int8, 64*kq)
		for i := range bp {
			bp[i] = b
		}
		qTileCase(t, u, 4*kq, bp, kq)
	}
}

func TestFTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, tb := range Available() {
		for k := 0; k <= 131; k += 1 + k/16 {
			for _, rows := range []int{1, tb.FRows} {
				lda := k + r.IntN(3)
				abuf := make([]float32, rows*lda+1)
				a := abuf[1:]
				for i := range a {
					a[i] = float32(r.NormFloat64())
				}
				bp := make([]float32, 16*k)
				for i := range bp {
					bp[i] = float32(r.NormFloat64())
				}
				ldc := 16 + r.IntN(3)
				want := make([]float32, rows*ldc)
				kernels.FTile(rows, a, lda, bp, k, want, ldc)
				cbuf := make([]float32, rows*ldc+8)
				for i := range cbuf {
					cbuf[i] = guard
				}
				c := cbuf[4 : 4+rows*ldc]
				if rows == 1 {
					tb.FTile1(a, bp, k, c)
				} else {
					tb.FTileN(a, lda, bp, k, c, ldc)
				}
				for row := 0; row < rows; row++ {
					for col := 0; col < 16; col++ {
						var mag float64
						for p := 0; p < k; p++ {
							mag += math.Abs(float64(a[row*lda+p] * bp[p*16+col]))
						}
						i := row*ldc + col
						if d := math.Abs(float64(c[i] - want[i])); d > 1e-6*float64(k)*mag+1e-30 {
							t.Fatalf("%v FTile rows=%d k=%d: c[%d,%d] = %v, want %v", tb, rows, k, row, col, c[i], want[i])
						}
					}
				}
				if cbuf[0] != guard || cbuf[len(cbuf)-1] != guard {
					t.Fatalf("%v FTile rows=%d k=%d: guard band overwritten", tb, rows, k)
				}
			}
		}
	}
}

func TestRowQuantizationBitExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for n := 0; n <= 131; n++ {
		for _, signed := range []bool{false, true} {
			buf := make([]float32, n+1)
			x := buf[1:]
			for i := range x {
				x[i] = float32(r.NormFloat64() * 10)
				if !signed {
					x[i] = float32(math.Abs(float64(x[i])))
				}
			}
			if n > 2 {
				x[r.IntN(n)] = 0
				x[r.IntN(n)] = float32(math.Copysign(0, -1))
			}
			lo, hi, fin := kernels.MinMax(x)
			_, inv, zp := quant.RowParams(lo, hi)
			want := make([]uint8, n)
			kernels.QuantizeU8(x, inv, zp, want)
			for _, tb := range Available() {
				l2, h2, f2 := tb.MinMax(x)
				if l2 != lo || h2 != hi || f2 != fin {
					t.Fatalf("%v MinMax n=%d: %v %v %v, want %v %v %v", tb, n, l2, h2, f2, lo, hi, fin)
				}
				ubuf := make([]uint8, n+2)
				ubuf[0], ubuf[n+1] = guard, guard
				tb.QuantizeU8(x, inv, zp, ubuf[1:n+1])
				if !slices.Equal(ubuf[1:n+1], want) || ubuf[0] != guard || ubuf[n+1] != guard {
					t.Fatalf("%v QuantizeU8 n=%d zp=%d:\n got %v\nwant %v", tb, n, zp, ubuf[1:n+1], want)
				}
			}
		}
	}
	// Non-finite values are reported wherever they are.
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for pos := 0; pos < 19; pos++ {
			x := make([]float32, 19)
			x[pos] = bad
			for _, tb := range Available() {
				if _, _, fin := tb.MinMax(x); fin {
					t.Fatalf("%v MinMax misses %v at %d", tb, bad, pos)
				}
			}
		}
	}
}

// TestQMatMulMatchesReference runs whole products on every table against
// kernels.QGemmRef / QGemmBlockRef on the same quantized activations,
// bit for bit, for both weight schemes and awkward shapes.
func TestQMatMulMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	shapes := [][3]int{{1, 1, 1}, {1, 3, 17}, {4, 16, 32}, {5, 33, 31}, {7, 64, 100}, {9, 131, 47}, {3, 40, 257}}
	for _, sh := range shapes {
		m, k, n := sh[0], sh[1], sh[2]
		a := make([]float32, m*k)
		for i := range a {
			a[i] = float32(r.NormFloat64())
			if i%k == 0 && i/k%2 == 0 {
				a[i] = float32(math.Abs(float64(a[i])))
			}
		}
		for row := 0; row < m; row += 2 { // even rows non-negative: zero point 0
			for j := 0; j < k; j++ {
				a[row*k+j] = float32(math.Abs(float64(a[row*k+j])))
			}
		}
		wf := make([]float32, k*n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		for _, scheme := range []quant.Scheme{quant.PerChannel, quant.PerTensor, quant.PerBlock} {
			w, err := quant.QuantizeWeights(wf, k, n, scheme)
			if err != nil {
				t.Fatal(err)
			}
			qw, err := PackQ(w)
			if err != nil {
				t.Fatal(err)
			}
			ref := NewExec(generic, 1)
			qa, err := ref.QuantizeRows(a, m, k)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, m*n)
			if scheme == quant.PerBlock {
				kernels.QGemmBlockRef(m, n, k, qa.u, qa.ldu, qa.zp, qa.scale, w.Q, w.Scales, want, n)
			} else {
				kernels.QGemmRef(m, n, k, qa.u, qa.ldu, qa.zp, qa.scale, w.Q, w.ChannelScales(), want, n)
			}
			for _, tb := range Available() {
				for _, threads := range []int{1, 2} {
					got := make([]float32, m*n)
					if err := NewExec(tb, threads).QMatMul(a, m, qw, got); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v %v %v threads=%d: c[%d] = %v, want %v", tb, scheme, sh, threads, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

func TestMatMulMatchesSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, sh := range [][3]int{{1, 1, 1}, {6, 5, 16}, {7, 33, 17}, {13, 64, 40}, {2, 0, 3}} {
		m, k, n := sh[0], sh[1], sh[2]
		a := make([]float32, m*k)
		b := make([]float32, k*n)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		want := make([]float32, m*n)
		kernels.Sgemm(m, n, k, a, k, b, n, want, n)
		fw := PackF(k, n, b, n)
		for _, tb := range Available() {
			got := make([]float32, m*n)
			NewExec(tb, 2).MatMul(a, m, fw, got)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*float64(k+1) {
					t.Fatalf("%v %v: c[%d] = %v, want %v", tb, sh, i, got[i], want[i])
				}
			}
		}
	}
}

func TestQMatMulRefusesNonFinite(t *testing.T) {
	w, _ := quant.QuantizeWeights([]float32{1, 2}, 2, 1, quant.PerChannel)
	qw, _ := PackQ(w)
	for _, tb := range Available() {
		err := NewExec(tb, 1).QMatMul([]float32{1, float32(math.NaN())}, 1, qw, make([]float32, 1))
		if err == nil {
			t.Errorf("%v accepted NaN activations", tb)
		}
	}
}

func TestSelect(t *testing.T) {
	if tb, err := Select(""); err != nil || tb != Default() {
		t.Errorf("Select(\"\") = %v, %v", tb, err)
	}
	if tb, err := Select("generic"); err != nil || tb.Name != "generic" {
		t.Errorf("Select(generic) = %v, %v", tb, err)
	}
	if _, err := Select("sse9"); err == nil {
		t.Error("unknown table accepted")
	}
	all := Available()
	if all[len(all)-1].Name != "generic" {
		t.Errorf("reference is not last: %v", all)
	}
	for _, name := range []string{"avx2", "neon"} {
		_, err := Select(name)
		runs := slices.ContainsFunc(all, func(tb *Table) bool { return tb.Name == name })
		if runs != (err == nil) {
			t.Errorf("Select(%s): %v, but available %v", name, err, all)
		}
		if err != nil {
			t.Logf("Select(%s): %v", name, err)
		}
	}
}

// TestRequireKernels fails the run when QUANTSERVE_REQUIRE_KERNELS names a
// table the CPU did not select: CI sets it so a silent fallback to the
// reference cannot pass.
func TestRequireKernels(t *testing.T) {
	if err := RequireFromEnv(); err != nil {
		t.Fatal(err)
	}
	t.Logf("selected %v on %s; QUANTSERVE_REQUIRE_KERNELS=%q", Default(), CPU(), os.Getenv("QUANTSERVE_REQUIRE_KERNELS"))
}

func ExampleSelect() {
	t, err := Select("generic")
	fmt.Println(t, err)
	// Output: generic <nil>
}
