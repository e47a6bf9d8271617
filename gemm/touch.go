package gemm

// TouchMin is the output (bytes) from which a product touches each row
// chunk's output lines, and its residual's, before its kernels write them
// (dispatch.Table.TouchRows): a smaller output, no larger than a core's
// second-level cache (1 MB on Zen 4 and 5, 1.25-2 MB on Xeons), is
// likely still cached, where the pass would be pure cost (the encoder's
// 128×1024 up-projections, 512 KB, and its packed Q, K and V, 384 KB,
// at batch 1). A caller that knows a smaller product writes into a cold
// output (a convolution's tile of a large layer) touches it itself, and
// only then. An int8 product writing over its residual touches nothing:
// its finish reads each of those lines before writing it, so a touch
// would only wait for lines coming anyway.
// touchChunkMax is the largest row chunk touched at once: its lines must
// stay in a core's second-level cache while the chunk's panel groups
// write them.
//
// A layer's output is most often a buffer last written a layer or more
// ago: in ResNet-50's first stage, 3136 rows of 256 values (3.2 MB), the
// kernels' writes of 16-column panels down the rows at a 1 KB stride
// each waited for a line from memory, and the layer ran at half its
// in-cache speed (3136×64×256 int8 into four rotating outputs: 1,063 µs
// untouched, 634 touched; float32 1,377 and 1,307).
const (
	TouchMin      = 1 << 20
	touchChunkMax = 512 << 10
)

// touches reports whether a product of m rows of n columns in row chunks
// of mc touches its chunks' output before writing them.
func touches(m, n, mc int) bool {
	return m*n*4 >= TouchMin && min(m, mc)*n*4 <= touchChunkMax
}

// touch loads the lines of rows m0..m1 of c (n columns, row stride ldc),
// and of fin's residual rows when it has them, on the table's TouchRows.
// No product touches an output that is its residual (newQJob; a float
// product refuses one).
func (e *Engine) touch(c []float32, ldc int, fin *Finish, m0, m1, n int) {
	e.t.TouchRows(c[m0*ldc:], ldc, m1-m0, n)
	if fin != nil && fin.Res != nil {
		e.t.TouchRows(fin.Res[m0*fin.LDR:], fin.LDR, m1-m0, n)
	}
}
