package dispatch

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// The convolution and pooling kernels on every table against their
// references: bit for bit (any NaN for a NaN), but ConvTaps, whose fused
// multiply-adds stay within the rounding kernels.ConvTaps states.

// convSentinel fills the guard bands: a NaN whose payload no kernel
// produces, compared by its bits.
var convSentinel = math.Float32frombits(0x7fc0dead)

// convGuard is the number of sentinels on each side of an output.
const convGuard = 8

// inGuard returns a copy of init at offset shift (0 or 1: aligned or not)
// in a buffer with convGuard sentinels on each side, and a check that
// returns the first index (relative to out) written outside out, or -1.
func inGuard(init []float32, shift int) (out []float32, outside func() int) {
	n := len(init)
	buf := make([]float32, 2*convGuard+shift+n)
	for i := range buf {
		buf[i] = convSentinel
	}
	out = buf[convGuard+shift : convGuard+shift+n]
	copy(out, init)
	return out, func() int {
		for i, v := range buf {
			if (i < convGuard+shift || i >= convGuard+shift+n) && math.Float32bits(v) != math.Float32bits(convSentinel) {
				return i - convGuard - shift
			}
		}
		return -1
	}
}

// diffBits returns the first index where a and b hold different float32
// bits (NaN payloads included), or -1: for moves and inputs. Arithmetic
// results compare with sameBits, any NaN matching any NaN (which operand's
// payload an instruction keeps is the hardware's choice).
func diffBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// convTapsClose reports whether got is within ConvTaps's stated rounding
// of want at every i, for dst starting at init.
func convTapsClose(got, want, init, src, w []float32, step int) int {
	for i := range got {
		mag := math.Abs(float64(init[i]))
		for j := range w {
			mag += math.Abs(float64(w[j]) * float64(src[i+j*step]))
		}
		if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-6*mag+1e-7) {
			return i
		}
	}
	return -1
}

// TestConvTapsEveryTable runs every table's ConvTaps on every length
// around the vector widths (32, 8, 1), every tap count to 7 and step to
// 3, with aligned and unaligned slices, guard bands around dst and the
// inputs checked unmodified.
func TestConvTapsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	for n := 0; n <= 131; n++ {
		for taps := 1; taps <= 7; taps++ {
			for step := 0; step <= 3; step++ {
				for _, shift := range []int{0, 1} {
					w := vecInput(r, taps, 1, false)
					src := vecInput(r, shift+n+(taps-1)*step, 1, false)[shift:]
					init := vecInput(r, n, 1, false)
					want := slices.Clone(init)
					kernels.ConvTaps(want, src, w, step)
					srcCopy, wCopy := slices.Clone(src), slices.Clone(w)
					for _, tb := range Available() {
						dst, outside := inGuard(init, shift)
						tb.ConvTaps(dst, src, w, step)
						if i := convTapsClose(dst, want, init, src, w, step); i >= 0 {
							t.Fatalf("%v n=%d taps=%d step=%d shift=%d: dst[%d] = %v, reference %v", tb, n, taps, step, shift, i, dst[i], want[i])
						}
						if i := outside(); i >= 0 {
							t.Fatalf("%v n=%d taps=%d step=%d: wrote outside dst at %d", tb, n, taps, step, i)
						}
						if diffBits(src, srcCopy) >= 0 || diffBits(w, wCopy) >= 0 {
							t.Fatalf("%v n=%d taps=%d step=%d: inputs modified", tb, n, taps, step)
						}
					}
				}
			}
		}
	}
}

