package tensor

import (
	"math"
	"testing"
)

// TestF16RoundTrip converts every binary16 value to float32 and back.
func TestF16RoundTrip(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		h := F16(b)
		f := h.Float32()
		if math.IsNaN(float64(f)) {
			if g := F16From(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", b, g)
			}
			continue
		}
		if g := F16From(f); g != h {
			t.Fatalf("%#04x -> %v -> %#04x", b, f, g)
		}
	}
}

// TestF16RoundsToNearestEven checks the points halfway between adjacent
// binary16 values (ties go to the even neighbour) and points just off
// them, across normal and subnormal ranges and up to overflow.
func TestF16RoundsToNearestEven(t *testing.T) {
	for b := 0; b < 0x7bff; b++ {
		lo, hi := F16(b), F16(b+1)
		a, c := float64(lo.Float32()), float64(hi.Float32())
		mid := float32((a + c) / 2) // exact: binary16 neighbours differ in few bits
		even := lo
		if lo&1 == 1 {
			even = hi
		}
		if g := F16From(mid); g != even {
			t.Fatalf("tie %v between %#04x and %#04x rounded to %#04x", mid, lo, hi, g)
		}
		if g := F16From(math.Nextafter32(mid, float32(a))); g != lo {
			t.Fatalf("just below %v rounded to %#04x, want %#04x", mid, g, lo)
		}
		if g := F16From(math.Nextafter32(mid, float32(c))); g != hi {
			t.Fatalf("just above %v rounded to %#04x, want %#04x", mid, g, hi)
		}
	}
	if g := F16From(65520); g != 0x7c00 { // halfway between 65504 and 2^16 rounds to Inf
		t.Errorf("65520 -> %#04x, want +Inf", g)
	}
	if g := F16From(-1e9); g != 0xfc00 {
		t.Errorf("-1e9 -> %#04x, want -Inf", g)
	}
	if g := F16From(math.SmallestNonzeroFloat32); g != 0 {
		t.Errorf("tiny -> %#04x, want +0", g)
	}
}

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want BF16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even below
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, even above
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(1)), 0x7f80},
	} {
		if g := BF16From(c.f); g != c.want {
			t.Errorf("BF16From(%v) = %#04x, want %#04x", c.f, g, c.want)
		}
	}
	if g := BF16From(float32(math.NaN())); !math.IsNaN(float64(g.Float32())) {
		t.Errorf("NaN -> %#04x, not NaN", g)
	}
	for b := 0; b < 1<<16; b++ {
		h := BF16(b)
		if f := h.Float32(); !math.IsNaN(float64(f)) && BF16From(f) != h {
			t.Fatalf("%#04x does not round-trip", b)
		}
	}
}

func TestHalfSlices(t *testing.T) {
	f := []float32{0, 1, -0.5, 65504, 1e-7}
	h := Float32ToHalf[F16](f)
	g := HalfToFloat32(h)
	for i, v := range []float32{0, 1, -0.5, 65504, F16(2).Float32()} {
		if g[i] != v {
			t.Errorf("FP16 %d: %v, want %v", i, g[i], v)
		}
	}
	b := HalfToFloat32(Float32ToHalf[BF16](f))
	if b[1] != 1 || b[2] != -0.5 {
		t.Errorf("BF16 round trip: %v", b)
	}
}

// TestHalfFromFloat64RoundsOnce: a float64 just above a binary16 tie
// rounds up, where going through float32 first would land on the tie and
// round to even.
func TestHalfFromFloat64RoundsOnce(t *testing.T) {
	tie := (float64(F16(0x3c00).Float32()) + float64(F16(0x3c01).Float32())) / 2 // between 1 and 1+2^-10
	above := tie + 1e-12
	if g := F16FromFloat64(above); g != 0x3c01 {
		t.Errorf("F16FromFloat64(%v) = %#04x, want 0x3c01", above, g)
	}
	if g := F16From(float32(above)); g != 0x3c00 {
		t.Errorf("through float32: %#04x, want the tie's even 0x3c00", g)
	}
	btie := (1 + (1 + 1.0/128)) / 2.0
	if g := BF16FromFloat64(btie + 1e-12); g != 0x3f81 {
		t.Errorf("BF16FromFloat64 just above a tie = %#04x, want 0x3f81", g)
	}
	if g := BF16FromFloat64(1e-45); g != 0 { // far below the smallest subnormal, 2^-133
		t.Errorf("BF16 of 1e-45 = %#04x, want +0", g)
	}
	if g := BF16FromFloat64(0x1p-133); g != 1 {
		t.Errorf("BF16 of 2^-133 = %#04x, want the smallest subnormal", g)
	}
}
