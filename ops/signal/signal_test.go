package signal

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
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

// TestCancelledTransformsStop: DFTs and an STFT of many times
// ops.TickEvery of work return the request's error when the request is
// cancelled.
func TestCancelledTransformsStop(t *testing.T) {
	const n = 100003 // prime: Bluestein's transform
	sig := tensor.From([]int{1, n, 1}, make([]float32, n))
	if err := runCancelled(t, opstest.Node{Op: "DFT", Opset: 20}, sig); !errors.Is(err, context.Canceled) {
		t.Errorf("DFT of %d samples: %v, want %v", n, err, context.Canceled)
	}
	if err := runCancelled(t, opstest.Node{Op: "DFT", Opset: 17}, sig, tensor.Scalar(int64(n))); !errors.Is(err, context.Canceled) {
		t.Errorf("DFT-17 of %d samples: %v, want %v", n, err, context.Canceled)
	}
	// 10⁴ frames of 999 samples (odd: Bluestein's transform).
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
	// The windows and the mel filter bank look at it as well.
	size := tensor.Scalar(int64(ops.TickEvery + 1))
	for _, w := range []string{"HannWindow", "HammingWindow", "BlackmanWindow"} {
		if err := runCancelled(t, opstest.Node{Op: w, Opset: 17}, size); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want %v", w, err, context.Canceled)
		}
	}
	err = runCancelled(t, opstest.Node{Op: "MelWeightMatrix", Opset: 17}, size, tensor.Scalar(int64(64)),
		tensor.Scalar(int64(16000)), tensor.Scalar(float32(0)), tensor.Scalar(float32(8000)))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("MelWeightMatrix: %v, want %v", err, context.Canceled)
	}
}