// TestTransposeColsEveryTable compares every table's TransposeCols with
// the reference bit for bit, and the reference with its definition: every
// shape up to 19×41, several sub-blocks, sentinels around dst.
func TestTransposeColsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	for rows := 1; rows <= 19; rows++ {
		for cols := 1; cols <= 41; cols++ {
			src := vecInput(r, rows*cols, 1, false)
			srcCopy := slices.Clone(src)
			for _, blk := range [][3]int{{0, 0, cols}, {rows / 3, cols / 4, cols}, {0, cols / 2, cols/2 + (cols+1)/2/2}} {
				r0, c0, c1 := blk[0], blk[1], blk[2]
				blank := make([]float32, rows*cols)
				want, _ := inGuard(blank, 0)
				kernels.TransposeCols(want, src, rows, cols, r0, c0, c1)
				for c := 0; c < cols; c++ {
					for i := 0; i < rows; i++ {
						v := float32(0)
						if i >= r0 && c >= c0 && c < c1 {
							v = src[i*cols+c]
						}
						if want[c*rows+i] != v {
							t.Fatalf("reference %d×%d rows from %d, columns [%d, %d): dst[%d][%d] = %v, want %v", rows, cols, r0, c0, c1, c, i, want[c*rows+i], v)
						}
					}
				}
				for _, tb := range Available() {
					for _, shift := range []int{0, 1} {
						got, outside := inGuard(blank, shift)
						tb.TransposeCols(got, src, rows, cols, r0, c0, c1)
						if i := diffBits(got, want); i >= 0 {
							t.Fatalf("%v %d×%d rows from %d, columns [%d, %d): dst[%d] = %v, reference %v", tb, rows, cols, r0, c0, c1, i, got[i], want[i])
						}
						if i := outside(); i >= 0 {
							t.Fatalf("%v %d×%d: wrote outside dst at %d", tb, rows, cols, i)
						}
						if diffBits(src, srcCopy) >= 0 {
							t.Fatalf("%v %d×%d: src modified", tb, rows, cols)
						}
					}
				}
			}
		}
	}
}

// TestTranspose8EveryTable compares every table's Transpose8 with the
// reference bit for bit: every strip width to 41, dst and src strides
// with gaps between their rows (which must keep their sentinels),
// aligned and unaligned.
func TestTranspose8EveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	for n := 0; n <= 41; n++ {
		for _, ldd := range []int{8, 13} {
			for _, lds := range []int{n, n + 3} {
				for _, shift := range []int{0, 1} {
					src := vecInput(r, shift+7*lds+n, 1, false)[shift:]
					srcCopy := slices.Clone(src)
					size := 0
					if n > 0 {
						size = (n-1)*ldd + 8
					}
					blank := make([]float32, size)
					for i := range blank {
						blank[i] = convSentinel
					}
					want := slices.Clone(blank)
					kernels.Transpose8(want, src, ldd, lds, n)
					for j := 0; j < n; j++ {
						for i := 0; i < 8; i++ {
							if want[j*ldd+i] != src[i*lds+j] {
								t.Fatalf("reference n=%d ldd=%d lds=%d: dst[%d][%d] = %v, want %v", n, ldd, lds, j, i, want[j*ldd+i], src[i*lds+j])
							}
						}
					}
					for _, tb := range Available() {
						got, outside := inGuard(blank, shift)
						tb.Transpose8(got, src, ldd, lds, n)
						if i := diffBits(got, want); i >= 0 {
							t.Fatalf("%v n=%d ldd=%d lds=%d shift=%d: dst[%d] = %v, reference %v", tb, n, ldd, lds, shift, i, got[i], want[i])
						}
						if i := outside(); i >= 0 {
							t.Fatalf("%v n=%d ldd=%d lds=%d: wrote outside dst at %d", tb, n, ldd, lds, i)
						}
						if diffBits(src, srcCopy) >= 0 {
							t.Fatalf("%v n=%d: src modified", tb, n)
						}
					}
				}
			}
		}
	}
}

