package dispatch

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// sameBits reports whether a and b hold the same float32 bits, any NaN
// matching any NaN.
func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

// vecInput returns n values: normal spread, with, when special, zeros of
// both signs, ±Inf, NaN, huge and subnormal values sprinkled in.
func vecInput(r *rand.Rand, n int, spread float64, special bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * spread)
	}
	if special && n > 0 {
		inf := float32(math.Inf(1))
		for _, v := range []float32{0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()), 3e38, -3e38, 1e-40, -1e-40, 9.3, -13.2, -14.5} {
			if r.IntN(3) == 0 {
				x[r.IntN(n)] = v
			}
		}
	}
	return x
}

// wideInput returns n finite values spanning float32's range: magnitudes
// from subnormal to 1e30, both zeros, GELU's piece bounds (a = |x|/√2 at
// 0.5, 1, 2, 3, 5 and 7, and the far-tail clamp at 10√2) with the values
// around its switches (geluBoundInputs), and values around ExpNegMin; in
// softmax rows of them most exponentials flush to 0.
func wideInput(r *rand.Rand, n int) []float32 {
	edges := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-40, -1e-38, 1.1754944e-38,
		0.70710677, 1.4142135, 2.828427, 4.2426405, 7.071068, 9.899495, 14.142136, -14.142136, 14.142137,
		kernels.ExpNegMin, math.Nextafter32(kernels.ExpNegMin, 0), math.Nextafter32(kernels.ExpNegMin, -100),
		-87, -88, 88, 1e30, -1e30, 3.4028235e38 / 4, -3.4028235e38 / 4}
	edges = append(edges, geluBoundInputs()...)
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(4) {
		case 0:
			x[i] = edges[r.IntN(len(edges))]
		case 1:
			x[i] = float32(r.NormFloat64() * 60)
		default: // any exponent
			x[i] = float32(math.Ldexp(r.Float64(), r.IntN(240)-140))
			if r.IntN(2) == 0 {
				x[i] = -x[i]
			}
		}
	}
	return x
}

// geluBoundInputs returns the x of both signs around each of GELU's
// switches, 8 float32 steps either side: the piece bounds, where the
// piece read from a + 1 (a = float32(|x|/√2) as GELU rounds it) changes,
// found from row VecGPiece for every piece up to the one of the clamp at
// VecMaxX; and the x where d = -hi/2 (hi = float32(x·x)) reaches
// ExpNegMin, below which the exponential is 0. It returns none unless
// each window holds x on both sides of its switch, the flush's window
// also the x whose d is ExpNegMin itself.
func geluBoundInputs() []float32 {
	c := kernels.VecConsts()
	invSq2, negHalf := c[kernels.VecInvSq2][0], c[kernels.VecNegHalf][0]
	var xs []float32
	ok := true
	// around appends the 16 x >= 0 nearest center and their negatives;
	// side(x) must take each of want among them.
	around := func(center float64, side func(x float32) int, want ...int) {
		x := float32(center)
		for range 8 {
			x = math.Nextafter32(x, 0)
		}
		seen := map[int]bool{}
		for range 16 {
			xs = append(xs, x, -x)
			seen[side(x)] = true
			x = math.Nextafter32(x, 100)
		}
		for _, w := range want {
			ok = ok && seen[w]
		}
	}
	gp := math.Float32bits(c[kernels.VecGPiece][0])
	piece := func(x float32) int { // x >= 0, below VecMaxX
		return int(math.Float32bits(float32(x*invSq2)+1)>>22) - int(gp)
	}
	maxA := float32(c[kernels.VecMaxX][0] * invSq2)
	bounds := 0
	for i := 1; ; i++ {
		bound := math.Float32frombits((gp+uint32(i))<<22) - 1 // a + 1 at piece i's start
		if bound > maxA {
			break
		}
		around(float64(bound)*math.Sqrt2, piece, i-1, i)
		bounds++
	}
	flush := func(x float32) int {
		switch d := float32(float32(x*x) * negHalf); {
		case d < kernels.ExpNegMin:
			return 2
		case d == kernels.ExpNegMin:
			return 1
		}
		return 0
	}
	around(math.Sqrt(-2*float64(kernels.ExpNegMin)), flush, 0, 1, 2)
	if !ok || bounds == 0 {
		return nil
	}
	return xs
}

