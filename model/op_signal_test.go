package model

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// TestFourierMatchesDefinition compares both transform paths (radix-2 and
// the direct DFT) with the definition, and checks inverse∘forward = id.
func TestFourierMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 8, 10, 16, 31, 64} {
		x := make([]complex128, n)
		re, im := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
			re[i], im[i] = real(x[i]), imag(x[i])
		}
		f := newFourier(n)
		f.transform(re, im, false)
		for k := 0; k < n; k++ {
			var want complex128
			for j := 0; j < n; j++ {
				want += x[j] * cmplx.Exp(complex(0, -2*math.Pi*float64(k*j)/float64(n)))
			}
			if cmplx.Abs(complex(re[k], im[k])-want) > 1e-9*float64(n) {
				t.Fatalf("n=%d: X[%d] = %v, want %v", n, k, complex(re[k], im[k]), want)
			}
		}
		f.transform(re, im, true)
		for i := range x {
			if cmplx.Abs(complex(re[i], im[i])-x[i]) > 1e-12*float64(n) {
				t.Fatalf("n=%d: inverse gave %v at %d, want %v", n, complex(re[i], im[i]), i, x[i])
			}
		}
	}
}

// TestRealTransformsRoundTrip: IRFFT(RFFT(x)) = x for even and odd lengths.
func TestRealTransformsRoundTrip(t *testing.T) {
	for _, n := range []int{8, 9} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i*i%7) - 2
		}
		sig := tensor.From([]int{1, n, 1}, x)
		spec, err := dftOp(sig, nil, 1, false, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec[0].Shape; got[1] != n/2+1 || got[2] != 2 {
			t.Fatalf("RFFT shape %v", got)
		}
		back, err := dftOp(spec[0], tensor.Scalar(int64(n)), 1, true, true)
		if err != nil {
			t.Fatal(err)
		}
		y := back[0].Data.([]float32)
		for i := range x {
			if math.Abs(float64(y[i]-x[i])) > 1e-5 {
				t.Fatalf("n=%d: round trip %v, want %v", n, y, x)
			}
		}
	}
}

func TestSignalBadInputs(t *testing.T) {
	x := tensor.From([]int{1, 4, 1}, []float32{1, 2, 3, 4})
	for name, err := range map[string]error{
		"last axis":         second(dftOp(x, nil, 2, false, false)),
		"huge dft_length":   second(dftOp(x, tensor.Scalar(int64(1)<<40), 1, false, false)),
		"zero dft_length":   second(dftOp(x, tensor.Scalar(int64(0)), 1, false, false)),
		"integer signal":    second(dftOp(tensor.From([]int{1, 2, 1}, []int32{1, 2}), nil, 1, false, false)),
		"complex rfft":      second(dftOp(tensor.From([]int{1, 2, 2}, []float32{1, 2, 3, 4}), nil, 1, false, true)),
		"rank 1 signal":     second(dftOp(tensor.From([]int{4}, []float32{1, 2, 3, 4}), nil, 0, false, false)),
		"non-scalar length": second(dftOp(x, tensor.From([]int{2}, []int64{2, 2}), 1, false, false)),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func second[A, B any](_ A, b B) B { return b }
