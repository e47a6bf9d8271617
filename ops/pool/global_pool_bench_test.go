package pool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkGlobalAveragePoolNHWC runs the channels-last mean over the
// squeeze-and-excitation blocks' images of PaddleOCR's classifier (a few
// thousand values each: a step's fixed costs weigh as much as its sums)
// and one ResNet-sized image, on the default engine.
func BenchmarkGlobalAveragePoolNHWC(b *testing.B) {
	e := gemm.Default()
	c := ops.NewContext(context.Background(), e, false)
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][]int{{1, 3, 12, 200}, {1, 6, 24, 88}, {1, 12, 48, 16}, {1, 7, 7, 2048}} {
		x := tensor.From(sh, make([]float32, ops.ProdInts(sh)))
		for i, v := range x.Data.([]float32) {
			x.Data.([]float32)[i] = v + r.Float32()
		}
		op := &globalPoolNHWC{op: "GlobalAveragePool", avg: true}
		in := []*tensor.Tensor{x}
		b.Run(fmt.Sprint(sh), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := op.Run(c, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
