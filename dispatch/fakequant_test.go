package dispatch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// fakeCase is a QuantizeLinear -> DequantizeLinear pair: the scales, the
// zero points and the integer type (INT8 when signed, UINT8 otherwise).
type fakeCase struct {
	qs, ds float32
	qz, dz int
	signed bool
}

// fakeCases are pairs of both types, zero points at and inside the
// type's bounds, scales of every magnitude (subnormal, where most
// quotients overflow; huge; negative; infinite). Zero and NaN scales
// are left out: the caller runs those through Apply.
var fakeCases = []fakeCase{
	{0.0235, 0.0235, 128, 128, false},
	{0.0235, 0.0235, 0, 0, false},
	{3.7e-5, 3.7e-5, 255, 255, false},
	{0.7, 0.3, 17, 200, false},
	{0.1, 0.1, 0, 0, true},
	{0.013, 0.027, -5, 3, true},
	{1.9, 0.5, 127, -128, true},
	{-0.5, 0.25, 10, 20, true},
	{1e-40, 1e-40, 0, 0, true},
	{1e30, 3, -128, 127, true},
	{float32(math.Inf(1)), 0.5, 3, 3, true},
}

// least is the integer type's least value.
func (c fakeCase) least() int {
	if c.signed {
		return -128
	}
	return 0
}

// args are the kernels' constants for the pair, as quant.FakeQuant
// computes them: FakeQuant's shift and bounds, FakeQuantTable's shift.
func (c fakeCase) args() (shift, lo, hi, ishift float32) {
	least := float64(c.least())
	shift = float32(float64(c.qz) - float64(c.dz) - kernels.FakeQuantMagic)
	lo, hi = float32(least-float64(c.dz)), float32(least+255-float64(c.dz))
	ishift = float32(float64(c.qz) - least - kernels.FakeQuantMagic)
	return shift, lo, hi, ishift
}

// index is the pair's integer for a finite x by the ONNX definitions
// (float64, math.RoundToEven), as its offset from the type's least.
func (c fakeCase) index(x float32) int {
	least := float64(c.least())
	q := min(max(math.RoundToEven(float64(x/c.qs))+float64(c.qz), least), least+255)
	return int(q - least)
}

// fakeInput returns n values around the scale: every rounding midpoint
// of the range and its neighbours, beyond it, huge, zeros of both signs,
// subnormals, random values of several magnitudes, in random order; with
// bad, NaNs and infinities at a few random places too.
func fakeInput(r *rand.Rand, c fakeCase, n int, bad bool) []float32 {
	var pool []float32
	for i := -600; i <= 600; i++ {
		v := float32(i) / 2 * c.qs
		pool = append(pool, v, math.Nextafter32(v, float32(math.Inf(1))), math.Nextafter32(v, float32(math.Inf(-1))))
	}
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 0x1p21, -0x1p21, 0x1p22, -0x1p22, 0x1.8p23, -0x1.8p23,
		0x1p24, -0x1p24, math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45, 1e-40} {
		pool = append(pool, v)
		if w := v * c.qs; !math.IsInf(float64(w), 0) && w == w {
			pool = append(pool, w)
		}
	}
	x := make([]float32, n)
	for i := range x {
		if r.IntN(2) == 0 {
			x[i] = pool[r.IntN(len(pool))]
		} else {
			x[i] = float32(r.NormFloat64() * float64(c.qs) * math.Pow(10, float64(r.IntN(5))))
		}
	}
	if bad && n > 0 {
		inf := float32(math.Inf(1))
		for _, v := range []float32{float32(math.NaN()), inf, -inf, math.Float32frombits(0xffc00123), math.Float32frombits(0x7f800001)} {
			if r.IntN(3) == 0 {
				x[r.IntN(n)] = v
			}
		}
	}
	return x
}

