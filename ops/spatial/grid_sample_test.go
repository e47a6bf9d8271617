package spatial

import (
	"errors"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestGridSamplePaddingAndErrors(t *testing.T) {
	x := seq(1, 1, 2, 2) // 1 2 / 3 4
	// the corner centres (align_corners) and a point past the right edge
	// (x = 2 in pixels, y = 0.5); border clamps it to x = 1: (2 + 4) / 2
	grid := tensor.From([]int{1, 1, 3, 2}, []float32{-1, -1, 1, 1, 3, 0})
	cases := []struct {
		padding string
		want    []float32
	}{
		{"zeros", []float32{1, 4, 0}},
		{"border", []float32{1, 4, 3}},
		{"reflection", []float32{1, 4, 2}}, // x = 2 reflects off 1 to 0, at y = 0.5: (1 + 3) / 2
	}
	for _, c := range cases {
		got, err := run(t, 16, "GridSample", ins(x, grid), opstest.AttrInt("align_corners", 1), opstest.AttrString("padding_mode", c.padding))
		check(t, got, err, []int{1, 1, 1, 3}, c.want)
	}
	// 5-D inputs need opset 20; the names changed there
	vol := seq(1, 1, 2, 2, 2)
	vgrid := tensor.From([]int{1, 1, 1, 1, 3}, []float32{-1, -1, -1})
	if _, err := run(t, 16, "GridSample", ins(vol, vgrid)); !errors.Is(err, ops.ErrInput) {
		t.Errorf("5-D at opset 16: %v", err)
	}
	got, err := run(t, 20, "GridSample", ins(vol, vgrid), opstest.AttrInt("align_corners", 1), opstest.AttrString("mode", "cubic"))
	check(t, got, err, []int{1, 1, 1, 1, 1}, []float32{1})
	if err := compile(20, "GridSample", 2, opstest.AttrString("mode", "bilinear")); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("bilinear at opset 20: %v", err)
	}
	for _, g := range []*tensor.Tensor{
		tensor.From([]int{1, 1, 3, 3}, make([]float32, 9)), // 3 coordinates for 2-D
		tensor.From([]int{2, 1, 1, 2}, make([]float32, 4)), // another batch
		tensor.From([]int{1, 1, 1, 2}, []int64{0, 0}),      // integer grid
		tensor.From([]int{1, 1, 2}, make([]float32, 2)),    // rank
	} {
		if _, err := run(t, 16, "GridSample", ins(x, g)); !errors.Is(err, ops.ErrInput) {
			t.Errorf("grid %v%v: %v", g.DType, g.Shape, err)
		}
	}
}
