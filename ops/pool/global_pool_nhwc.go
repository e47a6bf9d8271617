package pool

import (
	"sync"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.GlobalAveragePool and quantserve.GlobalMaxPool are the ONNX
// global pools over a channels-last image: float32 [N, spatial..., C]
// in, [N, C, 1...] out, as the ONNX operator gives for the same image in
// NCHW. The graph compiler's layout rule puts them where a fused
// convolution hands a channels-last value to a global pool (the squeeze
// of a squeeze-and-excitation block), so the value is not transposed for
// it.
//
// Each image's channels are summed on the engine's ColumnPoolSums kernel,
// every channel as the NCHW operator sums its plane (kernels.PoolSum), so
// the mean has the NCHW operator's bits; the maximum is MaxPair's, with
// the ONNX operator's bits.
var (
	GlobalAveragePoolNHWC = ops.Op{
		ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "GlobalAveragePool", Since: 1}, buildGlobalPoolNHWC("GlobalAveragePool")),
	}
	GlobalMaxPoolNHWC = ops.Op{
		ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "GlobalMaxPool", Since: 1}, buildGlobalPoolNHWC("GlobalMaxPool")),
	}
)

// nhwcSegmentValues is about how many values one task of the
// channels-last maximum covers (segmentRows).
const nhwcSegmentValues = 32768

// nhwcChannelChunk is how many channels one task of the channels-last
// maximum covers (a multiple of every table's vector width): most
// squeeze-and-excitation blocks' channels in one.
const nhwcChannelChunk = 256

// nhwcMeanChunk is how many channels one task of the channels-last mean
// covers, all of an image's rows: a few AVX-512 strips of eight
// (ColumnPoolSums), so that one image's channels split across cores.
const nhwcMeanChunk = 64

// globalPoolNHWC is a compiled channels-last global pool.
type globalPoolNHWC struct {
	op  string
	avg bool
}

func buildGlobalPoolNHWC(op string) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return &globalPoolNHWC{op: op, avg: op == "GlobalAveragePool"}, nil
	}
}

func (o *globalPoolNHWC) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.DType != tensor.Float32 {
		return nil, ops.InputErrorf("%s (channels-last) takes float32, got %v", o.op, x.DType)
	}
	if x.Rank() < 2 {
		return nil, ops.InputErrorf("%s takes an input of rank 2 or more (N, spatial..., C), got shape %v", o.op, x.Shape)
	}
	n, ch := x.Shape[0], x.Shape[x.Rank()-1]
	size := ops.ProdInts(x.Shape[1 : x.Rank()-1])
	if size == 0 && n*ch != 0 {
		return nil, ops.InputErrorf("%s over empty spatial dimensions (shape %v)", o.op, x.Shape)
	}
	r := c.NewSingle(x.Rank())
	out := r.Shape()
	for i := range out {
		out[i] = 1
	}
	out[0], out[1] = n, ch
	y := c.Float32Output(n * ch)
	if err := globalPoolChannelsLast(c, x.Data.([]float32), y, n, size, ch, o.avg); err != nil {
		return nil, err
	}
	return r.Float32s(y), nil
}

// globalPoolChannelsLast sets y[b·ch + j] to the mean (avg) or the
// maximum of channel j of image b of x (batch images of size rows of ch
// values), on c's engine's kernels. Tasks are an image's chunk of
// channels (a mean: over all its rows, as the NCHW operator sums a
// plane; a maximum: over a segment of rows, segmentRows), split across
// the engine's cores; the segments' maxima are then combined in order,
// so the bits depend on the shape alone, not on the split.
func globalPoolChannelsLast(c *ops.Context, x, y []float32, batch, size, ch int, avg bool) error {
	if batch == 0 || ch == 0 {
		return nil
	}
	tb := c.Engine().Table()
	if avg {
		chunks := (ch + nhwcMeanChunk - 1) / nhwcMeanChunk
		cost := size * min(ch, nhwcMeanChunk) * 2 * ops.VectorCost
		if ops.OneCore(batch*chunks, cost) { // a squeeze-and-excitation block's few thousand values
			channelMeans(tb, x, y, size, ch, chunks, 0, batch*chunks)
			return nil
		}
		return c.ParallelRows(batch*chunks, cost, func(t0, t1 int) {
			channelMeans(tb, x, y, size, ch, chunks, t0, t1)
		})
	}
	chunks := (ch + nhwcChannelChunk - 1) / nhwcChannelChunk
	seg := segmentRows(ch)
	segs := (size + seg - 1) / seg
	maxima := y
	if segs > 1 {
		maxima = c.Scratch(batch * segs * ch)
		defer c.Free(maxima)
	}
	cost := min(size, seg) * min(ch, nhwcChannelChunk) * ops.VectorCost
	err := c.ParallelRows(batch*chunks*segs, cost, func(t0, t1 int) {
		for t := t0; t < t1; t++ {
			b, k, sg := t/(chunks*segs), t/segs%chunks, t%segs
			c0, r0 := k*nhwcChannelChunk, sg*seg
			c1, r1 := min(c0+nhwcChannelChunk, ch), min(r0+seg, size)
			at := (b*segs+sg)*ch + c0
			channelMaxima(tb, maxima[at:at+c1-c0], x[(b*size+r0)*ch+c0:], r1-r0, ch)
		}
	})
	if err != nil || segs == 1 {
		return err
	}
	for b := 0; b < batch; b++ {
		dst := y[b*ch : (b+1)*ch]
		copy(dst, maxima[b*segs*ch:][:ch])
		for sg := 1; sg < segs; sg++ {
			tb.MaxPair(dst, dst, maxima[(b*segs+sg)*ch:][:ch])
		}
	}
	return nil
}

// meanSums holds one chunk's float64 sums of the channels-last mean,
// reused task to task and call to call.
var meanSums = sync.Pool{New: func() any { return new([nhwcMeanChunk]float64) }}

// channelMeans runs tasks [t0, t1) of the channels-last mean: task t is
// image t/chunks's chunk t%chunks of nhwcMeanChunk channels, summed on
// the table's ColumnPoolSums and divided into y.
func channelMeans(tb *dispatch.Table, x, y []float32, size, ch, chunks, t0, t1 int) {
	sums := meanSums.Get().(*[nhwcMeanChunk]float64)
	defer meanSums.Put(sums)
	for t := t0; t < t1; t++ {
		b, c0 := t/chunks, t%chunks*nhwcMeanChunk
		c1 := min(c0+nhwcMeanChunk, ch)
		s := sums[:c1-c0]
		tb.ColumnPoolSums(s, x[b*size*ch+c0:], size, ch)
		for j, v := range s {
			y[b*ch+c0+j] = float32(v / float64(size))
		}
	}
}

// segmentRows is how many rows one task of the channels-last maximum
// covers for ch channels: about nhwcSegmentValues values.
func segmentRows(ch int) int {
	return max(1, nhwcSegmentValues/ch)
}

// channelMaxima sets dst[j] to the maximum of channel j over the size
// rows of img (row stride ch), with Go's max's bits (tb.MaxPair), as the
// ONNX operator's plane maximum.
func channelMaxima(tb *dispatch.Table, dst, img []float32, size, ch int) {
	w := len(dst)
	copy(dst, img[:w])
	for r := 1; r < size; r++ {
		tb.MaxPair(dst, dst, img[r*ch:][:w])
	}
}
