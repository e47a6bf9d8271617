package conv

import (
	"sync"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// run runs tasks 0..n-1 of a convolution (tiles, planes, stripes: each
// writes a part of the output of its own) with c.ParallelFor, work being
// their cost in multiply-adds: spread over the engine's threads, products
// inside them on a one-core engine, when there is work enough for every
// core and at least two tasks per core; otherwise here in order, and
// products split across cores on their own. f is given the engine its
// products run on and a scratch of tile buffers, reused from task to
// task. run returns the first error a task returned, or the request's
// once it has ended.
func run(c *ops.Context, n, work int, f func(e *gemm.Engine, s *scratch, task int) error) error {
	l := taskLoops.Get().(*taskLoop)
	l.f = f
	err := c.ParallelFor(n, work, l.chunk)
	l.f = nil // the pool keeps no operands alive
	taskLoops.Put(l)
	return err
}

// taskLoop is run's loop, pooled with the method value ParallelFor is
// given: a closure over f was an allocation a convolution, and a small
// CNN's run makes dozens.
type taskLoop struct {
	f     func(e *gemm.Engine, s *scratch, task int) error
	chunk func(e *gemm.Engine, i0, i1 int) error // l.tasks
}

var taskLoops = sync.Pool{New: func() any {
	l := new(taskLoop)
	l.chunk = l.tasks
	return l
}}

// tasks runs tasks [i0, i1) with a scratch of their own.
func (l *taskLoop) tasks(e *gemm.Engine, i0, i1 int) error {
	s := getScratch()
	defer putScratch(s)
	for i := i0; i < i1; i++ {
		if err := l.f(e, s, i); err != nil {
			return err
		}
	}
	return nil
}

// scratch is the tile buffers of one run of tasks, reused from tile to
// tile and call to call.
type scratch struct {
	rows, out, part []float32
	pad             []float32 // a channels-last depthwise convolution's padded image (forwardNHWC)
	bytes           []uint8
	sbytes          []int8
	ints            []int32
	qrows           gemm.QRows
	fin             gemm.Finish // a product's finish (gemmFinishTo)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch  { return scratchPool.Get().(*scratch) }
func putScratch(s *scratch) { scratchPool.Put(s) }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// tileBudget bounds a tile's buffers (elements of its widest matrix).
const tileBudget = 1 << 15

// Costs of a convolution's passes beside its product, per value, in units
// of a float32 multiply-add on the kernels (gemm.MinParallelWork's unit),
// by which a small convolution, whose product is the least of its work,
// says what it costs as a whole.
const (
	// gatherCost is an im2col value gathered (or a plane's value copied
	// into its padded or phase-split copy): a scattered load and store.
	gatherCost = 4
	// quantizeCost is an activation value quantized for the int8 tiles
	// (its row's range, then the byte).
	quantizeCost = 2
	// blockCost is what a product's kernel block costs per value of C
	// it writes beside its multiply-adds (loading and storing its tile,
	// the calls): the product of a small convolution, whose K is tens,
	// runs at a fraction of the kernels' rate.
	blockCost = 32
	// finishCost is an output value finished (bias, activation,
	// residual) and moved into its layout.
	finishCost = 8
	// tapCost is a multiply-add of a depthwise convolution: taps run a
	// kernel row over an output row, a few values to a call.
	tapCost = 4
)

// minSplitTiles is the fewest tiles a convolution large enough to split
// across cores is cut into (while they keep minTileRows rows): units for
// two to four cores, each claiming two or more.
const (
	minSplitTiles = 8
	minTileRows   = 24
)

// splitTile returns the output positions per tile for tiles of at most
// tile positions over groups (image, group) pairs of size positions each:
// when work reaches gemm.MinParallelWork and the tiles would be too few to
// spread over cores, shorter ones, but never under minTileRows or off a
// multiple of 12 (whole row tiles of every table).
func splitTile(tile, size, groups, work int) int {
	if work < gemm.MinParallelWork || groups >= minSplitTiles {
		return tile
	}
	per := (minSplitTiles + groups - 1) / groups // tiles wanted per group
	t := (size + per - 1) / per
	t = (t + 11) / 12 * 12
	return max(min(t, tile), min(minTileRows, tile))
}

// tileRows returns the output positions per tile for rows of width w: a
// multiple of 12 (whole row tiles of every table) between 24 and 240.
func tileRows(w int) int {
	t := tileBudget / max(w, 1)
	return min(max(t/12*12, 24), 240)
}

// transposeTo writes dst (cols×rows) = srcᵀ for src rows×cols, in
// parallel stripes of columns when large, on the engine's kernels.
func transposeTo(c *ops.Context, dst, src []float32, rows, cols int) error {
	return transposeScaled(c, dst, src, rows, cols, nil)
}

// transposeCost is a value transposed (a strided load or store on the
// kernels): the cost by which a layout change splits. PaddleOCR's planes
// of 8 to 200 channels and a few hundred positions take 0.3 to 0.7 ns a
// value, about as much as 32 multiply-adds of a product.
const transposeCost = 32

// transposeScaled is transposeTo, then, with scale (nil, or rows
// values), each row of dst multiplied by it (ScaleRows, as Mul does) in
// the same stripe while it is in cache. The stripes are at most 256
// columns and, so that a plane of a few hundred positions splits too,
// at most an eighth of them (but not under 32).
func transposeScaled(c *ops.Context, dst, src []float32, rows, cols int, scale []float32) error {
	tb := c.Engine().Table()
	if rows == 1 || cols == 1 {
		copy(dst, src[:rows*cols])
		if scale != nil {
			tb.ScaleRows(dst[:rows*cols], scale[:rows])
		}
		return nil
	}
	stripe := min(256, max(32, (cols+7)/8))
	n := (cols + stripe - 1) / stripe
	work := rows * cols * transposeCost
	if scale != nil {
		work += rows * cols * ops.VectorCost
	}
	return run(c, n, work, func(_ *gemm.Engine, _ *scratch, i int) error {
		c0, c1 := i*stripe, min((i+1)*stripe, cols)
		tb.TransposeCols(dst, src, rows, cols, 0, c0, c1)
		if scale != nil {
			tb.ScaleRows(dst[c0*rows:c1*rows], scale[:rows])
		}
		return nil
	})
}

// channelsLast writes the image x (c×size) into dst (size×c).
func channelsLast(c *ops.Context, dst, x []float32, channels, size int) error {
	return transposeTo(c, dst, x, channels, size)
}

// transposeStrided writes dst[c·ldd + r] = src[r·lds + c] for r < rows,
// c < cols: a tile of rows (output positions) into channel planes, eight
// rows at a time on tb's kernels.
func transposeStrided(tb *dispatch.Table, dst []float32, ldd int, src []float32, lds, rows, cols int) {
	r := 0
	if cols > 0 {
		for ; r+8 <= rows; r += 8 {
			tb.Transpose8(dst[r:(cols-1)*ldd+r+8], src[r*lds:(r+7)*lds+cols], ldd, lds, cols)
		}
	}
	for ; r+4 <= rows; r += 4 {
		s0, s1, s2, s3 := src[r*lds:][:cols], src[(r+1)*lds:][:cols], src[(r+2)*lds:][:cols], src[(r+3)*lds:][:cols]
		for c := range s0 {
			d := dst[c*ldd+r : c*ldd+r+4 : c*ldd+r+4]
			d[0], d[1], d[2], d[3] = s0[c], s1[c], s2[c], s3[c]
		}
	}
	for ; r < rows; r++ {
		sr := src[r*lds:][:cols]
		for c, v := range sr {
			dst[c*ldd+r] = v
		}
	}
}

// fillBias sets each of the m channel planes of size values of y's batch
// images to its bias (zero without one).
func fillBias(y, bias []float32, batch, m, size int) {
	if bias == nil {
		clear(y)
		return
	}
	for b := 0; b < batch; b++ {
		for c := 0; c < m; c++ {
			dst := y[(b*m+c)*size : (b*m+c+1)*size]
			for i := range dst {
				dst[i] = bias[c]
			}
		}
	}
}

// addTo adds src to dst (len(dst) values).
func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// coldOutput is the layer output (bytes) from which a channels-last
// convolution touches each tile's output rows, and its residual rows,
// before the product writes them (dispatch.Table.TouchRows): such an
// output was last written layers ago and is out of a core's caches, and
// the product's panels, written down the rows at the output's row
// stride, each waited for their lines from memory. ResNet-50's first
// stage (3136 positions of 256 channels, 3.2 MB) ran its 1×1 layers at
// half their in-cache speed.
const coldOutput = 512 << 10

// nextRows returns what a tile's product draws toward the cache
// (gemm.Finish.Draw) in place of touching the next tile: values
// [from, to) of the channels-last output y and of its residual res (nil:
// none), which lies alike.
func nextRows(y, res []float32, from, to int) (draw [2][]float32) {
	draw[0] = y[from:to]
	if res != nil {
		draw[1] = res[from:to]
	}
	return draw
}

// touchTile touches n rows of cols values of y, and of res when it is not
// nil, both at row stride ld, unless the tile is a product the engine
// touches itself (gemm.TouchMin): once is enough.
func touchTile(tb *dispatch.Table, y, res []float32, n, cols, ld int) {
	if n*cols*4 >= gemm.TouchMin {
		return
	}
	tb.TouchRows(y, ld, n, cols)
	if res != nil {
		tb.TouchRows(res, ld, n, cols)
	}
}
