package training_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/ops/training"
	"github.com/quantserve/quantserve/tensor"
)

// optimizer is one optimizer node of k tensors with outs output lists.
func optimizer(op string, k, outs int, attrs ...*onnxpb.Attribute) opstest.Node {
	return opstest.Node{Domain: training.Domain, Op: op, Opset: 1, Attrs: attrs, Outputs: k * outs}
}

// step runs n on R, T and the tensor lists, in order.
func step(t *testing.T, n opstest.Node, r, tt *tensor.Tensor, lists ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	out, err := opstest.Run(t, n, append([]*tensor.Tensor{r, tt}, lists...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func scalar(dt tensor.DataType, v float64) *tensor.Tensor {
	if dt == tensor.Float64 {
		return tensor.Scalar(v)
	}
	return tensor.Scalar(float32(v))
}

func vec(dt tensor.DataType, v ...float64) *tensor.Tensor {
	if dt == tensor.Float64 {
		return tensor.From([]int{len(v)}, v)
	}
	f := make([]float32, len(v))
	for i, e := range v {
		f[i] = float32(e)
	}
	return tensor.From([]int{len(v)}, f)
}

func checkOut(t *testing.T, got *tensor.Tensor, name string, dt tensor.DataType, want ...float64) {
	t.Helper()
	if got == nil || got.DType != dt || got.Len() != len(want) {
		t.Errorf("%s = %v, want %v %v", name, got, dt, want)
		return
	}
	for i, g := range got.Float64s() {
		if math.Abs(g-want[i]) > 1e-6*(1+math.Abs(want[i])) {
			t.Errorf("%s = %v, want %v %v", name, got, dt, want)
			return
		}
	}
}

// The expected values below are worked out by hand from the operators'
// pseudo code in the ONNX specification.
func TestAdagradStep(t *testing.T) {
	for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64} {
		n := optimizer("Adagrad", 2, 2, opstest.AttrFloat("decay_factor", 1), opstest.AttrFloat("norm_coefficient", 0.5))
		// T=1, decay 1: r = 2/(1+1) = 1. X0=2, G0=2: g = 0.5·2+2 = 3,
		// H0_new = 0+9 = 9, X0_new = 2 − 1·3/3 = 1.
		out := step(t, n, scalar(dt, 2), tensor.Scalar(int64(1)),
			vec(dt, 2), vec(dt, 0, 4), // X0, X1
			vec(dt, 2), vec(dt, 4, -1), // G0, G1
			vec(dt, 0), vec(dt, 9, 16)) // H0, H1
		// X1 = [0, 4], G1 = [4, −1]: g = [4, 0.5·4−1 = 1]; H1_new =
		// [9+16, 16+1]; X1_new = [0 − 4/5, 4 − 1/√17].
		checkOut(t, out[0], "X0_new", dt, 1)
		checkOut(t, out[1], "X1_new", dt, -0.8, 4-1/math.Sqrt(17))
		checkOut(t, out[2], "H0_new", dt, 9)
		checkOut(t, out[3], "H1_new", dt, 25, 17)
	}
}

func TestAdamStep(t *testing.T) {
	n := optimizer("Adam", 1, 3, opstest.AttrFloat("alpha", 0.5), opstest.AttrFloat("beta", 0.5), opstest.AttrFloat("norm_coefficient_post", 0.5))
	f := tensor.Float32
	x, g, v, h := vec(f, 1, 1), vec(f, 2, -2), vec(f, 0, 0), vec(f, 0, 0)
	// V_new = 0.5·G = [1, −1]; H_new = 0.5·G² = [2, 2].
	// T=0: R_adj = 1; X_new = (1 − 0.5)·(1 ∓ 1/√2).
	out := step(t, n, tensor.Scalar(float32(1)), tensor.Scalar(int64(0)), x, g, v, h)
	checkOut(t, out[0], "X0_new", f, 0.5*(1-1/math.Sqrt2), 0.5*(1+1/math.Sqrt2))
	checkOut(t, out[1], "V0_new", f, 1, -1)
	checkOut(t, out[2], "H0_new", f, 2, 2)
	// T=1: R_adj = √(1−0.5)/(1−0.5) = √2; X_new = 0.5·(1 ∓ 1).
	out = step(t, n, tensor.Scalar(float32(1)), tensor.Scalar(int64(1)), x, g, v, h)
	checkOut(t, out[0], "X0_new", f, 0, 1)
}

func TestMomentumStep(t *testing.T) {
	for _, mode := range []string{"standard", "nesterov"} {
		n := optimizer("Momentum", 1, 2, opstest.AttrFloat("alpha", 0.5), opstest.AttrFloat("beta", 0.25), opstest.AttrFloat("norm_coefficient", 1), opstest.AttrString("mode", mode))
		d := tensor.Float64
		// g = X + G = [2, 0].
		for _, s := range []struct {
			t    int64
			v, x []float64
		}{
			// T=0: beta is 1: V_new = 0.5·V + g = [3, 2].
			{0, []float64{3, 2}, map[string][]float64{"standard": {1 - 1.5, 2 - 1}, "nesterov": {1 - 0.5*(2+1.5), 2 - 0.5*(0+1)}}[mode]},
			// T=3: V_new = 0.5·V + 0.25·g = [1.5, 2].
			{3, []float64{1.5, 2}, map[string][]float64{"standard": {1 - 0.75, 2 - 1}, "nesterov": {1 - 0.5*(2+0.75), 2 - 0.5*(0+1)}}[mode]},
		} {
			out := step(t, n, tensor.Scalar(0.5), tensor.Scalar(s.t), vec(d, 1, 2), vec(d, 1, -2), vec(d, 2, 4))
			checkOut(t, out[0], "X0_new", d, s.x...)
			checkOut(t, out[1], "V0_new", d, s.v...)
		}
	}
}

func TestOptimizersRefuseBadModelsAndInputs(t *testing.T) {
	// Momentum's attributes are required, its mode is one of two.
	if _, _, err := opstest.Compile(optimizer("Momentum", 1, 2, opstest.AttrFloat("alpha", 0.5), opstest.AttrString("mode", "standard")), 5); err == nil {
		t.Error("Momentum without beta and norm_coefficient loaded")
	}
	if _, _, err := opstest.Compile(optimizer("Momentum", 1, 2, opstest.AttrFloat("alpha", 0.5), opstest.AttrFloat("beta", 0.5), opstest.AttrFloat("norm_coefficient", 0), opstest.AttrString("mode", "heavy-ball")), 5); err == nil {
		t.Error("Momentum of an unknown mode loaded")
	}
	// Outputs must match the tensors optimized.
	if _, _, err := opstest.Compile(optimizer("Adam", 1, 2), 6); err == nil {
		t.Error("Adam with two output lists loaded")
	}
	// A state tensor whose shape differs from its X is a bad input, and
	// so is an R that is not one value: errors, not panics.
	f := tensor.Float32
	n := optimizer("Adagrad", 1, 2)
	for name, in := range map[string][]*tensor.Tensor{
		"short H":  {tensor.Scalar(float32(1)), tensor.Scalar(int64(0)), vec(f, 1, 2), vec(f, 1, 2), vec(f, 1)},
		"vector R": {vec(f, 1, 2), tensor.Scalar(int64(0)), vec(f, 1), vec(f, 1), vec(f, 1)},
	} {
		if _, err := opstest.Run(t, n, in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: got %v, want an input error", name, err)
		}
	}
	// Zero-size tensors step to zero-size tensors.
	out := step(t, n, tensor.Scalar(float32(1)), tensor.Scalar(int64(0)), vec(f), vec(f), vec(f))
	if out[0].Len() != 0 || out[1].Len() != 0 {
		t.Errorf("zero-size step gave %v, %v", out[0], out[1])
	}
}

// A cancelled request stops every optimizer.
func TestOptimizersCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, gemm.Default(), false)
	f := tensor.Float32
	for _, tc := range []struct {
		n      opstest.Node
		groups int
	}{
		{optimizer("Adagrad", 1, 2), 3},
		{optimizer("Adam", 1, 3), 4},
		{optimizer("Momentum", 1, 2, opstest.AttrFloat("alpha", 0.5), opstest.AttrFloat("beta", 0.5), opstest.AttrFloat("norm_coefficient", 0), opstest.AttrString("mode", "standard")), 3},
	} {
		in := []*tensor.Tensor{tensor.Scalar(float32(1)), tensor.Scalar(int64(1))}
		for range tc.groups {
			in = append(in, vec(f, 1, 2))
		}
		op, _, err := opstest.Compile(tc.n, len(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Run(c, in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: got %v, want context.Canceled", tc.n.Op, err)
		}
	}
}
