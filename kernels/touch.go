package kernels

import "fmt"

// TouchRows brings the cache lines of a block of rows rows of cols values
// of c (row stride ld) into the cache ahead of a kernel that writes them,
// and changes nothing. A product's output block is written a panel at a
// time, row after row at the output's row stride: each write to a line
// not yet cached waits for it, and those strided misses defeat the
// hardware's prefetchers, which follow sequential streams within a page.
// A pass of independent loads over the block, row by row, keeps many
// misses in flight at once; the kernel's writes then hit. The vector
// tables load one value a line (in assembly, so the race detector sees
// no read of memory another core's kernel may be writing); this
// reference does nothing, as a Go pass would read the memory other
// goroutines write.
func TouchRows(c []float32, ld, rows, cols int) { CheckTouch(c, ld, rows, cols) }

// CheckTouch panics unless c holds rows rows of cols values at row stride
// ld (nothing to hold when rows or cols is 0), on c's length: the block
// may be another goroutine's to write while it is touched.
func CheckTouch(c []float32, ld, rows, cols int) {
	if rows > 0 && cols > 0 && (ld < cols || len(c) < (rows-1)*ld+cols) {
		panic(fmt.Sprintf("kernels: TouchRows of %d rows of %d values (row stride %d) in %d values", rows, cols, ld, len(c)))
	}
}