// TestConvFinishEveryTable compares every table's output stage with the
// reference bit for bit: every length to 131, with and without bias and
// residual, the clamps Relu, Clip and none apply, NaN, infinities and
// zeros of both signs among the values, aligned and unaligned, sentinels
// around dst.
func TestConvFinishEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	inf := float32(math.Inf(1))
	for n := 0; n <= 131; n++ {
		for _, bounds := range [][2]float32{{-inf, inf}, {0, inf}, {0, 6}, {-1.5, 0.25}} {
			for mask := 0; mask < 4; mask++ {
				special := mask == 3 || n%2 == 1
				init := vecInput(r, n, 2, special)
				if n > 3 {
					init[1], init[2], init[3] = float32(math.NaN()), float32(math.Copysign(0, -1)), 0
				}
				var bias, res []float32
				if mask&1 != 0 {
					bias = vecInput(r, n, 1, special)
				}
				if mask&2 != 0 {
					res = vecInput(r, n, 1, special)
				}
				want := slices.Clone(init)
				kernels.ConvFinish(want, bias, res, bounds[0], bounds[1])
				biasCopy, resCopy := slices.Clone(bias), slices.Clone(res)
				for _, tb := range Available() {
					for _, shift := range []int{0, 1} {
						got, outside := inGuard(init, shift)
						tb.ConvFinish(got, bias, res, bounds[0], bounds[1])
						if i := sameBits(got, want); i >= 0 {
							t.Fatalf("%v n=%d bounds %v bias=%v res=%v: dst[%d] = %v, reference %v", tb, n, bounds, bias != nil, res != nil, i, got[i], want[i])
						}
						if i := outside(); i >= 0 {
							t.Fatalf("%v n=%d: wrote outside dst at %d", tb, n, i)
						}
						if diffBits(bias, biasCopy) >= 0 || diffBits(res, resCopy) >= 0 {
							t.Fatalf("%v n=%d: inputs modified", tb, n)
						}
					}
				}
			}
		}
	}
}

// TestConvHardEveryTable compares every table's HardSigmoid family with
// the reference bit for bit: every length to 131, every form, the
// parameters the rewrites pass, NaN, infinities and zeros of both signs
// among the values (in every vector), aligned and unaligned, sentinels
// around dst.
func TestConvHardEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 24))
	inf := float32(math.Inf(1))
	params := [][6]float32{ // a, b, lo, hi, d, mode
		{0.2, 0.5, 0, 1, 1, kernels.HardT},
		{1.0 / 6, 0.5, 0, 1, 1, kernels.HardXT},
		{1, 3, 0, 6, 6, kernels.HardXTDiv},
		{1, 3, 0, 6, 1.0 / 6, kernels.HardXTMul},
		{0.7, -0.1, -inf, inf, 3, kernels.HardXTDiv},
	}
	for n := 0; n <= 131; n++ {
		for _, p := range params {
			init := vecInput(r, n, 4, n%2 == 1)
			if n > 5 { // in every vector: the kernels unroll their loops
				specials := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, inf, -inf}
				for i := 1; i < n; i += 7 {
					init[i] = specials[i/7%len(specials)]
				}
			}
			want := slices.Clone(init)
			kernels.ConvHard(want, p[0], p[1], p[2], p[3], p[4], int(p[5]))
			for _, tb := range Available() {
				for _, shift := range []int{0, 1} {
					got, outside := inGuard(init, shift)
					tb.ConvHard(got, p[0], p[1], p[2], p[3], p[4], int(p[5]))
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("%v n=%d params %v: dst[%d] = %v, reference %v (x = %v)", tb, n, p, i, got[i], want[i], init[i])
					}
					if i := outside(); i >= 0 {
						t.Fatalf("%v n=%d: wrote outside dst at %d", tb, n, i)
					}
				}
			}
		}
	}
}

