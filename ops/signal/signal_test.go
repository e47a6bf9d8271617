package signal

import (
	"context"
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// dft17 runs DFT at opset 17 (the axis an attribute) on x, with the
// optional dft_length.
func dft17(t *testing.T, x, length *tensor.Tensor, axis int64, inverse, onesided bool) ([]*tensor.Tensor, error) {
	t.Helper()
	flag := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	attrs := []*onnxpb.Attribute{
		{Name: "axis", Type: onnxpb.AttrInt, I: axis},
		{Name: "inverse", Type: onnxpb.AttrInt, I: flag(inverse)},
		{Name: "onesided", Type: onnxpb.AttrInt, I: flag(onesided)},
	}
	in := []*tensor.Tensor{x}
	if length != nil {
		in = append(in, length)
	}
	return opstest.Run(t, opstest.Node{Op: "DFT", Opset: 17, Attrs: attrs}, in...)
}

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
		if err := f.transform(opstest.Background(), re, im, false); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < n; k++ {
			var want complex128
			for j := 0; j < n; j++ {
				want += x[j] * cmplx.Exp(complex(0, -2*math.Pi*float64(k*j)/float64(n)))
			}
			if cmplx.Abs(complex(re[k], im[k])-want) > 1e-9*float64(n) {
				t.Fatalf("n=%d: X[%d] = %v, want %v", n, k, complex(re[k], im[k]), want)
			}
		}
		if err := f.transform(opstest.Background(), re, im, true); err != nil {
			t.Fatal(err)
		}
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
		spec, err := dft17(t, sig, nil, 1, false, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec[0].Shape; got[1] != n/2+1 || got[2] != 2 {
			t.Fatalf("RFFT shape %v", got)
		}
		back, err := dft17(t, spec[0], tensor.Scalar(int64(n)), 1, true, true)
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
		"last axis":         second(dft17(t, x, nil, 2, false, false)),
		"huge dft_length":   second(dft17(t, x, tensor.Scalar(int64(1)<<40), 1, false, false)),
		"zero dft_length":   second(dft17(t, x, tensor.Scalar(int64(0)), 1, false, false)),
		"integer signal":    second(dft17(t, tensor.From([]int{1, 2, 1}, []int32{1, 2}), nil, 1, false, false)),
		"complex rfft":      second(dft17(t, tensor.From([]int{1, 2, 2}, []float32{1, 2, 3, 4}), nil, 1, false, true)),
		"rank 1 signal":     second(dft17(t, tensor.From([]int{4}, []float32{1, 2, 3, 4}), nil, 0, false, false)),
		"non-scalar length": second(dft17(t, x, tensor.From([]int{2}, []int64{2, 2}), 1, false, false)),
	} {
		if !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

func second[A, B any](_ A, b B) B { return b }

// runCancelled compiles n for len(in) inputs and runs it under a context
// cancelled before the run starts.
func runCancelled(t *testing.T, n opstest.Node, in ...*tensor.Tensor) error {
	t.Helper()
	op, _, err := opstest.Compile(n, len(in))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = op.Run(ops.NewContext(ctx, nil, false), in)
	return err
}

// TestCancelledTransformsStop: a DFT and an STFT whose direct transforms
// would take about 10¹⁰ multiply-adds return the request's error at once
// when the request is cancelled.
func TestCancelledTransformsStop(t *testing.T) {
	const n = 100003 // prime: the direct DFT, n² multiply-adds
	sig := tensor.From([]int{1, n, 1}, make([]float32, n))
	if err := runCancelled(t, opstest.Node{Op: "DFT", Opset: 20}, sig); !errors.Is(err, context.Canceled) {
		t.Errorf("DFT of %d samples: %v, want %v", n, err, context.Canceled)
	}
	if err := runCancelled(t, opstest.Node{Op: "DFT", Opset: 17}, sig, tensor.Scalar(int64(n))); !errors.Is(err, context.Canceled) {
		t.Errorf("DFT-17 of %d samples: %v, want %v", n, err, context.Canceled)
	}
	// 10⁴ frames of 999 samples (odd: the direct DFT), 10⁶ multiply-adds each.
	long := tensor.From([]int{1, 10_000_000, 1}, make([]float32, 10_000_000))
	err := runCancelled(t, opstest.Node{Op: "STFT", Opset: 17}, long, tensor.Scalar(int64(999)), nil, tensor.Scalar(int64(999)))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("STFT: %v, want %v", err, context.Canceled)
	}
	// A power-of-two length takes the FFT, which looks at the context too.
	const p = 1 << 20
	pow := tensor.From([]int{1, p, 1}, make([]float32, p))
	if err := runCancelled(t, opstest.Node{Op: "DFT", Opset: 20}, pow); !errors.Is(err, context.Canceled) {
		t.Errorf("DFT of %d samples: %v, want %v", p, err, context.Canceled)
	}
}
