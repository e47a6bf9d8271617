package pool

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestRoiAlignOnARamp samples X[h, w] = w: bilinear interpolation of a
// linear function is exact, so each avg bin is the mean x of its sample
// points, which the test computes itself, for both coordinate modes and
// the opset-10 default (no half-pixel shift).
func TestRoiAlignOnARamp(t *testing.T) {
	const H, W = 6, 8
	x := make([]float32, H*W)
	for h := 0; h < H; h++ {
		for w := 0; w < W; w++ {
			x[h*W+w] = float32(w)
		}
	}
	X := tensor.From([]int{1, 1, H, W}, x)
	rois := tensor.From([]int{1, 4}, []float32{1, 1, 5, 4}) // x1, y1, x2, y2
	for _, c := range []struct {
		opset int64
		attrs []*onnxpb.Attribute
		shift float64
	}{
		{10, nil, 0},
		{16, nil, 0.5},
		{22, []*onnxpb.Attribute{opstest.AttrString("coordinate_transformation_mode", "output_half_pixel")}, 0},
	} {
		attrs := append([]*onnxpb.Attribute{opstest.AttrInt("output_height", 1), opstest.AttrInt("output_width", 2), opstest.AttrInt("sampling_ratio", 2)}, c.attrs...)
		m, err := compile(c.opset, "RoiAlign", 3, 1, attrs...)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Run(opstest.Background(), []*tensor.Tensor{X, rois, tensor.From([]int{1}, []int64{0})})
		if err != nil {
			t.Fatal(err)
		}
		y := res[0].Data.([]float32)
		x0, bw := 1-c.shift, 4.0/2
		for pw := 0; pw < 2; pw++ {
			// samples at x0 + pw·bw + (ix+0.5)·bw/2, ix = 0, 1
			want := x0 + float64(pw)*bw + bw/2
			if math.Abs(float64(y[pw])-want) > 1e-5 {
				t.Errorf("opset %d %v: bin %d = %v, want %v", c.opset, c.attrs, pw, y[pw], want)
			}
		}
	}
	// max mode, in the ONNX reference's definition: the largest weighted
	// corner of any sample.
	m, err := compile(22, "RoiAlign", 3, 1, opstest.AttrString("mode", "max"), opstest.AttrInt("sampling_ratio", 1), opstest.AttrString("coordinate_transformation_mode", "output_half_pixel"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Run(opstest.Background(), []*tensor.Tensor{X, tensor.From([]int{1, 4}, []float32{2, 0, 3, 1}), tensor.From([]int{1}, []int64{0})})
	if err != nil {
		t.Fatal(err)
	}
	// One sample at (0.5, 2.5): corners x=2 and x=3, weights 0.25 each.
	if got := res[0].Data.([]float32)[0]; got != 0.75 {
		t.Errorf("max mode = %v, want 0.75", got)
	}
	// Bad inputs; an adaptive sampling grid grows with the ROI, so huge
	// ROIs are refused rather than sampled for hours.
	adaptive, err := compile(22, "RoiAlign", 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rois  []float32
		batch int64
		want  string
	}{
		{[]float32{0, 0, 1, 1}, 1, "batch index 1"},
		{[]float32{0, 0, float32(math.NaN()), 1}, 0, "not finite"},
		{[]float32{0, 0, 1e30, 1e30}, 0, "sampling grid"},
		{[]float32{0, 0, 3e5, 3e5}, 0, "bilinear samples"},
	} {
		_, err := adaptive.Run(opstest.Background(), []*tensor.Tensor{X, tensor.From([]int{1, 4}, c.rois), tensor.From([]int{1}, []int64{c.batch})})
		if !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rois %v batch %d: %v, want an input error with %q", c.rois, c.batch, err, c.want)
		}
	}
}