// TestScaleRowsEveryTable compares every table's row scaling with the
// reference bit for bit: every row length to 37, several rows and a
// partial last row (left as it is), NaN and infinities among the values,
// aligned and unaligned, sentinels around dst.
func TestScaleRowsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 25))
	for c := 0; c <= 37; c++ {
		for _, rows := range []int{0, 1, 3} {
			n := rows*c + c/2
			init := vecInput(r, n, 1, rows == 3)
			if n > 3 {
				init[1], init[2] = float32(math.NaN()), float32(math.Inf(-1))
			}
			s := vecInput(r, c, 1, false)
			want := slices.Clone(init)
			kernels.ScaleRows(want, s)
			if i := diffBits(want[rows*c:], init[rows*c:]); i >= 0 {
				t.Fatalf("reference c=%d rows=%d: the partial row changed at %d", c, rows, rows*c+i)
			}
			sCopy := slices.Clone(s)
			for _, tb := range Available() {
				for _, shift := range []int{0, 1} {
					got, outside := inGuard(init, shift)
					tb.ScaleRows(got, s)
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("%v c=%d rows=%d: dst[%d] = %v, reference %v", tb, c, rows, i, got[i], want[i])
					}
					if i := outside(); i >= 0 {
						t.Fatalf("%v c=%d rows=%d: wrote outside dst at %d", tb, c, rows, i)
					}
					if diffBits(s, sCopy) >= 0 {
						t.Fatalf("%v c=%d: s modified", tb, c)
					}
				}
			}
		}
	}
}

// TestColumnPoolSumsEveryTable compares every table's column sums with
// kernels.PoolSum of each column, bit for bit (any NaN for a NaN): widths
// 0 to 67 (across every kernel's channels a call), row counts across and
// between whole sixteens, row strides wider than the width, unaligned,
// values of mixed magnitude with infinities and NaN, into a dst holding
// other values (each sum is set, not added to: the channels-last mean
// reuses its sums); no table writes a sum past the width or changes x.
func TestColumnPoolSumsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 27))
	for w := 0; w <= 67; w++ {
		for _, rows := range []int{0, 1, 15, 16, 17, 33 + r.IntN(60)} {
			ld := w + r.IntN(5)
			x := vecInput(r, rows*ld+1, 1, w%5 == 0)
			for i := range x {
				x[i] *= float32(math.Pow(10, float64(r.IntN(7)-3)))
			}
			x = x[1:] // unaligned
			want := make([]float64, w)
			col := make([]float32, rows)
			for j := range want {
				for i := range col {
					col[i] = x[i*ld+j]
				}
				want[j] = kernels.PoolSum(col)
			}
			xCopy := slices.Clone(x)
			for _, tb := range append(Available(), Reference()) {
				got := make([]float64, w+2)
				for j := range got {
					got[j] = 7
				}
				tb.ColumnPoolSums(got[:w], x, rows, ld)
				for j := range want {
					if math.Float64bits(got[j]) != math.Float64bits(want[j]) && !(math.IsNaN(got[j]) && math.IsNaN(want[j])) {
						t.Fatalf("%v w=%d rows=%d ld=%d: sum %d = %v, PoolSum %v", tb, w, rows, ld, j, got[j], want[j])
					}
				}
				if got[w] != 7 || got[w+1] != 7 {
					t.Fatalf("%v w=%d rows=%d: wrote past the width", tb, w, rows)
				}
				if diffBits(x, xCopy) >= 0 {
					t.Fatalf("%v w=%d: x modified", tb, w)
				}
			}
		}
	}
}

// TestPoolSumEveryTable compares every table's pooling sum with the
// reference bit for bit on every length to 131, aligned and unaligned,
// values of mixed magnitude and sign, infinities and NaN, and checks the
// reference against float64 arithmetic in order to within rounding.
func TestPoolSumEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 26))
	for n := 0; n <= 131; n++ {
		buf := vecInput(r, n+1, 1, false)
		for i := range buf {
			buf[i] *= float32(math.Pow(10, float64(r.IntN(7)-3)))
		}
		for _, x := range [][]float32{buf[:n], buf[1:]} {
			want := kernels.PoolSum(x)
			var plain, mag float64
			for _, v := range x {
				plain += float64(v)
				mag += math.Abs(float64(v))
			}
			if math.Abs(want-plain) > 1e-14*mag {
				t.Fatalf("reference n=%d: sum %v, in order %v", n, want, plain)
			}
			cases := [][]float32{x}
			if n > 20 {
				for _, special := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
					y := slices.Clone(x)
					y[17] = special
					cases = append(cases, y)
				}
			}
			for _, y := range cases {
				want := kernels.PoolSum(y)
				yCopy := slices.Clone(y)
				for _, tb := range Available() {
					got := tb.PoolSum(y)
					if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
						t.Fatalf("%v n=%d: %v, reference %v", tb, n, got, want)
					}
					if diffBits(y, yCopy) >= 0 {
						t.Fatalf("%v n=%d: x modified", tb, n)
					}
				}
			}
		}
	}
}

