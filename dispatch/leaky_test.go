package dispatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// leakyLoop is the LeakyRelu operator's float32 loop, written out here as
// the independent statement kernels.LeakyRelu must equal with no clamp.
func leakyLoop(dst, src []float32, alpha float32) {
	for i, x := range src {
		if x < 0 {
			x *= alpha
		}
		dst[i] = x
	}
}

// leakySpecials are the values whose bits the kernels must keep or round
// as the loop does: zeros of both signs, infinities, quiet and signalling
// NaNs with payloads and either sign, subnormals, the extremes (which
// overflow when alpha > 1) and the clamp bounds the tests use.
var leakySpecials = []float32{
	0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
	math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00001), math.Float32frombits(0x7fc12345),
	math.Float32frombits(0x7f800001), math.Float32frombits(0xff800123), // signalling
	1e-40, -1e-40, math.Float32frombits(1), math.Float32frombits(0x80000001), -1.1754942e-38,
	math.MaxFloat32, -math.MaxFloat32, -0.4, 0.4, -6, 6, -1e-30,
}

// leakyInput returns n values, normal spread, with every special value
// sprinkled in when n allows.
func leakyInput(r *rand.Rand, n int) []float32 {
	x := vecInput(r, n, 3, n%2 == 1)
	for i, v := range leakySpecials {
		if n > 0 && (i < n || r.IntN(2) == 0) {
			x[r.IntN(n)] = v
		}
	}
	return x
}

// TestLeakyReluEveryTable compares every table's LeakyRelu with the
// reference bit for bit (NaN payloads included): every length to 131 and
// a few long ones, alphas of every kind (NaN, ±Inf, subnormal, zero,
// above one, negative), in place and out of place, aligned and unaligned,
// sentinels around dst, src checked unmodified. The reference is the
// operator's loop, value for value.
func TestLeakyReluEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 31))
	inf := float32(math.Inf(1))
	alphas := []float32{0.01, 0.2, 0, float32(math.Copysign(0, -1)), 1, 3.5, -0.5, 1e-40, inf, -inf, float32(math.NaN()), math.Float32frombits(0x7f800007)}
	for _, n := range leakyLengths() {
		for _, alpha := range alphas {
			src := leakyInput(r, n)
			want := make([]float32, n)
			kernels.LeakyRelu(want, src, alpha)
			loop := make([]float32, n)
			leakyLoop(loop, src, alpha)
			if i := diffBits(want, loop); i >= 0 {
				t.Fatalf("reference n=%d alpha=%v: [%d] = %#x, the loop gives %#x", n, alpha, i, math.Float32bits(want[i]), math.Float32bits(loop[i]))
			}
			srcCopy := slices.Clone(src)
			for _, tb := range Available() {
				for _, shift := range []int{0, 1} {
					name := fmt.Sprintf("%v n=%d alpha=%v shift=%d", tb, n, alpha, shift)
					got, outside := inGuard(make([]float32, n), shift)
					tb.LeakyRelu(got, src, alpha)
					if i := diffBits(got, want); i >= 0 {
						t.Fatalf("%s: dst[%d] = %#x, reference %#x (x = %#x)", name, i, math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(src[i]))
					}
					if i := outside(); i >= 0 {
						t.Fatalf("%s: wrote outside dst at %d", name, i)
					}
					if diffBits(src, srcCopy) >= 0 {
						t.Fatalf("%s: src modified", name)
					}
					inPlace, outside := inGuard(src, shift)
					tb.LeakyRelu(inPlace, inPlace, alpha)
					if i := diffBits(inPlace, want); i >= 0 {
						t.Fatalf("%s in place: dst[%d] = %#x, reference %#x", name, i, math.Float32bits(inPlace[i]), math.Float32bits(want[i]))
					}
					if i := outside(); i >= 0 {
						t.Fatalf("%s in place: wrote outside dst at %d", name, i)
					}
				}
			}
		}
	}
}

// leakyLengths are every length to 131 (every tail around 8, 16, 32 and
// 64 lanes) and a few long ones.
func leakyLengths() []int {
	ls := []int{256, 1000, 1031}
	for n := 0; n <= 131; n++ {
		ls = append(ls, n)
	}
	return ls
}