// unaligned returns a copy of v that starts off values into a fresh
// buffer, so the kernels see inputs at every offset from a 64-byte line.
func unaligned(v []float32, off int) []float32 {
	buf := make([]float32, off+len(v))
	copy(buf[off:], v)
	return buf[off : off+len(v) : off+len(v)]
}

// checkVec runs one vector-math case on every table against the
// reference: bit-identical outputs, guard bands intact, inputs unchanged.
func checkVec(t *testing.T, r *rand.Rand, n int, special bool) {
	t.Helper()
	checkVecOn(t, n, float32(r.ExpFloat64()), unaligned(vecInput(r, n, 4, special), r.IntN(16)),
		unaligned(vecInput(r, n, 1, special), r.IntN(16)), unaligned(vecInput(r, n, 2, special), r.IntN(16)))
}

// checkVecOn runs checkVec's comparisons on the given inputs.
func checkVecOn(t *testing.T, n int, scale float32, x, bias, res []float32) {
	t.Helper()

	wantSoft := slices.Clone(x)
	kernels.SoftmaxRow(wantSoft, scale)
	wantGelu := make([]float32, n)
	kernels.Gelu(wantGelu, x, nil)
	wantGeluB := make([]float32, n)
	kernels.Gelu(wantGeluB, x, bias)
	wantAdd := slices.Clone(x)
	kernels.AddBias(wantAdd, bias, nil)
	wantAddR := slices.Clone(x)
	kernels.AddBias(wantAddR, bias, res)
	wantSig := make([]float32, n)
	kernels.Sigmoid(wantSig, x)
	wantTanh := make([]float32, n)
	kernels.Tanh(wantTanh, x)
	wantGT := make([]float32, n)
	kernels.GeluTanh(wantGT, x)
	quick := kernels.XSigmoidConsts(0, 1.702)
	wantQ := make([]float32, n)
	kernels.XSigmoid(wantQ, x, quick)

	xs, bs, rs := slices.Clone(x), slices.Clone(bias), slices.Clone(res)
	unchanged := func(tb *Table, what string) {
		if sameBits(x, xs) >= 0 || sameBits(bias, bs) >= 0 || sameBits(res, rs) >= 0 {
			t.Fatalf("%v %s n=%d modified an input", tb, what, n)
		}
	}
	for _, tb := range Available() {
		// unaligned: one value into the buffer, guard bands either side
		// (17 after it: a masked tail of 16 lanes must not spill)
		run := func(what string, want []float32, f func(out []float32)) {
			buf := make([]float32, n+18)
			for i := range buf {
				buf[i] = guard
			}
			out := buf[1 : 1+n]
			f(out)
			if i := sameBits(out, want); i >= 0 {
				t.Fatalf("%v %s n=%d: [%d] = %v (%08x), reference %v (%08x)", tb, what, n, i, out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]))
			}
			if buf[0] != guard || slices.ContainsFunc(buf[1+n:], func(v float32) bool { return v != guard }) {
				t.Fatalf("%v %s n=%d wrote outside its output", tb, what, n)
			}
			unchanged(tb, what)
		}
		run("SoftmaxRow", wantSoft, func(out []float32) { copy(out, x); tb.SoftmaxRow(out, scale) })
		run("Gelu", wantGelu, func(out []float32) { tb.Gelu(out, x, nil) })
		run("Gelu+bias", wantGeluB, func(out []float32) { tb.Gelu(out, x, bias) })
		run("Gelu in place", wantGelu, func(out []float32) { copy(out, x); tb.Gelu(out, out, nil) })
		run("Gelu+bias in place", wantGeluB, func(out []float32) { copy(out, x); tb.Gelu(out, out, bias) })
		run("AddBias", wantAdd, func(out []float32) { copy(out, x); tb.AddBias(out, bias, nil) })
		run("Sigmoid", wantSig, func(out []float32) { tb.Sigmoid(out, x) })
		run("Sigmoid in place", wantSig, func(out []float32) { copy(out, x); tb.Sigmoid(out, out) })
		run("Tanh", wantTanh, func(out []float32) { tb.Tanh(out, x) })
		run("Tanh in place", wantTanh, func(out []float32) { copy(out, x); tb.Tanh(out, out) })
		run("GeluTanh", wantGT, func(out []float32) { tb.GeluTanh(out, x) })
		run("GeluTanh in place", wantGT, func(out []float32) { copy(out, x); tb.GeluTanh(out, out) })
		run("XSigmoid(1.702x)", wantQ, func(out []float32) { tb.XSigmoid(out, x, quick) })
		run("AddBias+res", wantAddR, func(out []float32) { copy(out, x); tb.AddBias(out, bias, res) })
	}
}

