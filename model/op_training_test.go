package model_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

const trainingDomain = "ai.onnx.preview.training"

// optimizerModel is one optimizer node over k tensors of the given
// shapes; inputs R, T, then the groups X, G, ... named X0, X1, G0, ...
func optimizerModel(t *testing.T, op string, dt tensor.DataType, groups, outs []string, shapes [][]int, attrs ...*onnxpb.Attribute) (*model.Model, error) {
	t.Helper()
	ins := []mlIO{mlV("R", dt), mlV("T", tensor.Int64)}
	names := []string{"R", "T"}
	for _, g := range groups {
		for i, s := range shapes {
			n := g + string(rune('0'+i))
			ins = append(ins, mlV(n, dt, s...))
			names = append(names, n)
		}
	}
	var outputs []mlIO
	var onames []string
	for _, g := range outs {
		for i, s := range shapes {
			n := g + string(rune('0'+i)) + "_new"
			outputs = append(outputs, mlV(n, dt, s...))
			onames = append(onames, n)
		}
	}
	return mlLoad(trainingDomain, 1, ins, outputs, mlNode(op, names, onames, attrs...))
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

func checkOut(t *testing.T, out map[string]*tensor.Tensor, name string, dt tensor.DataType, want ...float64) {
	t.Helper()
	got := out[name]
	if got == nil || got.DType != dt || !mlClose(got, want, 1e-6) {
		t.Errorf("%s = %v, want %v %v", name, got, dt, want)
	}
}

// The expected values below are worked out by hand from the operators'
// pseudo code in the ONNX specification.
func TestAdagradStep(t *testing.T) {
	for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64} {
		m, err := optimizerModel(t, "Adagrad", dt, []string{"X", "G", "H"}, []string{"X", "H"}, [][]int{{1}, {2}},
			mlFloat("decay_factor", 1), mlFloat("norm_coefficient", 0.5))
		if err != nil {
			t.Fatal(err)
		}
		// T=1, decay 1: r = 2/(1+1) = 1. X0=2, G0=2: g = 0.5·2+2 = 3,
		// H0_new = 0+9 = 9, X0_new = 2 − 1·3/3 = 1.
		out := mlRun(t, m, map[string]*tensor.Tensor{
			"R": scalar(dt, 2), "T": tensor.Scalar(int64(1)),
			"X0": vec(dt, 2), "X1": vec(dt, 0, 4), "G0": vec(dt, 2), "G1": vec(dt, 4, -1),
			"H0": vec(dt, 0), "H1": vec(dt, 9, 16)})
		// X1 = [0, 4], G1 = [4, −1]: g = [4, 0.5·4−1 = 1]; H1_new =
		// [9+16, 16+1]; X1_new = [0 − 4/5, 4 − 1/√17].
		checkOut(t, out, "X0_new", dt, 1)
		checkOut(t, out, "H0_new", dt, 9)
		checkOut(t, out, "X1_new", dt, -0.8, 4-1/math.Sqrt(17))
		checkOut(t, out, "H1_new", dt, 25, 17)
	}
}

func TestAdamStep(t *testing.T) {
	m, err := optimizerModel(t, "Adam", tensor.Float32, []string{"X", "G", "V", "H"}, []string{"X", "V", "H"}, [][]int{{2}},
		mlFloat("alpha", 0.5), mlFloat("beta", 0.5), mlFloat("norm_coefficient_post", 0.5))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"R": tensor.Scalar(float32(1)),
		"X0": vec(tensor.Float32, 1, 1), "G0": vec(tensor.Float32, 2, -2), "V0": vec(tensor.Float32, 0, 0), "H0": vec(tensor.Float32, 0, 0)}
	// V_new = 0.5·G = [1, −1]; H_new = 0.5·G² = [2, 2].
	// T=0: R_adj = 1; X_new = (1 − 0.5)·(1 ∓ 1/√2).
	in["T"] = tensor.Scalar(int64(0))
	out := mlRun(t, m, in)
	checkOut(t, out, "V0_new", tensor.Float32, 1, -1)
	checkOut(t, out, "H0_new", tensor.Float32, 2, 2)
	checkOut(t, out, "X0_new", tensor.Float32, 0.5*(1-1/math.Sqrt2), 0.5*(1+1/math.Sqrt2))
	// T=1: R_adj = √(1−0.5)/(1−0.5) = √2; X_new = 0.5·(1 ∓ 1).
	in["T"] = tensor.Scalar(int64(1))
	out = mlRun(t, m, in)
	checkOut(t, out, "X0_new", tensor.Float32, 0, 1)
}