// TestMaxMinConstEveryTable compares every table's Max and Min with a
// constant with the reference bit for bit (NaN payloads included, as
// Go's max and min leave them on this architecture): every length to 131
// and a few long ones, constants of both signs of zero, NaN, ±Inf,
// subnormal and ordinary, aligned and unaligned, sentinels around dst.
// The reference itself keeps what the operators promise: a NaN operand
// gives a NaN, and -0 orders below +0.
func TestMaxMinConstEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 33))
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	consts := []float32{-0.4, 0.3, 0, negZero, 1e-40, -1e-40, inf, -inf, float32(math.NaN()), math.Float32frombits(0xffc00123), 6}
	for _, n := range leakyLengths() {
		for _, c := range consts {
			for _, isMin := range []bool{false, true} {
				init := leakyInput(r, n)
				want := slices.Clone(init)
				kernels.MaxMinConst(want, c, isMin)
				for i, v := range want {
					x := init[i]
					switch {
					case x != x || c != c:
						if v == v {
							t.Fatalf("reference min=%v of %v and %v = %v, want NaN", isMin, x, c, v)
						}
					case x == 0 && c == 0:
						if neg := math.Signbit(float64(v)); neg != (isMin && (math.Signbit(float64(x)) || math.Signbit(float64(c))) || !isMin && math.Signbit(float64(x)) && math.Signbit(float64(c))) {
							t.Fatalf("reference min=%v of %v and %v = %v", isMin, x, c, v)
						}
					case isMin && v != float32(math.Min(float64(x), float64(c))), !isMin && v != float32(math.Max(float64(x), float64(c))):
						t.Fatalf("reference min=%v of %v and %v = %v", isMin, x, c, v)
					}
				}
				for _, tb := range Available() {
					for _, shift := range []int{0, 1} {
						got, outside := inGuard(init, shift)
						tb.MaxMinConst(got, c, isMin)
						if i := diffBits(got, want); i >= 0 {
							t.Fatalf("%v n=%d c=%v min=%v: dst[%d] = %#x, reference %#x (x = %#x)", tb, n, c, isMin, i, math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(init[i]))
						}
						if i := outside(); i >= 0 {
							t.Fatalf("%v n=%d: wrote outside dst at %d", tb, n, i)
						}
					}
				}
			}
		}
	}
	for _, tb := range Available() {
		got := []float32{negZero, 0}
		tb.MaxMinConst(got[:1], 0, false)
		tb.MaxMinConst(got[1:], negZero, true)
		if math.Float32bits(got[0]) != 0 || math.Float32bits(got[1]) != 1<<31 {
			t.Errorf("%v: max(-0, +0) = %v, min(+0, -0) = %v; want +0 and -0", tb, got[0], got[1])
		}
	}
}

