package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp32 compares Exp32 with math.Exp across float32's range.
func TestExp32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	check := func(x float32) {
		got := Exp32(x)
		want := math.Exp(float64(x))
		if want > math.MaxFloat32 {
			if !math.IsInf(float64(got), 1) {
				t.Fatalf("Exp32(%v) = %v, want +Inf", x, got)
			}
			return
		}
		w32 := float32(want)
		if w32 == 0 {
			if got != 0 && float64(got) > 2*want+1e-45 {
				t.Fatalf("Exp32(%v) = %v, want %v", x, got, want)
			}
			return
		}
		ulp := float64(math.Nextafter32(w32, float32(math.Inf(1))) - w32)
		if e := math.Abs(float64(got)-want) / ulp; e > worst {
			worst = e
		}
	}
	for i := 0; i < 200000; i++ {
		check(float32(r.Float64()*200 - 100))
		check(float32(r.Float64()*2 - 1))
	}
	for _, x := range []float32{0, -0, 1, -1, 88.7, 88.72283, 88.73, -87.3, -103.9, -104, -150, 1e-8} {
		check(x)
	}
	t.Logf("Exp32: %.2f ulp at worst", worst)
	if worst > 2 {
		t.Fatalf("Exp32 is %.2f ulp from math.Exp at worst", worst)
	}
	if !math.IsNaN(float64(Exp32(float32(math.NaN())))) || Exp32(float32(math.Inf(-1))) != 0 {
		t.Fatal("Exp32 of NaN or -Inf")
	}
}
