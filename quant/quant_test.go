package quant

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func randomMatrix(r *rand.Rand, k, n int) []float32 {
	x := make([]float32, k*n)
	for i := range x {
		switch r.IntN(10) {
		case 0:
			x[i] = 0
		case 1:
			x[i] = float32(r.NormFloat64() * 1e-30)
		default:
			x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*3))
		}
	}
	return x
}

// TestWeightErrorBound proves |x - deq(q(x))| <= s/2 for every element,
// scheme and a spread of magnitudes, computed in float64.
func TestWeightErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range []Scheme{PerTensor, PerChannel, PerBlock} {
		for _, dims := range [][2]int{{1, 1}, {33, 7}, {64, 16}, {100, 3}} {
			k, n := dims[0], dims[1]
			x := randomMatrix(r, k, n)
			w, err := QuantizeWeights(x, k, n, s)
			if err != nil {
				t.Fatal(err)
			}
			deq := w.Dequantize()
			for i := range x {
				sc := float64(w.Scale(i/n, i%n))
				q := w.Q[i]
				if q < -127 || q > 127 {
					t.Fatalf("%v: q = %d", s, q)
				}
				if diff := math.Abs(float64(x[i]) - float64(q)*sc); diff > sc/2 {
					t.Fatalf("%v %v: x=%g q=%d s=%g: error %g > s/2", s, dims, x[i], q, sc, diff)
				}
				if sc == 0 && (q != 0 || deq[i] != 0) {
					t.Fatalf("zero scale but q=%d", q)
				}
			}
		}
	}
}

func TestWeightEdgeCases(t *testing.T) {
	// all-zero columns and blocks, subnormals, and the range ends
	x := []float32{
		0, 1e-45, 127, -3,
		0, -1e-40, -127, 3,
	}
	w, err := QuantizeWeights(x, 2, 4, PerChannel)
	if err != nil {
		t.Fatal(err)
	}
	want := []int8{0, 0, 127, -127, 0, 0, -127, 127}
	for i := range want {
		if w.Q[i] != want[i] {
			t.Errorf("q[%d] = %d, want %d (scales %v)", i, w.Q[i], want[i], w.Scales)
		}
	}
	if w.Scales[0] != 0 || w.Scales[1] != 0 || w.Scales[2] != 1 {
		t.Errorf("scales %v", w.Scales)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		if _, err := QuantizeWeights([]float32{1, bad}, 1, 2, PerChannel); !errors.Is(err, ErrNotFinite) {
			t.Errorf("%v weight: %v", bad, err)
		}
	}
	b, err := QuantizeWeights(make([]float32, 64*2), 64, 2, PerBlock)
	if err != nil || len(b.Scales) != 4 || b.Scales[3] != 0 {
		t.Errorf("zero blocks: %+v %v", b, err)
	}
}

// TestRowParamsBound: every value of a row, quantized as the kernels do
// (clamp(roundEven(x·inv), -zp, 127-zp)), comes back within half a step;
// the zero point is 0 exactly for rows with no negative value; and the
// step is (max - min)/127 of the range widened to 0: for a skewed row far
// finer than a symmetric scheme's max|x|/64, for a symmetric one at most
// 128/127 of it.
func TestRowParamsBound(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for trial := 0; trial < 3000; trial++ {
		row := make([]float32, 1+r.IntN(40))
		shift := []float64{0, 0, 3, -3}[trial%4] // signed, non-negative, skewed up, skewed down
		for i := range row {
			v := r.NormFloat64() * math.Exp(r.NormFloat64()*4)
			switch {
			case trial%4 == 1:
				v = math.Abs(v)
			case shift != 0:
				v = (v/4 + shift) * math.Abs(v)
			}
			row[i] = float32(v)
		}
		lo, hi := row[0], row[0]
		for _, v := range row {
			lo, hi = min(lo, v), max(hi, v)
		}
		s, inv, zp := RowParams(lo, hi)
		if zp < 0 || zp > ActivationLevels || lo >= 0 && zp != 0 || hi <= 0 && lo < 0 && zp != ActivationLevels {
			t.Fatalf("zp %d for [%g, %g]", zp, lo, hi)
		}
		span := float64(max(hi, 0)) - float64(min(lo, 0))
		if span > 0 && math.Abs(float64(s)-span/ActivationLevels) > span*0x1p-20 {
			t.Fatalf("[%g, %g]: scale %g, want %g", lo, hi, s, span/ActivationLevels)
		}
		if old := float64(max(-lo, hi)) / 64; lo < 0 && float64(s) > old*128/127 {
			t.Fatalf("[%g, %g]: step %g, the symmetric scheme's %g", lo, hi, s, old)
		}
		for _, v := range row {
			q := min(max(math.RoundToEven(float64(v*inv)), float64(-zp)), float64(ActivationLevels-zp))
			// float32 product rounding adds at most 2^-16 of a step
			if d := math.Abs(float64(v) - q*float64(s)); d > float64(s)*(0.5+0x1p-16) {
				t.Fatalf("value %g in [%g, %g]: error %g > s/2 (s %g, zp %d)", v, lo, hi, d, s, zp)
			}
		}
	}
	if s, inv, zp := RowParams(0, 0); s != 0 || inv != 0 || zp != 0 {
		t.Errorf("zero row: %v %v %v", s, inv, zp)
	}
	if s, _, _ := RowParams(-1e-40, 1e-41); s != 0 {
		t.Errorf("subnormal row scale %v", s)
	}
}

func TestParseScheme(t *testing.T) {
	for _, s := range []Scheme{PerTensor, PerChannel, PerBlock} {
		if got, err := ParseScheme(s.String()); err != nil || got != s {
			t.Errorf("%v: %v %v", s, got, err)
		}
	}
	if _, err := ParseScheme("int4"); err == nil {
		t.Error("int4 accepted")
	}
}
