//go:build amd64 && gc && !purego

package amd64

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// BenchmarkDepthwiseGrid runs one output row of PaddleOCR's depthwise
// layers (96 pixels; their channels, and 208 for 200 padded to 16)
// through the row kernels and through the grid kernels, the same
// problem, and reports GOP/s (two operations a multiply-add).
func BenchmarkDepthwiseGrid(b *testing.B) {
	avx512 := cpuid.CPU.Supports(cpuid.AVX512F)
	for _, l := range []struct{ ch, k int }{{16, 3}, {24, 3}, {32, 3}, {88, 5}, {96, 5}, {200, 5}, {208, 5}} {
		const ow = 96
		cols := ow + l.k - 1
		r := rand.New(rand.NewPCG(1, 2))
		src := make([]float32, l.k*cols*l.ch)
		for i := range src {
			src[i] = r.Float32()
		}
		w := make([]float32, l.k*l.k*l.ch)
		for i := range w {
			w[i] = r.Float32()
		}
		var offs []int
		for y := range l.k {
			for x := range l.k {
				offs = append(offs, (y*cols+x)*l.ch)
			}
		}
		dst := make([]float32, ow*l.ch)
		macs := float64(len(dst) * len(offs))
		run := func(name string, f func()) {
			b.Run(fmt.Sprintf("c%d_k%d/%s", l.ch, l.k, name), func(b *testing.B) {
				for b.Loop() {
					f()
				}
				b.ReportMetric(2*macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
		run("rows_avx2", func() { depthwiseRows(depthwiseRowsAVX2, dst, src, w, offs, l.ch, l.ch) })
		run("grid_avx2", func() { DepthwiseRowsAVX2(dst, src, w, offs, l.ch, l.ch) })
		if avx512 {
			if l.ch%16 == 0 { // the row kernel's vectors are whole
				run("rows_avx512", func() { depthwiseRows(depthwiseRowsAVX512, dst, src, w, offs, l.ch, l.ch) })
			}
			run("grid_avx512", func() { DepthwiseRowsAVX512(dst, src, w, offs, l.ch, l.ch) })
		}
	}
}