// fakeLengths are every length to 70 (the tails around 8 and 32 lanes)
// and a few long ones.
func fakeLengths() []int {
	ls := []int{255, 256, 1000, 1031}
	for n := 0; n <= 70; n++ {
		ls = append(ls, n)
	}
	return ls
}

// TestFakeQuantEveryTable compares every table's FakeQuant and
// FakeQuantTable with the references: the same count and the same bits
// in dst[:count], dst[count:] untouched, nothing written outside dst,
// src unmodified, in place and out of place, aligned and not. dst[:count]
// is also quant.FakeQuant.Apply's (and the pair's index by the ONNX
// definitions), and count is the index of the first value that is not
// finite.
func TestFakeQuantEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 41))
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i)*1.5 - 7
	}
	for ci, c := range fakeCases {
		f := quant.NewFakeQuant(c.qs, float64(c.qz), c.ds, float64(c.dz), c.signed)
		shift, lo, hi, ishift := c.args()
		for _, n := range fakeLengths() {
			for _, bad := range []bool{false, true} {
				src := fakeInput(r, c, n, bad)
				first := slices.IndexFunc(src, func(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) })
				if first < 0 {
					first = n
				}
				want := make([]float32, n)
				wantN := kernels.FakeQuant(want, src, c.qs, shift, lo, hi, c.ds)
				wantT := make([]float32, n)
				wantTN := kernels.FakeQuantTable(wantT, src, c.qs, ishift, &lut)
				apply := make([]float32, n)
				f.Apply(apply, src)
				if wantN != first || wantTN != first {
					t.Fatalf("case %d n=%d: references returned %d and %d, the first value not finite is at %d", ci, n, wantN, wantTN, first)
				}
				for i := range first {
					if math.Float32bits(want[i]) != math.Float32bits(apply[i]) || wantT[i] != lut[c.index(src[i])] {
						t.Fatalf("case %d n=%d: x=%g (%#x): FakeQuant %g, Apply %g; FakeQuantTable %g, want lut[%d]",
							ci, n, src[i], math.Float32bits(src[i]), want[i], apply[i], wantT[i], c.index(src[i]))
					}
				}
				srcCopy := slices.Clone(src)
				for _, tb := range Available() {
					for _, off := range []int{0, 1} {
						name := fmt.Sprintf("%v case %d n=%d off=%d", tb, ci, n, off)
						init := make([]float32, n)
						for i := range init {
							init[i] = -99
						}
						got, outside := inGuard(init, off)
						if k := tb.FakeQuant(got, src, c.qs, shift, lo, hi, c.ds); k != wantN {
							t.Fatalf("%s: FakeQuant returned %d, reference %d", name, k, wantN)
						}
						if i := diffBits(got[:first], want[:first]); i >= 0 || diffBits(got[first:], init[first:]) >= 0 || outside() >= 0 {
							t.Fatalf("%s: FakeQuant dst differs at %d (x=%g: %#x, reference %#x), or wrote past the count or outside dst",
								name, i, src[max(i, 0)], math.Float32bits(got[max(i, 0)]), math.Float32bits(want[max(i, 0)]))
						}
						gotT, outsideT := inGuard(init, off)
						if k := tb.FakeQuantTable(gotT, src, c.qs, ishift, &lut); k != wantTN {
							t.Fatalf("%s: FakeQuantTable returned %d, reference %d", name, k, wantTN)
						}
						if i := diffBits(gotT[:first], wantT[:first]); i >= 0 || diffBits(gotT[first:], init[first:]) >= 0 || outsideT() >= 0 {
							t.Fatalf("%s: FakeQuantTable dst differs at %d, or wrote past the count or outside dst", name, i)
						}
						if diffBits(src, srcCopy) >= 0 {
							t.Fatalf("%s: src modified", name)
						}
						in, _ := inGuard(src, off)
						if k := tb.FakeQuant(in, in, c.qs, shift, lo, hi, c.ds); k != wantN || diffBits(in[:first], want[:first]) >= 0 || diffBits(in[first:], src[first:]) >= 0 {
							t.Fatalf("%s: FakeQuant in place differs (count %d)", name, k)
						}
						in, _ = inGuard(src, off)
						if k := tb.FakeQuantTable(in, in, c.qs, ishift, &lut); k != wantTN || diffBits(in[:first], wantT[:first]) >= 0 || diffBits(in[first:], src[first:]) >= 0 {
							t.Fatalf("%s: FakeQuantTable in place differs (count %d)", name, k)
						}
					}
				}
			}
		}
	}
}

