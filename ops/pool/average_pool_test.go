package pool

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkAveragePool is a 3×3 stride-1 average over 1×256×28×28 (an
// Inception-style pooling branch).
func BenchmarkAveragePool(b *testing.B) {
	s, _ := newSpec("AveragePool", "NOTSET", []int64{3, 3}, []int64{1, 1, 1, 1}, []int64{1, 1}, nil, false)
	g, _ := s.geometry([]int{1, 256, 28, 28})
	x := opstest.Normal(rand.New(rand.NewPCG(7, 7)), 1, 256, 28, 28).Data.([]float32)
	y := make([]float32, g.Planes()*g.OutSize())
	b.Run("2d", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			pool2D(x, y, g, poolAvg, nil)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			avgPoolND(x, y, g, false, nil)
		}
	})
}

// TestAveragePoolWholePlane: an AveragePool whose one window is the
// whole plane (a network's last pool) gives GlobalAveragePool's bits on
// every shape, with count_include_pad either way (there is no padding)
// and with ceil_mode, and the window-by-window reference's values within
// float32 rounding. A window one short of the plane, or padded, is not
// whole.
func TestAveragePoolWholePlane(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, shape := range [][]int{{1, 2048, 7, 7}, {2, 3, 1, 1}, {1, 5, 3, 40}, {3, 17, 9, 2}} {
		h, w := int64(shape[2]), int64(shape[3])
		x := opstest.Normal(r, shape...)
		want := opstest.Run1(t, opstest.Node{Op: "GlobalAveragePool", Opset: 22, Outputs: 1}, x)
		for _, attrs := range [][]*onnxpb.Attribute{
			{opstest.AttrInts("kernel_shape", h, w)},
			{opstest.AttrInts("kernel_shape", h, w), opstest.AttrInts("strides", 2, 2), opstest.AttrInt("ceil_mode", 1)},
			{opstest.AttrInts("kernel_shape", h, w), opstest.AttrInt("count_include_pad", 1)},
		} {
			got := opstest.Run1(t, opstest.Node{Op: "AveragePool", Opset: 22, Outputs: 1, Attrs: attrs}, x)
			if !slices.Equal(got.Shape, want.Shape) || !sameFloats(got.Data.([]float32), want.Data.([]float32)) {
				t.Fatalf("AveragePool %v over %v: not GlobalAveragePool's bits", attrs, shape)
			}
			s, _ := newSpec("AveragePool", "NOTSET", []int64{h, w}, []int64{0, 0, 0, 0}, []int64{1, 1}, nil, false)
			g, _ := s.geometry(shape)
			ref := make([]float32, g.Planes())
			if err := avgPoolND(x.Data.([]float32), ref, g, false, nil); err != nil {
				t.Fatal(err)
			}
			for i, v := range got.Data.([]float32) {
				if d := math.Abs(float64(v - ref[i])); d > 1e-6*math.Max(1, math.Abs(float64(ref[i]))) {
					t.Fatalf("AveragePool over %v: [%d] = %v, the reference %v", shape, i, v, ref[i])
				}
			}
		}
	}
	for _, c := range []struct {
		kernel, pads []int64
	}{{[]int64{6, 7}, []int64{0, 0, 0, 0}}, {[]int64{7, 7}, []int64{1, 0, 0, 0}}} {
		s, _ := newSpec("AveragePool", "NOTSET", c.kernel, c.pads, []int64{7, 7}, nil, false)
		if g, err := s.geometry([]int{1, 1, 7, 7}); err != nil || g.wholePlane() {
			t.Errorf("kernel %v pads %v over 7×7: whole plane %v (%v)", c.kernel, c.pads, err == nil && g.wholePlane(), err)
		}
	}
}

// BenchmarkAveragePoolWholePlane is ResNet-50's last pool, 7×7 over
// 1×2048×7×7, on one core.
func BenchmarkAveragePoolWholePlane(b *testing.B) {
	x := opstest.Normal(rand.New(rand.NewPCG(7, 7)), 1, 2048, 7, 7)
	op, err := compile(22, "AveragePool", 1, 1, opstest.AttrInts("kernel_shape", 7, 7))
	if err != nil {
		b.Fatal(err)
	}
	e := gemm.New(dispatch.Default(), 1)
	defer e.Close()
	oc := ops.NewContext(context.Background(), e, false)
	for b.Loop() {
		if _, err := op.Run(oc, []*tensor.Tensor{x}); err != nil {
			b.Fatal(err)
		}
	}
}
