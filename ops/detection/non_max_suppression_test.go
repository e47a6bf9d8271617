package detection_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	_ "github.com/quantserve/quantserve/ops/detection"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

var nms = opstest.Node{Op: "NonMaxSuppression", Opset: 11}

// The suppress-by-IOU example of the ONNX specification: corner boxes, at
// most three per class, overlap 0.5, scores above 0.
func TestNonMaxSuppressionByIOU(t *testing.T) {
	boxes := tensor.From([]int{1, 6, 4}, []float32{
		0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, -0.1, 1, 0.9,
		0, 10, 1, 11, 0, 10.1, 1, 11.1, 0, 100, 1, 101})
	scores := tensor.From([]int{1, 1, 6}, []float32{0.9, 0.75, 0.6, 0.95, 0.5, 0.3})
	out, err := opstest.Run(t, nms, boxes, scores,
		tensor.Scalar(int64(3)), tensor.Scalar(float32(0.5)), tensor.Scalar(float32(0)))
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 0, 3, 0, 0, 0, 0, 0, 5}
	if got := out[0]; !slices.Equal(got.Shape, []int{3, 3}) || !slices.Equal(got.Data.([]int64), want) {
		t.Errorf("selected %v, want %v", got, want)
	}
	// The same boxes given by center and size select the same.
	center := tensor.From([]int{1, 6, 4}, []float32{
		0.5, 0.5, 1, 1, 0.5, 0.6, 1, 1, 0.5, 0.4, 1, 1,
		0.5, 10.5, 1, 1, 0.5, 10.6, 1, 1, 0.5, 100.5, 1, 1})
	cn := nms
	cn.Attrs = []*onnxpb.Attribute{{Name: "center_point_box", Type: onnxpb.AttrInt, I: 1}}
	out, err = opstest.Run(t, cn, center, scores,
		tensor.Scalar(int64(3)), tensor.Scalar(float32(0.5)), tensor.Scalar(float32(0)))
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0]; !slices.Equal(got.Data.([]int64), want) {
		t.Errorf("center boxes selected %v, want %v", got, want)
	}
}

func TestNonMaxSuppressionBadShapes(t *testing.T) {
	boxes := tensor.From([]int{1, 2, 4}, make([]float32, 8))
	scores := tensor.From([]int{1, 1, 3}, make([]float32, 3))
	if _, err := opstest.Run(t, nms, boxes, scores); !errors.Is(err, ops.ErrInput) {
		t.Errorf("mismatched box counts: %v", err)
	}
}

func TestNonMaxSuppressionBadAttribute(t *testing.T) {
	n := nms
	n.Attrs = []*onnxpb.Attribute{{Name: "center_point_box", Type: onnxpb.AttrInt, I: 2}}
	if _, _, err := opstest.Compile(n, 2); err == nil || err.Error() != "center_point_box 2 is not 0 or 1" {
		t.Errorf("center_point_box 2: got %v", err)
	}
}

// A cancelled request stops the operator.
func TestNonMaxSuppressionCancelled(t *testing.T) {
	op, _, err := opstest.Compile(nms, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	boxes := tensor.From([]int{1, 2, 4}, make([]float32, 8))
	scores := tensor.From([]int{1, 1, 2}, make([]float32, 2))
	_, err = op.Run(ops.NewContext(ctx, gemm.Default(), false), []*tensor.Tensor{boxes, scores, tensor.Scalar(int64(2))})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