// FuzzConvKernels decodes bytes into float32 values (any bit pattern) and
// shapes, and compares every table's convolution kernels with the
// references: bit for bit, ConvTaps within its rounding where the values
// are finite and moderate.
func FuzzConvKernels(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 128, 191, 0, 0, 192, 127, 1, 0, 0, 0, 0, 0, 0, 128, 0, 0, 128, 127}, uint8(7), float32(0), float32(6))
	f.Add(make([]byte, 4*67), uint8(200), float32(math.Inf(-1)), float32(math.Inf(1)))
	f.Fuzz(func(t *testing.T, data []byte, shape uint8, lo, hi float32) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		half := len(x) / 2
		a, b := x[:half], x[half:2*half]
		mode := int(shape % 4)
		c := 1 + int(shape)%17
		taps, step := 1+int(shape)%5, int(shape)/5%4
		n8 := len(x) / 8
		var hp [4]float32 // ConvHard's a, b, d and its input, from the last values
		copy(hp[:], x[max(len(x)-4, 0):])

		wantF := slices.Clone(a)
		kernels.ConvFinish(wantF, b, nil, lo, hi)
		wantH := slices.Clone(x)
		kernels.ConvHard(wantH, hp[0], hp[1], lo, hi, hp[2], mode)
		wantS := slices.Clone(x)
		kernels.ScaleRows(wantS, x[:min(c, len(x))])
		wantP := kernels.PoolSum(x)
		var wantT []float32
		if n8 > 0 {
			wantT = make([]float32, (n8-1)*8+8)
			kernels.Transpose8(wantT, x, 8, n8, n8)
		}
		var w, src, wantC []float32
		if m := len(x) - taps - (taps-1)*step; m > 0 {
			w, src = x[:taps], x[taps:]
			wantC = make([]float32, m)
			kernels.ConvTaps(wantC, src, w, step)
		}
		for _, tb := range Available() {
			got := slices.Clone(a)
			tb.ConvFinish(got, b, nil, lo, hi)
			if i := sameBits(got, wantF); i >= 0 {
				t.Fatalf("%v ConvFinish[%d] = %v, reference %v", tb, i, got[i], wantF[i])
			}
			got = slices.Clone(x)
			tb.ConvHard(got, hp[0], hp[1], lo, hi, hp[2], mode)
			if i := sameBits(got, wantH); i >= 0 {
				t.Fatalf("%v ConvHard mode %d [%d] = %v, reference %v", tb, mode, i, got[i], wantH[i])
			}
			got = slices.Clone(x)
			tb.ScaleRows(got, x[:min(c, len(x))])
			if i := sameBits(got, wantS); i >= 0 {
				t.Fatalf("%v ScaleRows[%d] = %v, reference %v", tb, i, got[i], wantS[i])
			}
			if p := tb.PoolSum(x); math.Float64bits(p) != math.Float64bits(wantP) && !(math.IsNaN(p) && math.IsNaN(wantP)) {
				t.Fatalf("%v PoolSum = %v, reference %v", tb, p, wantP)
			}
			if n8 > 0 {
				got = make([]float32, len(wantT))
				tb.Transpose8(got, x, 8, n8, n8)
				if i := diffBits(got, wantT); i >= 0 {
					t.Fatalf("%v Transpose8[%d] = %v, reference %v", tb, i, got[i], wantT[i])
				}
			}
			if wantC != nil {
				got = make([]float32, len(wantC))
				tb.ConvTaps(got, src, w, step)
				for i := range got {
					mag := 0.0
					for j := range w {
						mag += math.Abs(float64(w[j]) * float64(src[i+j*step]))
					}
					if mag > 1e30 || math.IsNaN(mag) {
						continue // overflow: rounding once or twice may differ by more
					}
					if d := math.Abs(float64(got[i] - wantC[i])); !(d <= 1e-6*mag+1e-7) {
						t.Fatalf("%v ConvTaps taps=%d step=%d [%d] = %v, reference %v", tb, taps, step, i, got[i], wantC[i])
					}
				}
			}
		}
	})
}

