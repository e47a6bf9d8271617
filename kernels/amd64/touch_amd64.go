//go:build gc && !purego

package amd64

//go:noescape
func touchRows(p *float32, ld, rows, bytes int)

// TouchRows is kernels.TouchRows: one load from each cache line of rows
// rows of cols values of c (row stride ld), the values dropped.
func TouchRows(c []float32, ld, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	_ = c[(rows-1)*ld+cols-1]
	touchRows(&c[0], ld, rows, cols*4)
}
