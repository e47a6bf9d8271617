package activation

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestDropout(t *testing.T) {
	x := tensor.From([]int{2, 2}, []float32{1, 2, 3, 4})
	for _, c := range []struct {
		opset int64
		in    []*tensor.Tensor
		mask  tensor.DataType
	}{
		{7, []*tensor.Tensor{x}, tensor.Float32},
		{10, []*tensor.Tensor{x}, tensor.Bool},
		{13, []*tensor.Tensor{x}, tensor.Bool},
		{13, []*tensor.Tensor{x, tensor.Scalar(float32(0.7))}, tensor.Bool},
		{13, []*tensor.Tensor{x, tensor.Scalar(float32(0.7)), tensor.Scalar(false)}, tensor.Bool},
		{22, []*tensor.Tensor{x, tensor.Scalar(float32(0)), tensor.Scalar(true)}, tensor.Bool},
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "Dropout", Opset: c.opset, Outputs: 2}, c.in...)
		if err != nil {
			t.Fatalf("opset %d: %v", c.opset, err)
		}
		if out[0] != x || out[1].DType != c.mask || !slices.Equal(out[1].Shape, x.Shape) || !slices.Equal(out[1].Float64s(), []float64{1, 1, 1, 1}) {
			t.Errorf("opset %d: outputs %v %v", c.opset, out[0], out[1])
		}
		// Without the mask output, the input alone.
		out, err = run(t, "Dropout", c.opset, nil, c.in...)
		if err != nil || len(out) != 1 || out[0] != x {
			t.Errorf("opset %d without a mask: %v, %v", c.opset, out, err)
		}
	}
	h := tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2}))
	out, err := opstest.Run(t, opstest.Node{Op: "Dropout", Opset: 7, Outputs: 2}, h)
	if err != nil || out[1].DType != tensor.Float16 || !slices.Equal(out[1].Float64s(), []float64{1, 1}) {
		t.Errorf("FP16 mask at opset 7: %v, %v", out, err)
	}
	_, err = run(t, "Dropout", 22, nil, x, tensor.Scalar(float32(0.5)), tensor.Scalar(true))
	if !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("training mode: %v", err)
	}
	_, err = run(t, "Dropout", 22, nil, x, nil, tensor.Scalar(true))
	if !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("training mode, default ratio: %v", err)
	}
	for _, bad := range [][]*tensor.Tensor{
		{x, nil, tensor.Scalar(int32(1))},
		{x, tensor.From([]int{2}, []float32{0, 0}), tensor.Scalar(true)},
		{tensor.From([]int{1}, []int32{1})},
	} {
		if _, err := run(t, "Dropout", 22, nil, bad...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if _, err := run(t, "Dropout", 7, nil, tensor.From([]int{1}, []int32{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("INT32 at opset 7: %v", err)
	}
}

// TestDropoutTrainingRefusedAtLoad builds Dropout with training_mode
// true: refused at load when it and the ratio are known then (or the
// ratio absent), at run time when training_mode comes with the request.
func TestDropoutTrainingRefusedAtLoad(t *testing.T) {
	ratio, training := tensor.Scalar(float32(0.25)), tensor.Scalar(true)
	_, _, err := opstest.Compile(opstest.Node{Op: "Dropout", Opset: 22, Consts: []*tensor.Tensor{nil, ratio, training}}, 3)
	if !errors.Is(err, ops.ErrUnsupported) || !strings.Contains(err.Error(), "training mode with ratio 0.25") {
		t.Errorf("constant training_mode: %v", err)
	}
	// A ratio known only at run time leaves the check to the run.
	op, _, err := opstest.Compile(opstest.Node{Op: "Dropout", Opset: 22, Consts: []*tensor.Tensor{nil, nil, training}}, 3)
	if err != nil {
		t.Fatalf("training_mode known, ratio not: %v", err)
	}
	x, bg := tensor.From([]int{2}, []float32{1, 2}), ops.NewContext(context.Background(), nil, false)
	if _, err := op.Run(bg, []*tensor.Tensor{x, tensor.Scalar(float32(0)), training}); err != nil {
		t.Errorf("ratio 0 in training mode: %v", err)
	}
	op, _, err = opstest.Compile(opstest.Node{Op: "Dropout", Opset: 22, Consts: []*tensor.Tensor{nil, ratio}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for train, ok := range map[bool]bool{false: true, true: false} {
		_, err := op.Run(bg, []*tensor.Tensor{x, ratio, tensor.Scalar(train)})
		if (err == nil) != ok || err != nil && !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("training_mode %v: %v", train, err)
		}
	}
}
