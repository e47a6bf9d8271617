package dispatch

import (
	"fmt"
	"testing"
)

// BenchmarkColumnPoolSums sums the channels of PaddleOCR's squeeze-and-
// excitation pools (channels × positions) on every table.
func BenchmarkColumnPoolSums(b *testing.B) {
	for _, sh := range [][2]int{{8, 1152}, {32, 288}, {88, 288}, {200, 192}} {
		w, rows := sh[0], sh[1]
		x := make([]float32, w*rows)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		acc := make([]float64, w)
		for _, tb := range Available() {
			b.Run(fmt.Sprintf("%s/%dx%d", tb.Name, w, rows), func(b *testing.B) {
				for b.Loop() {
					tb.ColumnPoolSums(acc, x, rows, w)
				}
				b.ReportMetric(float64(w*rows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gval/s")
			})
		}
	}
}
