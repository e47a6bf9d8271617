package dispatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// The transformer and convolution epilogues (SoftmaxRow, Gelu, AddBias,
// ConvFinish, ConvHard, ScaleRows, ConvTaps) on every table against their
// references, on inputs dense with the values a vector twin gets wrong
// first: every length to 200 and a few past 1,000, buffers shifted by 0
// to 3 values, NaN, ±Inf, ±0, subnormals, values near float32's largest,
// and GELU's piece bounds and its clamp with their neighbours.

// epilogueLengths are every length to 200 and a few long ones.
func epilogueLengths() []int {
	ls := []int{1000, 1001, 1027, 1031}
	for n := 0; n <= 200; n++ {
		ls = append(ls, n)
	}
	return ls
}

// hardValues are the specials hardInput draws from.
var hardValues = func() []float32 {
	inf := float32(math.Inf(1))
	v := []float32{0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()),
		math.MaxFloat32, -math.MaxFloat32, 3e38, -3e38, 1e20, -1e20, 1e-45, -1e-45,
		1e-40, -1e-40, 1.1754942e-38, -1.1754942e-38, 1, -1, 87.3, -87.4, 200, -200}
	// GELU's piece bounds (a = |x|/√2) and its clamp, both signs, and their
	// float32 neighbours
	for _, b := range []float64{0.5, 1.5, 3, 5.5, 10} {
		x := float32(b * math.Sqrt2)
		for _, y := range []float32{x, math.Nextafter32(x, 0), math.Nextafter32(x, inf)} {
			v = append(v, y, -y)
		}
	}
	return v
}()

// hardInput returns n values spread as vecInput's, a quarter of them
// replaced by hardValues.
func hardInput(r *rand.Rand, n int, spread float64) []float32 {
	x := vecInput(r, n, spread, false)
	for i := range x {
		if r.IntN(4) == 0 {
			x[i] = hardValues[r.IntN(len(hardValues))]
		}
	}
	return x
}

// epilogueCase checks one kernel on every table at every shift: f runs it
// into out (a copy of init placed shift values into a guarded buffer);
// the result must match want bit for bit (any NaN for a NaN), or within
// close when close is not nil, with nothing written outside out and the
// inputs (checked by same) unchanged.
func epilogueCase(t *testing.T, what string, init, want []float32, same func() bool, close func(got []float32) int, f func(tb *Table, out []float32)) {
	t.Helper()
	for _, tb := range Available() {
		for shift := 0; shift < 4; shift++ {
			out, outside := inGuard(init, shift)
			f(tb, out)
			i := -1
			if close != nil {
				i = close(out)
			} else {
				i = sameBits(out, want)
			}
			if i >= 0 {
				t.Fatalf("%v %s n=%d shift=%d: [%d] = %v (%08x), reference %v (%08x), input %v", tb, what, len(init), shift,
					i, out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]), init[i])
			}
			if i := outside(); i >= 0 {
				t.Fatalf("%v %s n=%d shift=%d: wrote outside its output at %d", tb, what, len(init), shift, i)
			}
			if !same() {
				t.Fatalf("%v %s n=%d shift=%d: modified an input", tb, what, len(init), shift)
			}
		}
	}
}