// TestVecMathEveryTable compares every table's SoftmaxRow, Gelu and
// AddBias with the reference for every length to 200 (each tail around
// the 8, 16 and 32 lanes of a step) and long rows, on unaligned inputs,
// with and without special values and across float32's whole range.
func TestVecMathEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	wide := func(n int) {
		checkVecOn(t, n, float32(r.ExpFloat64()), unaligned(wideInput(r, n), r.IntN(16)),
			unaligned(wideInput(r, n), r.IntN(16)), unaligned(wideInput(r, n), r.IntN(16)))
	}
	for n := 0; n <= 200; n++ {
		checkVec(t, r, n, false)
		checkVec(t, r, n, true)
		wide(n)
	}
	for _, n := range []int{256, 1000, 1001, 1024, 1031, 4096 + 13} {
		checkVec(t, r, n, false)
		checkVec(t, r, n, true)
		wide(n)
	}
	var names []string
	for _, tb := range Available() {
		names = append(names, tb.Name)
	}
	t.Logf("tables: %v", names)
}

// TestGeluBitPatternsEveryTable runs every table's Gelu on a comb through
// all 2³² float32 bit patterns (both signs, subnormals, Inf and NaN
// payloads included) and on the values around its switches
// (geluBoundInputs), and compares it with the reference bit for bit.
func TestGeluBitPatternsEveryTable(t *testing.T) {
	const step = 4099 // prime: every low-bit residue comes up
	x := make([]float32, 0, 1<<32/step+1)
	for b := uint64(0); b < 1<<32; b += step {
		x = append(x, math.Float32frombits(uint32(b)))
	}
	bounds := geluBoundInputs()
	if len(bounds) == 0 {
		t.Fatal("geluBoundInputs: a window does not straddle its GELU switch")
	}
	x = append(x, bounds...)
	x = append(x, math.Float32frombits(0xffffffff))
	want := make([]float32, len(x))
	kernels.Gelu(want, x, nil)
	got := make([]float32, len(x))
	for _, tb := range Available() {
		tb.Gelu(got, x, nil)
		if i := sameBits(got, want); i >= 0 {
			t.Fatalf("%v Gelu(%v = %08x) = %v (%08x), reference %v (%08x)", tb, x[i], math.Float32bits(x[i]), got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestSigmoidTanhBitPatternsEveryTable runs every table's Sigmoid, Tanh
// and GeluTanh on a comb through all 2³² float32 bit patterns, on the
// values around Tanh's switch from its polynomial and around GeluTanh's
// flush to 0 in the tail, bit for bit against the reference.
func TestSigmoidTanhBitPatternsEveryTable(t *testing.T) {
	const step = 4099
	x := make([]float32, 0, 1<<32/step+64)
	for b := uint64(0); b < 1<<32; b += step {
		x = append(x, math.Float32frombits(uint32(b)))
	}
	v := float32(0.625)
	for range 8 {
		v = math.Nextafter32(v, 0)
	}
	for range 16 {
		x = append(x, v, -v)
		v = math.Nextafter32(v, 1)
	}
	x = append(x, math.Float32frombits(0xffffffff), kernels.ExpNegMin, -kernels.ExpNegMin, kernels.ExpNegMin/2, -kernels.ExpNegMin/2)
	for v := float32(-9.9); v > -10.05; v = math.Nextafter32(v, -11) {
		if kernels.GeluTanhOne(v) == 0 {
			x = append(x, v, math.Nextafter32(v, 0)) // the first x whose result flushes, and the last that does not
			break
		}
	}
	for _, f := range []struct {
		name string
		ref  func(dst, src []float32)
		of   func(tb *Table) func(dst, src []float32)
	}{
		{"Sigmoid", kernels.Sigmoid, func(tb *Table) func(dst, src []float32) { return tb.Sigmoid }},
		{"Tanh", kernels.Tanh, func(tb *Table) func(dst, src []float32) { return tb.Tanh }},
		{"GeluTanh", kernels.GeluTanh, func(tb *Table) func(dst, src []float32) { return tb.GeluTanh }},
	} {
		want := make([]float32, len(x))
		f.ref(want, x)
		got := make([]float32, len(x))
		for _, tb := range Available() {
			f.of(tb)(got, x)
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("%v %s(%v = %08x) = %v (%08x), reference %v (%08x)", tb, f.name, x[i], math.Float32bits(x[i]), got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
}

// TestSoftmaxExpRangeEveryTable runs every table's SoftmaxRow on rows
// holding a 0 and a comb through the negative float32 values, so that
// m = 0 and each exponential is ExpNeg of the value itself: the whole
// domain of ExpNeg, its flush to 0 below ExpNegMin and subnormal
// arguments, bit for bit against the reference.
func TestSoftmaxExpRangeEveryTable(t *testing.T) {
	const step = 1031
	var all []float32
	for b := uint64(0x80000000); b < 0xff800000; b += step {
		all = append(all, math.Float32frombits(uint32(b)))
	}
	for _, n := range []int{8, 24, 37, 128, 1000} {
		for start := 0; start < len(all); start += n - 1 {
			row := append([]float32{0}, all[start:min(start+n-1, len(all))]...)
			want := slices.Clone(row)
			kernels.SoftmaxRow(want, 1)
			for _, tb := range Available() {
				got := slices.Clone(row)
				tb.SoftmaxRow(got, 1)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("%v SoftmaxRow n=%d [%d] (x %v) = %v, reference %v", tb, len(row), i, row[i], got[i], want[i])
				}
			}
		}
	}
}

// FuzzVecMath decodes bytes into float32 values (any bit pattern) and
// compares every table's vector math with the reference.
func FuzzVecMath(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 128, 191, 0, 0, 192, 127, 1, 0, 0, 0}, float32(1))
	f.Add(make([]byte, 4*17), float32(0.125))
	// 2·27 values: halves of 16 + 8 + 3 (a zmm step, a ymm block, a masked
	// tail), with ±0, ±Inf, NaN, subnormals and huge values
	seed := make([]byte, 0, 4*54)
	for i := range 54 {
		v := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
			1e-40, -1e-45, 3e38, -3e38, 14.142136, -9.5, 0.70710677, kernels.ExpNegMin, -100}[i%14]
		if i%5 == 4 {
			v = float32(i) - 27
		}
		seed = binary.LittleEndian.AppendUint32(seed, math.Float32bits(v))
	}
	f.Add(seed, float32(0.5))
	f.Add(seed[:4*16], float32(3))
	f.Fuzz(func(t *testing.T, data []byte, scale float32) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		half := len(x) / 2
		a, b := x[:half], x[half:2*half]
		want := slices.Clone(x)
		kernels.SoftmaxRow(want, scale)
		wantG := make([]float32, half)
		kernels.Gelu(wantG, a, b)
		wantA := slices.Clone(a)
		kernels.AddBias(wantA, b, a)
		wantS, wantT, wantGT := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
		kernels.Sigmoid(wantS, x)
		kernels.Tanh(wantT, x)
		kernels.GeluTanh(wantGT, x)
		swish := kernels.XSigmoidConsts(0, float64(scale))
		wantX := make([]float32, len(x))
		kernels.XSigmoid(wantX, x, swish)
		for _, tb := range Available() {
			got := slices.Clone(x)
			tb.SoftmaxRow(got, scale)
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("%v SoftmaxRow(%v, %v)[%d] = %v, want %v", tb, x, scale, i, got[i], want[i])
			}
			g := make([]float32, half)
			tb.Gelu(g, a, b)
			if i := sameBits(g, wantG); i >= 0 {
				t.Fatalf("%v Gelu(%v + %v)[%d] = %v, want %v", tb, a, b, i, g[i], wantG[i])
			}
			s := slices.Clone(a)
			tb.AddBias(s, b, a)
			if i := sameBits(s, wantA); i >= 0 {
				t.Fatalf("%v AddBias[%d] = %v, want %v", tb, i, s[i], wantA[i])
			}
			e := make([]float32, len(x))
			tb.Sigmoid(e, x)
			if i := sameBits(e, wantS); i >= 0 {
				t.Fatalf("%v Sigmoid(%v) = %v, want %v", tb, x[i], e[i], wantS[i])
			}
			tb.Tanh(e, x)
			if i := sameBits(e, wantT); i >= 0 {
				t.Fatalf("%v Tanh(%v) = %v, want %v", tb, x[i], e[i], wantT[i])
			}
			tb.GeluTanh(e, x)
			if i := sameBits(e, wantGT); i >= 0 {
				t.Fatalf("%v GeluTanh(%v) = %v, want %v", tb, x[i], e[i], wantGT[i])
			}
			tb.XSigmoid(e, x, swish)
			if i := sameBits(e, wantX); i >= 0 {
				t.Fatalf("%v XSigmoid(%v·%v) = %v, want %v", tb, scale, x[i], e[i], wantX[i])
			}
		}
	})
}

// BenchmarkVecMath runs each table's vector math on rows of the
// transformer encoder's sizes: softmax over 128 keys, GELU and bias over
// 1,024 features.
func BenchmarkVecMath(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x := vecInput(r, 1024, 3, false)
	bias := vecInput(r, 1024, 1, false)
	out := make([]float32, 1024)
	for _, tb := range Available() {
		b.Run("SoftmaxRow128/"+tb.Name, func(b *testing.B) {
			b.SetBytes(4 * 128)
			b.ReportAllocs()
			for b.Loop() {
				copy(out, x[:128])
				tb.SoftmaxRow(out[:128], 0.125)
			}
		})
		b.Run("GeluBias1024/"+tb.Name, func(b *testing.B) {
			b.SetBytes(4 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				tb.Gelu(out, x, bias)
			}
		})
		b.Run("Sigmoid1024/"+tb.Name, func(b *testing.B) {
			b.SetBytes(4 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				tb.Sigmoid(out, x)
			}
		})
		b.Run("Tanh1024/"+tb.Name, func(b *testing.B) {
			b.SetBytes(4 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				tb.Tanh(out, x)
			}
		})
		b.Run("GeluTanh1024/"+tb.Name, func(b *testing.B) {
			b.SetBytes(4 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				tb.GeluTanh(out, x)
			}
		})
		b.Run("AddBias1024/"+tb.Name, func(b *testing.B) {
			b.SetBytes(4 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				tb.AddBias(out, bias, x)
			}
		})
	}
}
