package loss

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// lossNode describes a loss node (SoftmaxCrossEntropyLoss when sce) at
// opset 13 with its ignore_index (nil: none) and reduction.
func lossNode(sce bool, ii *int64, reduction string, outs int) opstest.Node {
	n := opstest.Node{Op: "NegativeLogLikelihoodLoss", Opset: 13, Outputs: outs,
		Attrs: []*onnxpb.Attribute{{Name: "reduction", Type: onnxpb.AttrString, S: []byte(reduction)}}}
	if sce {
		n.Op = "SoftmaxCrossEntropyLoss"
	}
	if ii != nil {
		n.Attrs = append(n.Attrs, &onnxpb.Attribute{Name: "ignore_index", Type: onnxpb.AttrInt, I: *ii})
	}
	return n
}

// lossOp compiles a loss node for ins inputs and outs outputs and
// returns a function running it.
func lossOp(t *testing.T, sce bool, ii *int64, reduction string, ins, outs int) func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	op, _, err := opstest.Compile(lossNode(sce, ii, reduction, outs), ins)
	if err != nil {
		t.Fatal(err)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return op.Run(ops.NewContext(context.Background(), gemm.Default(), false), in)
	}
}

// TestLossesByHand checks small cases worked out by hand: per-element
// losses, weights, the weighted mean's divisor, ignored targets, INT32
// targets and an FP16 input.
func TestLossesByHand(t *testing.T) {
	// x (N=2, C=3, D=2): x[n][c][d]
	x := tensor.From([]int{2, 3, 2}, []float32{
		1, 2, 3, 4, 5, 6,
		7, 8, 9, 10, 11, 12,
	})
	target := tensor.From([]int{2, 2}, []int64{0, 2, 1, 1})
	w := tensor.From([]int{3}, []float32{1, 2, 3})
	one := int64(1)
	out, err := lossOp(t, false, nil, "none", 3, 1)([]*tensor.Tensor{x, target, w})
	if err != nil {
		t.Fatal(err)
	}
	// -x[0][0][0]·1, -x[0][2][1]·3, -x[1][1][0]·2, -x[1][1][1]·2
	want := []float32{-1, -18, -18, -20}
	for i, g := range out[0].Data.([]float32) {
		if g != want[i] {
			t.Fatalf("none: %v, want %v", out[0].Data, want)
		}
	}
	out, _ = lossOp(t, false, &one, "mean", 3, 1)([]*tensor.Tensor{x, target, w})
	if g := out[0].Data.([]float32)[0]; g != -19.0/4 || out[0].Rank() != 0 {
		t.Fatalf("weighted mean ignoring class 1: %v, want %v", g, -19.0/4)
	}
	t32 := tensor.From([]int{2, 2}, []int32{1, 1, 1, 1})
	out, _ = lossOp(t, false, &one, "mean", 2, 1)([]*tensor.Tensor{x, t32})
	if g := out[0].Data.([]float32)[0]; !math.IsNaN(float64(g)) {
		t.Fatalf("mean with every target ignored: %v, want NaN", g)
	}
	out, _ = lossOp(t, false, nil, "sum", 2, 1)([]*tensor.Tensor{x, t32})
	if g := out[0].Data.([]float32)[0]; g != -(3 + 4 + 9 + 10) {
		t.Fatalf("sum: %v", g)
	}

	xh := tensor.From([]int{1, 2}, tensor.Float32ToHalf[tensor.F16]([]float32{0, 0}))
	out, err = lossOp(t, true, nil, "mean", 2, 2)([]*tensor.Tensor{xh, tensor.From([]int{1}, []int64{1})})
	if err != nil || out[0].DType != tensor.Float16 || out[1].DType != tensor.Float16 {
		t.Fatal(out, err)
	}
	if g := tensor.HalfToFloat32(out[0].Data.([]tensor.F16))[0]; math.Abs(float64(g)-math.Ln2) > 1e-3 {
		t.Fatalf("SCE of two equal logits: %v, want ln 2", g)
	}
	if lp := tensor.HalfToFloat32(out[1].Data.([]tensor.F16)); math.Abs(float64(lp[0])+math.Ln2) > 1e-3 {
		t.Fatalf("log_prob %v", lp)
	}
}

func TestSCELargeLogits(t *testing.T) {
	x := tensor.From([]int{1, 3}, []float32{1000, 1000, -1000})
	out, err := lossOp(t, true, nil, "none", 2, 2)([]*tensor.Tensor{x, tensor.From([]int{1}, []int64{0})})
	if err != nil {
		t.Fatal(err)
	}
	if g := out[0].Data.([]float32)[0]; math.Abs(float64(g)-math.Ln2) > 1e-6 {
		t.Fatalf("loss %v, want ln 2", g)
	}
	if lp := out[1].Data.([]float32); !math.IsInf(float64(lp[2]), 0) && lp[2] > -1999 {
		t.Fatalf("log_prob %v", lp)
	}
}

func TestLossBadInputs(t *testing.T) {
	x := tensor.From([]int{2, 3}, make([]float32, 6))
	nll := lossOp(t, false, nil, "mean", 3, 1)
	for name, in := range map[string][]*tensor.Tensor{
		"target out of range": {x, tensor.From([]int{2}, []int64{0, 3}), nil},
		"negative target":     {x, tensor.From([]int{2}, []int64{-1, 0}), nil},
		"target shape":        {x, tensor.From([]int{3}, []int64{0, 0, 0}), nil},
		"float target":        {x, tensor.From([]int{2}, []float32{0, 0}), nil},
		"weight length":       {x, tensor.From([]int{2}, []int64{0, 0}), tensor.From([]int{2}, []float32{1, 1})},
		"weight type":         {x, tensor.From([]int{2}, []int64{0, 0}), tensor.From([]int{3}, []float64{1, 1, 1})},
		"rank 1 input":        {tensor.From([]int{3}, make([]float32, 3)), tensor.From([]int{}, []int64{0}), nil},
		"integer input":       {tensor.From([]int{2, 3}, make([]int32, 6)), tensor.From([]int{2}, []int64{0, 0}), nil},
	} {
		if _, err := nll(in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	if _, _, err := opstest.Compile(lossNode(false, nil, "max", 1), 2); err == nil {
		t.Fatal("reduction max must be refused")
	}
}

// TestLossAttrsUntouched: building a loss leaves its parsed attributes
// as parsed.
func TestLossAttrsUntouched(t *testing.T) {
	two := int64(2)
	for _, sce := range []bool{false, true} {
		_, params, err := opstest.Compile(lossNode(sce, &two, "sum", 1), 3)
		if err != nil {
			t.Fatal(err)
		}
		at := params.(*Attrs)
		if at.IgnoreIndex == nil || *at.IgnoreIndex != 2 || at.Reduction != "sum" {
			t.Errorf("attributes after build: %+v", at)
		}
	}
}