// TestEpiloguesEveryTable compares every table's SoftmaxRow, Gelu,
// AddBias, ConvFinish, ConvHard and ScaleRows with the references bit for
// bit, and ConvTaps within its stated rounding, on epilogueLengths.
func TestEpiloguesEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 26))
	inf := float32(math.Inf(1))
	for _, n := range epilogueLengths() {
		x := hardInput(r, n, 4)
		bias := hardInput(r, n, 1)
		res := hardInput(r, n, 2)
		xs, bs, rs := slices.Clone(x), slices.Clone(bias), slices.Clone(res)
		same := func() bool { return diffBits(x, xs) < 0 && diffBits(bias, bs) < 0 && diffBits(res, rs) < 0 }

		// softmax: rows with specials, and finite rows (most of the rows
		// with a special are all NaN)
		for _, special := range []bool{true, false} {
			row := x
			if !special {
				row = vecInput(r, n, 8, false)
			}
			scale := float32(r.ExpFloat64())
			want := slices.Clone(row)
			kernels.SoftmaxRow(want, scale)
			epilogueCase(t, fmt.Sprintf("SoftmaxRow special=%v", special), row, want, same, nil,
				func(tb *Table, out []float32) { tb.SoftmaxRow(out, scale) })
		}

		wantG := make([]float32, n)
		kernels.Gelu(wantG, x, nil)
		epilogueCase(t, "Gelu", make([]float32, n), wantG, same, nil,
			func(tb *Table, out []float32) { tb.Gelu(out, x, nil) })
		kernels.Gelu(wantG, x, bias)
		epilogueCase(t, "Gelu+bias", make([]float32, n), wantG, same, nil,
			func(tb *Table, out []float32) { tb.Gelu(out, x, bias) })
		epilogueCase(t, "Gelu+bias in place", x, wantG, same, nil,
			func(tb *Table, out []float32) { tb.Gelu(out, out, bias) })

		for _, withRes := range []bool{false, true} {
			var rr []float32
			if withRes {
				rr = res
			}
			want := slices.Clone(x)
			kernels.AddBias(want, bias, rr)
			epilogueCase(t, fmt.Sprintf("AddBias res=%v", withRes), x, want, same, nil,
				func(tb *Table, out []float32) { tb.AddBias(out, bias, rr) })
		}

		for _, bounds := range [][2]float32{{-inf, inf}, {0, inf}, {0, 6}, {-1.5, 0.25}, {float32(math.Copysign(0, -1)), 0}} {
			for mask := 0; mask < 4; mask++ {
				var b, rr []float32
				if mask&1 != 0 {
					b = bias
				}
				if mask&2 != 0 {
					rr = res
				}
				want := slices.Clone(x)
				kernels.ConvFinish(want, b, rr, bounds[0], bounds[1])
				epilogueCase(t, fmt.Sprintf("ConvFinish bounds=%v mask=%d", bounds, mask), x, want, same, nil,
					func(tb *Table, out []float32) { tb.ConvFinish(out, b, rr, bounds[0], bounds[1]) })
			}
		}

		for _, p := range [][6]float32{ // a, b, lo, hi, d, mode
			{0.2, 0.5, 0, 1, 1, kernels.HardT},
			{1.0 / 6, 0.5, 0, 1, 1, kernels.HardXT},
			{1, 3, 0, 6, 6, kernels.HardXTDiv},
			{1, 3, 0, 6, 1.0 / 6, kernels.HardXTMul},
			{0.7, -0.1, -inf, inf, 3, kernels.HardXTDiv},
			{3e30, 1e-40, -inf, 2e38, 1e-39, kernels.HardXTMul},
		} {
			want := slices.Clone(x)
			kernels.ConvHard(want, p[0], p[1], p[2], p[3], p[4], int(p[5]))
			epilogueCase(t, fmt.Sprintf("ConvHard %v", p), x, want, same, nil,
				func(tb *Table, out []float32) { tb.ConvHard(out, p[0], p[1], p[2], p[3], p[4], int(p[5])) })
		}

		for _, c := range []int{1, 7, 8, 9, 16, 23, 64} {
			if c > n+1 {
				continue
			}
			s := bias[:min(c, n)]
			want := slices.Clone(x)
			kernels.ScaleRows(want, s)
			epilogueCase(t, fmt.Sprintf("ScaleRows c=%d", c), x, want, same, nil,
				func(tb *Table, out []float32) { tb.ScaleRows(out, s) })
		}

		// ConvTaps: finite values of mixed magnitude, subnormals and zeros
		// (its fused twins round differently, within its stated bound)
		for _, taps := range []int{1, 3, 5} {
			for _, step := range []int{0, 1, 2} {
				fin := func(v []float32) []float32 {
					v = slices.Clone(v)
					for i, y := range v {
						if math.IsNaN(float64(y)) || math.IsInf(float64(y), 0) || math.Abs(float64(y)) > 1e18 {
							v[i] = 1.5
						}
					}
					return v
				}
				w := fin(hardInput(r, taps, 1))
				src := fin(hardInput(r, n+(taps-1)*step, 1))
				init := fin(x)
				want := slices.Clone(init)
				kernels.ConvTaps(want, src, w, step)
				srcCopy, wCopy := slices.Clone(src), slices.Clone(w)
				sameTaps := func() bool { return diffBits(src, srcCopy) < 0 && diffBits(w, wCopy) < 0 }
				epilogueCase(t, fmt.Sprintf("ConvTaps taps=%d step=%d", taps, step), init, want, sameTaps,
					func(got []float32) int { return convTapsClose(got, want, init, src, w, step) },
					func(tb *Table, out []float32) { tb.ConvTaps(out, src, w, step) })
			}
		}
	}
}