// TestFakeQuantTableIndexInRange: with the scales the caller leaves to
// Apply (0, NaN), every finite x still gives an index inside the table on
// every table: 0 for a NaN quotient, a bound for an infinite one.
func TestFakeQuantTableIndexInRange(t *testing.T) {
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i)
	}
	r := rand.New(rand.NewPCG(43, 43))
	for _, qs := range []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN())} {
		for _, n := range fakeLengths() {
			src := vecInput(r, n, 3, false)
			if n > 0 {
				src[0] = 0
			}
			want := make([]float32, n)
			kernels.FakeQuantTable(want, src, qs, -kernels.FakeQuantMagic, &lut)
			for _, tb := range Available() {
				got := make([]float32, n)
				if k := tb.FakeQuantTable(got, src, qs, -kernels.FakeQuantMagic, &lut); k != n || diffBits(got, want) >= 0 {
					t.Fatalf("%v qs=%g n=%d: count %d, dst differs at %d", tb, qs, n, k, diffBits(got, want))
				}
			}
			for i, v := range want {
				if v != 0 && v != 255 {
					t.Fatalf("qs=%g: x=%g gave lut[%g]", qs, src[i], v)
				}
			}
		}
	}
}

// TestFakeQuantTableFarShift: quotients of every size, from below one to
// past 2^23, with shifts that put the table's window far from the zero
// point's usual offsets (0 to 255) on either side, where a product by
// 1/qs and the quotient round to different integers inside the window:
// every table writes the reference's entries.
func TestFakeQuantTableFarShift(t *testing.T) {
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i)
	}
	r := rand.New(rand.NewPCG(53, 53))
	const qs = 0.0371
	for _, off := range []float32{-300, 260, 300, 1000, 70000, 5e6, -5e6} {
		shift := off - kernels.FakeQuantMagic
		src := make([]float32, 4096)
		for i := range src {
			// a quotient within 0.02 of a midpoint between the window's
			// integers (a product by 1/qs that far from 0 can be further
			// off than that), or of any size
			q := -off + float32(r.IntN(256)) + 0.5 + float32(r.Float64()*0.04-0.02)
			if i%4 == 0 {
				q = float32(math.Ldexp(r.Float64(), r.IntN(26))) * float32(1-2*r.IntN(2))
			}
			src[i] = q * qs
		}
		want := make([]float32, len(src))
		if k := kernels.FakeQuantTable(want, src, qs, shift, &lut); k != len(src) {
			t.Fatalf("reference count %d", k)
		}
		inside := 0
		for _, v := range want {
			if v != 0 && v != 255 {
				inside++
			}
		}
		if inside < len(src)/2 {
			t.Fatalf("shift %g: %d indices inside the window, want most", off, inside)
		}
		for _, tb := range Available() {
			got := make([]float32, len(src))
			if k := tb.FakeQuantTable(got, src, qs, shift, &lut); k != len(src) || diffBits(got, want) >= 0 {
				i := max(diffBits(got, want), 0)
				t.Fatalf("%v shift %g: count %d, dst differs at %d (x=%g: %g, want %g)", tb, off, k, i, src[i], got[i], want[i])
			}
		}
	}
}