// TestTablesComplete: every table of this build sets every kernel.
func TestTablesComplete(t *testing.T) {
	for _, tb := range tables {
		v := reflect.ValueOf(tb).Elem()
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.Kind() == reflect.Func && f.IsNil() && v.Type().Field(i).IsExported() {
				t.Errorf("table %s has no %s", tb, v.Type().Field(i).Name)
			}
		}
	}
}

// BenchmarkConvKernels runs each table's depthwise row (3 taps over 56
// outputs, a 3×3 row of a 56×56 plane), lays a 256×56×56 image and a
// 224×224 RGB one out channels-last, finishes 4,096 outputs (bias,
// residual, Clip) and runs HardSwish on them.
func BenchmarkConvKernels(b *testing.B) {
	r := rand.New(rand.NewPCG(14, 14))
	dst, src, w := vecInput(r, 56, 1, false), vecInput(r, 58, 1, false), vecInput(r, 3, 1, false)
	const c, size = 256, 56 * 56
	img := vecInput(r, c*size, 1, false)
	out := make([]float32, c*size)
	rgb, rgbOut := vecInput(r, 3*50176, 1, false), make([]float32, 3*50176)
	for _, tb := range Available() {
		b.Run(fmt.Sprintf("ConvTaps3x56/%s", tb), func(b *testing.B) {
			b.SetBytes(4 * 56)
			b.ReportAllocs()
			for b.Loop() {
				tb.ConvTaps(dst, src, w, 1)
			}
			b.ReportMetric(2*56*3*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
		})
		b.Run(fmt.Sprintf("TransposeCols256x3136/%s", tb), func(b *testing.B) {
			b.SetBytes(4 * c * size)
			b.ReportAllocs()
			for b.Loop() {
				tb.TransposeCols(out, img, c, size, 0, 0, size)
			}
		})
		b.Run(fmt.Sprintf("TransposeCols3x50176/%s", tb), func(b *testing.B) {
			// A 224×224 RGB image's planes laid channels-last.
			b.SetBytes(4 * 3 * 50176)
			for b.Loop() {
				tb.TransposeCols(rgbOut, rgb, 3, 50176, 0, 0, 50176)
			}
		})
		b.Run(fmt.Sprintf("Finish4096/%s", tb), func(b *testing.B) {
			b.SetBytes(4 * 4096)
			for b.Loop() {
				tb.ConvFinish(out[:4096], img[:4096], img[4096:8192], 0, 6)
			}
		})
		b.Run(fmt.Sprintf("HardSwish4096/%s", tb), func(b *testing.B) {
			b.SetBytes(4 * 4096)
			for b.Loop() {
				tb.ConvHard(out[:4096], 1.0/6, 0.5, 0, 1, 1, kernels.HardXT)
			}
		})
		b.Run(fmt.Sprintf("PoolSum3136/%s", tb), func(b *testing.B) {
			b.SetBytes(4 * size)
			b.ReportAllocs()
			for b.Loop() {
				_ = tb.PoolSum(img[:size])
			}
		})
	}
}
