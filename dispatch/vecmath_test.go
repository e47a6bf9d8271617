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

// checkVec runs one vector-math case on every table against the
// reference: bit-identical outputs, guard bands intact, inputs unchanged.
func checkVec(t *testing.T, r *rand.Rand, n int, special bool) {
	t.Helper()
	x := vecInput(r, n, 4, special)
	bias := vecInput(r, n, 1, special)
	res := vecInput(r, n, 2, special)
	scale := float32(r.ExpFloat64())

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

	xs, bs, rs := slices.Clone(x), slices.Clone(bias), slices.Clone(res)
	unchanged := func(tb *Table, what string) {
		if sameBits(x, xs) >= 0 || sameBits(bias, bs) >= 0 || sameBits(res, rs) >= 0 {
			t.Fatalf("%v %s n=%d modified an input", tb, what, n)
		}
	}
	for _, tb := range Available() {
		// unaligned: one value into the buffer
		run := func(what string, want []float32, f func(out []float32)) {
			buf := make([]float32, n+9)
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
		run("Gelu in place", wantGeluB, func(out []float32) { copy(out, x); tb.Gelu(out, out, bias) })
		run("AddBias", wantAdd, func(out []float32) { copy(out, x); tb.AddBias(out, bias, nil) })
		run("AddBias+res", wantAddR, func(out []float32) { copy(out, x); tb.AddBias(out, bias, res) })
	}
}

// TestVecMathEveryTable compares every table's SoftmaxRow, Gelu and
// AddBias with the reference for every length to 131 (each tail around
// the 8 and 16 lanes of a step), with and without special values.
func TestVecMathEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for n := 0; n <= 131; n++ {
		checkVec(t, r, n, false)
		checkVec(t, r, n, true)
	}
	for _, n := range []int{256, 1000, 1024} {
		checkVec(t, r, n, true)
	}
}

// FuzzVecMath decodes bytes into float32 values (any bit pattern) and
// compares every table's vector math with the reference.
func FuzzVecMath(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 128, 191, 0, 0, 192, 127, 1, 0, 0, 0}, float32(1))
	f.Add(make([]byte, 4*17), float32(0.125))
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
		b.Run("AddBias1024/"+tb.Name, func(b *testing.B) {
			b.SetBytes(4 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				tb.AddBias(out, bias, x)
			}
		})
	}
}
