//go:build gc && !purego

package amd64

import (
	"unsafe"

	"github.com/quantserve/quantserve/kernels"
)

//go:noescape
func touchRows(p *float32, ld, rows, bytes int)

// TouchRows is kernels.TouchRows: one load from each cache line of rows
// rows of cols values of c (row stride ld), the values dropped. Its
// bounds are checked on c's length, not by indexing c: other goroutines
// may be writing the block (a product's other panel groups), and an
// indexed read would be one the race detector sees.
func TouchRows(c []float32, ld, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	kernels.CheckTouch(c, ld, rows, cols)
	touchRows(unsafe.SliceData(c), ld, rows, cols*4)
}