// TestFakeQuantKernels: every table gives quant.FakeQuant both of its
// one-pass kernels (the pure-Go table its look-up only: its pair is
// slower than the scalar loop), and the pair through them (ApplyVector,
// ApplyTable, in place, with values that are not finite) is Apply's and
// the scalar loop's.
func TestFakeQuantKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 47))
	for _, tb := range Available() {
		k := tb.FakeQuantKernels()
		if k.Table == nil || (k.Pair == nil) != (tb == generic) {
			t.Fatalf("%s: kernels %+v", tb.Name, k)
		}
		for ci, c := range fakeCases {
			f := quant.NewFakeQuant(c.qs, float64(c.qz), c.ds, float64(c.dz), c.signed)
			var lut [256]float32
			for i := range lut {
				lut[i] = float32(i) * 0.25
			}
			for _, n := range []int{0, 1, 9, 70, 1031} {
				src := fakeInput(r, c, n, true)
				want := make([]float32, n)
				f.Apply(want, src)
				got := slices.Clone(src)
				f.ApplyVector(got, got, k)
				tab := slices.Clone(src)
				f.ApplyTable(tab, tab, &lut, k)
				wantT := make([]float32, n)
				f.ApplyTable(wantT, src, &lut, quant.FakeQuantKernels{}) // the scalar loop
				for i := range n {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || tab[i] != wantT[i] {
						t.Fatalf("%s case %d n=%d: x=%g: ApplyVector %g, Apply %g; ApplyTable %g, the scalar loop %g", tb, ci, n, src[i], got[i], want[i], tab[i], wantT[i])
					}
				}
			}
		}
	}
}

// FuzzFakeQuant decodes bytes into a pair's constants (any float32 bits:
// zero, NaN and infinite scales too) and values (any bits: NaNs with
// payloads, infinities, subnormals), and compares every table's
// FakeQuant and FakeQuantTable with the references: the same count, the
// same values (a NaN matching any NaN) and dst untouched past the count.
func FuzzFakeQuant(f *testing.F) {
	f.Add([]byte{0x3c, 0xc0, 0x83, 0x12, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
	f.Add(make([]byte, 200))
	f.Add([]byte{0x7f, 0xc0, 0, 0, 0x7f, 0x80, 0, 0, 0x3f, 0x80, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		word := func(i int) float32 {
			var b [4]byte
			for j := range b {
				if len(data) > 0 {
					b[j] = data[(i*4+j)%len(data)]
				}
			}
			return math.Float32frombits(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
		}
		if len(data) < 8 {
			return
		}
		qs, ds := word(0), word(1)
		zp := float32(int8(data[0]))
		shift, lo, hi := zp-kernels.FakeQuantMagic, float32(int8(data[1])), float32(int8(data[1]))+255
		n := (len(data) - 8) / 2
		src := make([]float32, n)
		for i := range src {
			src[i] = word(i + 2)
			if data[i%len(data)]&3 != 0 { // mostly ordinary values near the scale
				src[i] = float32(int16(math.Float32bits(src[i]))) * qs / 64
			}
		}
		var lut [256]float32
		for i := range lut {
			lut[i] = float32(i)
		}
		want := make([]float32, n)
		wantN := kernels.FakeQuant(want, src, qs, shift, lo, hi, ds)
		wantT := make([]float32, n)
		wantTN := kernels.FakeQuantTable(wantT, src, qs, shift, &lut)
		for _, tb := range Available() {
			got := make([]float32, n)
			gotT := make([]float32, n)
			if k := tb.FakeQuant(got, src, qs, shift, lo, hi, ds); k != wantN || sameBits(got, want) >= 0 {
				t.Fatalf("%v: FakeQuant count %d (reference %d), differs at %d", tb, k, wantN, sameBits(got, want))
			}
			if k := tb.FakeQuantTable(gotT, src, qs, shift, &lut); k != wantTN || diffBits(gotT, wantT) >= 0 {
				t.Fatalf("%v: FakeQuantTable count %d (reference %d), differs at %d", tb, k, wantTN, diffBits(gotT, wantT))
			}
		}
	})
}
