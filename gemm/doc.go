// Package gemm runs quantserve's matrix products on the kernel table that
// package dispatch chose: it packs weights, quantizes activations per row,
// blocks products for the caches, splits them over a bounded pool of
// worker goroutines, and calls the table's block kernels. dispatch picks
// tables; gemm runs products.
//
// # Weights
//
// PackQ packs int8 weights (quant.Weights, any scheme) once, at load;
// PackF packs float32 weights. Both are immutable and shared by every
// engine and every table: the layout (panels of 16 columns, K in groups of
// 4) is the same for all of them.
//
// # Products
//
//	e := gemm.New(dispatch.Default(), runtime.GOMAXPROCS(0)) // or gemm.Default()
//	defer e.Close()                 // stops the workers
//	err := e.QMatMul(a, m, qw, c)   // c (m×N) = a (m×K) · W, int8 kernels
//	err = e.MatMul(a, m, fw, c)     // float32 kernels
//
// An engine's workers run until Close; an engine used after Close still
// computes the same products, on its caller's goroutine alone. Default's
// engine is shared by the process and never closed.
//
// A product with no rows (m = 0), no columns or K = 0 writes zeros or
// nothing and returns nil. A panic inside a kernel (a broken invariant) is
// recovered on whichever worker ran it and returned as a *PanicError: it
// never takes the process down.
//
// # Rows the caller builds
//
// A convolution builds the rows of its implicit GEMM itself (an im2col
// tile of the input image) and wants them quantized per row and multiplied
// into part of a larger output, without copies. QRows serves that:
//
//	var rows gemm.QRows                                   // reuse across tiles
//	err := e.QuantizeRows(&rows, tile, m, k, ldTile)      // m rows of k, row stride ldTile
//	err = e.QMatMulRows(&rows, qw, out[off:], ldOut)      // row i at out[off+i*ldOut:]
//
// QuantizeRows reads tile in place (any row stride ≥ k) and reuses
// rows's buffers; QMatMulRows writes N values per row at the caller's row
// stride, so a tile's outputs land directly in the output image. A caller
// that quantizes as it gathers (no float tile at all) fills the bytes
// itself: PrepareRows hands out the rows' memory, SetRowRange sets a row's
// parameters from its range (as QuantizeRows would), SetStatic sets
// static ones, and QuantizeStatic quantizes a whole image once with them.
//
// # Loops split across the workers
//
// An operator whose work is a loop of independent units (a convolution's
// tiles of output positions) spreads it over the same workers with
// Parallel: the caller and the workers claim chunks of units until none
// is left, each from its own contiguous part of the units first (so
// consecutive loops give a core the same part of the data), each chunk's products running on Serial, the engine's one-core
// twin, so they never wait on the workers the chunks occupy.
//
//	err := e.Parallel(tiles, macs, func(pe *gemm.Engine, t0, t1 int) error {
//		return pe.MatMulStrided(...) // for tiles t0..t1-1
//	})
//
// # Exactness
//
// Activations are quantized per row to unsigned bytes in [0, 127] with a
// zero point of their own (quant.RowParams), which every table's int32
// arithmetic multiplies exactly; the epilogue's float32 operations run in
// the reference's order, so every table returns the same bits for the
// same product. Blocking along K keeps int32 partial sums, so it changes
// no result either.
package gemm