func TestMomentumStep(t *testing.T) {
	for _, mode := range []string{"standard", "nesterov"} {
		m, err := optimizerModel(t, "Momentum", tensor.Float64, []string{"X", "G", "V"}, []string{"X", "V"}, [][]int{{2}},
			mlFloat("alpha", 0.5), mlFloat("beta", 0.25), mlFloat("norm_coefficient", 1), mlStr("mode", mode))
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]*tensor.Tensor{"R": tensor.Scalar(0.5),
			"X0": vec(tensor.Float64, 1, 2), "G0": vec(tensor.Float64, 1, -2), "V0": vec(tensor.Float64, 2, 4)}
		// g = X + G = [2, 0].
		for _, step := range []struct {
			t    int64
			v, x []float64
		}{
			// T=0: beta is 1: V_new = 0.5·V + g = [3, 2].
			{0, []float64{3, 2}, map[string][]float64{"standard": {1 - 1.5, 2 - 1}, "nesterov": {1 - 0.5*(2+1.5), 2 - 0.5*(0+1)}}[mode]},
			// T=3: V_new = 0.5·V + 0.25·g = [1.5, 2].
			{3, []float64{1.5, 2}, map[string][]float64{"standard": {1 - 0.75, 2 - 1}, "nesterov": {1 - 0.5*(2+0.75), 2 - 0.5*(0+1)}}[mode]},
		} {
			in["T"] = tensor.Scalar(step.t)
			out := mlRun(t, m, in)
			checkOut(t, out, "V0_new", tensor.Float64, step.v...)
			checkOut(t, out, "X0_new", tensor.Float64, step.x...)
		}
	}
}

func TestOptimizersRefuseBadModelsAndInputs(t *testing.T) {
	// Momentum's attributes are required, its mode is one of two.
	if _, err := optimizerModel(t, "Momentum", tensor.Float32, []string{"X", "G", "V"}, []string{"X", "V"}, [][]int{{2}},
		mlFloat("alpha", 0.5), mlStr("mode", "standard")); err == nil {
		t.Error("Momentum without beta and norm_coefficient loaded")
	}
	if _, err := optimizerModel(t, "Momentum", tensor.Float32, []string{"X", "G", "V"}, []string{"X", "V"}, [][]int{{2}},
		mlFloat("alpha", 0.5), mlFloat("beta", 0.5), mlFloat("norm_coefficient", 0), mlStr("mode", "heavy-ball")); err == nil {
		t.Error("Momentum of an unknown mode loaded")
	}
	// Outputs must match the tensors optimized.
	if _, err := optimizerModel(t, "Adam", tensor.Float32, []string{"X", "G", "V", "H"}, []string{"X", "V"}, [][]int{{2}}); err == nil {
		t.Error("Adam with two output lists loaded")
	}
	// A state tensor whose shape differs from its X is a bad input, and
	// so is an R that is not one value: errors, not panics.
	m, err := optimizerModel(t, "Adagrad", tensor.Float32, []string{"X", "G", "H"}, []string{"X", "H"}, [][]int{{-1}})
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]map[string]*tensor.Tensor{
		"short H":  {"R": tensor.Scalar(float32(1)), "T": tensor.Scalar(int64(0)), "X0": vec(tensor.Float32, 1, 2), "G0": vec(tensor.Float32, 1, 2), "H0": vec(tensor.Float32, 1)},
		"vector R": {"R": vec(tensor.Float32, 1, 2), "T": tensor.Scalar(int64(0)), "X0": vec(tensor.Float32, 1), "G0": vec(tensor.Float32, 1), "H0": vec(tensor.Float32, 1)},
	} {
		if _, err := m.Run(context.Background(), in, nil); !errors.Is(err, model.ErrInput) {
			t.Errorf("%s: got %v, want an input error", name, err)
		}
	}
	// Zero-size tensors step to zero-size tensors.
	out := mlRun(t, m, map[string]*tensor.Tensor{"R": tensor.Scalar(float32(1)), "T": tensor.Scalar(int64(0)),
		"X0": vec(tensor.Float32), "G0": vec(tensor.Float32), "H0": vec(tensor.Float32)})
	if out["X0_new"].Len() != 0 || out["H0_new"].Len() != 0 {
		t.Errorf("zero-size step gave %v, %v", out["X0_new"], out["H0_new"])
	}
}
