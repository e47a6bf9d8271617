package opstest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// Check fails the test unless got has the given shape and data that
// prints as want does (fmt.Sprint: want is a slice of the element type,
// or anything printing the same).
func Check(t testing.TB, what string, got *tensor.Tensor, shape []int, want any) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no output", what)
	}
	if !slices.Equal(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	if fmt.Sprint(got.Data) != fmt.Sprint(want) {
		t.Fatalf("%s: %v, want %v", what, got.Data, want)
	}
}

// Close fails the test unless got and want have the same length and each
// element of got is within tol·(1 + |want|) of want's (a NaN is within
// nothing).
func Close[T float32 | float64](t testing.TB, what string, got, want []T, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if !(math.Abs(g-w) <= tol*(1+math.Abs(w))) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}
