package pool

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
)

// BenchmarkMaxPoolStride2 is PaddleOCR's last pool: 200 planes of 2×96,
// 2×2 windows of stride 2, one output row a plane, on one core: ONNX's
// MaxPool over the planes (nchw), and quantserve's over the image
// channels-last (nhwc: the layout rule's choice when the convolution
// before it writes channels-last and only a global pool reads the pool),
// and so with its output transposed to NCHW (nhwc_to_nchw: when another
// operator reads it too).
func BenchmarkMaxPoolStride2(b *testing.B) {
	s, _ := newSpec("b", "NOTSET", []int64{2, 2}, []int64{0, 0, 0, 0}, []int64{2, 2}, nil, false)
	shape := []int{1, 200, 2, 96}
	g, _ := s.geometry(shape)
	x := opstest.Normal(rand.New(rand.NewPCG(1, 1)), shape...)
	xl := channelsLast(x).Data.([]float32)
	y := make([]float32, g.Planes()*g.OutSize())
	e := gemm.New(dispatch.Default(), 1)
	defer e.Close()
	oc := ops.NewContext(context.Background(), e, false)
	b.Run("nchw", func(b *testing.B) {
		for b.Loop() {
			pool2D(x.Data.([]float32), y, g, poolMax, oc)
		}
	})
	b.Run("nhwc", func(b *testing.B) {
		for b.Loop() {
			maxPoolChannelsLast(oc, xl, y, g)
		}
	})
	b.Run("nhwc_to_nchw", func(b *testing.B) {
		pooled := make([]float32, len(y))
		for b.Loop() {
			maxPoolChannelsLast(oc, xl, pooled, g)
			transposeImages(oc, y, pooled, 1, g.OutSize(), 200)
		}
	})
}
