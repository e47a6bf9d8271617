package conv

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
)

// BenchmarkQGatherRows makes every im2col row of ResNet-50's 3×3
// convolutions (and a stride-2 1×1 one) ready for the int8 product:
// gathered as floats and quantized row by row ("gather"), or quantized
// from the image ("image"), with per-row and with static parameters.
func BenchmarkQGatherRows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	static, _ := gemm.StaticActivations(-1, 4)
	for _, c := range []struct {
		name string
		c    qgatherCase
	}{
		{"3x3c64", qgatherCase{x: []int{1, 64, 56, 56}, w: []int{64, 64, 3, 3}, group: 1, pads: []int64{1, 1, 1, 1}}},
		{"3x3c256", qgatherCase{x: []int{1, 256, 14, 14}, w: []int{256, 256, 3, 3}, group: 1, pads: []int64{1, 1, 1, 1}}},
		{"1x1s2c512", qgatherCase{x: []int{1, 512, 28, 28}, w: []int{1024, 512, 1, 1}, group: 1, strides: []int64{2, 2}}},
	} {
		g := c.c.geometry(b)
		xt := randomFloats(r, c.c.x)
		cw, err := prepareWeights(randomFloats(r, c.c.w), c.c.w, 1, false, true, quant.PerChannel)
		if err != nil {
			b.Fatal(err)
		}
		e := gemm.New(gemm.Default().Table(), 1)
		oc := ops.NewContext(context.Background(), e, false)
		taps := tapsOf(g)
		const tile = 48
		for _, act := range []*gemm.Activations{nil, static} {
			cw.act = act
			mode := "dynamic"
			if act != nil {
				mode = "static"
			}
			b.Run(c.name+"/"+mode+"/gather", func(b *testing.B) {
				b.SetBytes(int64(g.OutSize() * cw.k)) // the bytes made
				b.ReportAllocs()
				var q gemm.QRows
				rows := make([]float32, tile*cw.k)
				for b.Loop() {
					for p0 := 0; p0 < g.OutSize(); p0 += tile {
						n := min(tile, g.OutSize()-p0)
						taps.gatherRows(rows, xt, 0, p0, n)
						if err := e.QuantizeRowsAs(&q, rows, n, cw.k, cw.k, act); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
			b.Run(c.name+"/"+mode+"/image", func(b *testing.B) {
				b.SetBytes(int64(g.OutSize() * cw.k))
				b.ReportAllocs()
				var q gemm.QRows
				for b.Loop() {
					qi, err := cw.qimageOf(oc, g, taps, xt, false)
					if err != nil || qi == nil {
						b.Fatal(err)
					}
					for p0 := 0; p0 < g.OutSize(); p0 += tile {
						if err := qi.rows(e.Table(), &q, 0, 0, p0, min(tile, g.OutSize()-p0)); err != nil {
							b.Fatal(err)
						}
					}
					qi.free()
				}
			})
		}
		e.Close()
	}
}