// TestMaxPairEveryTable compares every table's MaxPair with the
// reference bit for bit (NaN payloads included) on every length to 131
// and a few long ones, with NaNs, both zeros and infinities on either
// side, dst apart from and the same as a or b, and sentinels around dst.
func TestMaxPairEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 34))
	negZero := float32(math.Copysign(0, -1))
	for _, n := range leakyLengths() {
		a, b := leakyInput(r, n), leakyInput(r, n)
		for i := range b { // pairs the random values rarely make
			switch i % 7 {
			case 0:
				b[i] = a[i]
			case 1:
				a[i], b[i] = 0, negZero
			case 2:
				a[i], b[i] = negZero, 0
			case 3:
				b[i] = math.Float32frombits(0xffc00123)
			}
		}
		want := make([]float32, n)
		kernels.MaxPair(want, a, b)
		for i, v := range want {
			x, y := a[i], b[i]
			switch {
			case x != x || y != y:
				if v == v {
					t.Fatalf("reference max of %v and %v = %v, want NaN", x, y, v)
				}
			case x == 0 && y == 0:
				if math.Signbit(float64(v)) != (math.Signbit(float64(x)) && math.Signbit(float64(y))) {
					t.Fatalf("reference max of %v and %v = %v", x, y, v)
				}
			case v != float32(math.Max(float64(x), float64(y))):
				t.Fatalf("reference max of %v and %v = %v", x, y, v)
			}
		}
		for _, tb := range Available() {
			for _, shift := range []int{0, 1} {
				got, outside := inGuard(make([]float32, n), shift)
				tb.MaxPair(got, a, b)
				if i := diffBits(got, want); i >= 0 {
					t.Fatalf("%v n=%d: dst[%d] = %#x, reference %#x (a %#x, b %#x)", tb, n, i, math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(a[i]), math.Float32bits(b[i]))
				}
				if i := outside(); i >= 0 {
					t.Fatalf("%v n=%d: wrote outside dst at %d", tb, n, i)
				}
			}
			inPlace := slices.Clone(a)
			tb.MaxPair(inPlace, inPlace, b)
			if i := diffBits(inPlace, want); i >= 0 {
				t.Fatalf("%v n=%d, dst = a: dst[%d] = %#x, reference %#x", tb, n, i, math.Float32bits(inPlace[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// FuzzLeakyRelu decodes bytes into float32 values (any bit pattern) and
// compares every table's LeakyRelu, MaxMinConst and MaxPair (the first
// half of the values against the second) with the references bit for
// bit.
func FuzzLeakyRelu(f *testing.F) {
	f.Add([]byte{0, 0, 128, 191, 1, 0, 128, 127, 0, 0, 0, 128, 1, 0, 0, 0, 205, 204, 204, 190}, float32(0.01), float32(-0.4), false)
	f.Add(make([]byte, 4*67), float32(math.NaN()), float32(0), true)
	f.Fuzz(func(t *testing.T, data []byte, alpha, c float32, isMin bool) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
		}
		want := make([]float32, len(x))
		kernels.LeakyRelu(want, x, alpha)
		wantM := slices.Clone(x)
		kernels.MaxMinConst(wantM, c, isMin)
		for _, tb := range Available() {
			got := make([]float32, len(x))
			tb.LeakyRelu(got, x, alpha)
			if i := diffBits(got, want); i >= 0 {
				t.Fatalf("%v LeakyRelu[%d] = %#x, reference %#x (x = %#x)", tb, i, math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(x[i]))
			}
			half := len(x) / 2
			wantP := make([]float32, half)
			kernels.MaxPair(wantP, x[:half], x[half:])
			gotP := make([]float32, half)
			tb.MaxPair(gotP, x[:half], x[half:])
			if i := diffBits(gotP, wantP); i >= 0 {
				t.Fatalf("%v MaxPair[%d] = %#x, reference %#x (a %#x, b %#x)", tb, i, math.Float32bits(gotP[i]), math.Float32bits(wantP[i]), math.Float32bits(x[i]), math.Float32bits(x[half+i]))
			}
			got = slices.Clone(x)
			tb.MaxMinConst(got, c, isMin)
			if i := diffBits(got, wantM); i >= 0 {
				t.Fatalf("%v MaxMinConst(min=%v)[%d] = %#x, reference %#x (x = %#x)", tb, isMin, i, math.Float32bits(got[i]), math.Float32bits(wantM[i]), math.Float32bits(x[i]))
			}
		}
	})
}

// BenchmarkLeakyRelu runs each table's LeakyRelu and a Max with a
// constant over a 64×32×32 image.
func BenchmarkLeakyRelu(b *testing.B) {
	r := rand.New(rand.NewPCG(32, 32))
	const n = 64 * 32 * 32
	src := vecInput(r, n, 1, false)
	dst := make([]float32, n)
	for _, tb := range Available() {
		b.Run(fmt.Sprintf("LeakyRelu64x32x32/%s", tb), func(b *testing.B) {
			b.SetBytes(4 * n)
			b.ReportAllocs()
			for b.Loop() {
				tb.LeakyRelu(dst, src, 0.2)
			}
		})
		b.Run(fmt.Sprintf("MaxConst64x32x32/%s", tb), func(b *testing.B) {
			b.SetBytes(4 * n)
			b.ReportAllocs()
			for b.Loop() {
				tb.MaxMinConst(dst, -0.4, false)
			}
		})
	}
}

// TestMaxColsEveryTable compares every table's MaxCols with Go's max tap
// after tap, bit for bit: NaNs, both zeros and infinities among the
// taps, 1-4 taps at overlapping and strided steps, channel counts on and
// off the vector width, and sentinels around the pixels written.
func TestMaxColsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 35))
	negZero := float32(math.Copysign(0, -1))
	for _, ch := range []int{1, 3, 8, 16, 24, 33, 64, 72, 200} {
		for _, taps := range []int{1, 2, 3, 4} {
			for _, n := range []int{1, 2, 7} {
				for _, st := range [][2]int{{1, 1}, {2, 1}, {1, 2}, {3, 2}} {
					step, tapStep := st[0]*ch, st[1]*ch
					src := leakyInput(r, (n-1)*step+(taps-1)*tapStep+ch)
					for i := range src { // values the random ones rarely are
						switch r.IntN(9) {
						case 0:
							src[i] = 0
						case 1:
							src[i] = negZero
						case 2:
							src[i] = math.Float32frombits(0xffc00123)
						}
					}
					want := make([]float32, n*ch)
					for i := range n {
						for c := range ch {
							v := src[i*step+c]
							for tp := 1; tp < taps; tp++ {
								v = max(v, src[i*step+tp*tapStep+c])
							}
							want[i*ch+c] = v
						}
					}
					for _, tb := range Available() {
						got, outside := inGuard(make([]float32, n*ch), 1)
						tb.MaxCols(got, src, n, ch, step, taps, tapStep)
						if i := diffBits(got, want); i >= 0 {
							t.Fatalf("%v: %d pixels of %d channels, %d taps (steps %d, %d): [%d] = %#x, want %#x", tb, n, ch, taps, step, tapStep, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
						}
						if i := outside(); i >= 0 {
							t.Fatalf("%v: %d pixels of %d channels wrote outside dst at %d", tb, n, ch, i)
						}
					}
				}
			}
		}
	}
	for _, tb := range Available() {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v: MaxCols past its source was not refused", tb)
				}
			}()
			tb.MaxCols(make([]float32, 16), make([]float32, 23), 2, 8, 8, 2, 8)
		}()
	}
}
