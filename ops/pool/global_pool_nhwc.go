package pool

import (
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
// Each image's rows of C channels are summed (or their maximum taken) a
// row at a time on the engine's row kernels: the average adds blocks of
// nhwcSumBlock rows in float32 (AddBias, two rows a call; a few rows
// side by side as one when C is small), nhwcSumBlock blocks' sums in
// float32, each of those in float64 within segments of rows
// (segmentRows), and the segments' sums in order; the maximum is MaxPair's, with the ONNX operator's bits.
var (
	GlobalAveragePoolNHWC = ops.Op{
		ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "GlobalAveragePool", Since: 1}, buildGlobalPoolNHWC("GlobalAveragePool")),
	}
	GlobalMaxPoolNHWC = ops.Op{
		ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "GlobalMaxPool", Since: 1}, buildGlobalPoolNHWC("GlobalMaxPool")),
	}
)

// nhwcSumBlock is how many rows the channels-last average adds in
// float32 at a time (one copied, then two a call), and how many such
// blocks' sums before it adds theirs to its float64 sums.
const nhwcSumBlock = 9

// nhwcSegmentValues is about how many values one task of the
// channels-last pools covers (segmentRows).
const nhwcSegmentValues = 32768

// nhwcChannelChunk is how many channels one task of the channels-last
// pools covers (a multiple of every table's vector width): most
// squeeze-and-excitation blocks' channels in one, so that each row is
// one kernel call.
const nhwcChannelChunk = 256

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
	out := make([]int, x.Rank())
	for i := range out {
		out[i] = 1
	}
	out[0], out[1] = n, ch
	y := c.Float32Output(n * ch)
	if err := globalPoolChannelsLast(c, x.Data.([]float32), y, n, size, ch, o.avg); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Float32, Shape: out, Data: y}}, nil
}

// globalPoolChannelsLast sets y[b·ch + j] to the mean (avg) or the
// maximum of channel j of image b of x (batch images of size rows of ch
// values), on c's engine's kernels. Tasks are an image's chunk of
// channels over a segment of rows (segmentRows), split across the
// engine's cores; the segments' sums (or maxima) are then combined in
// order, so the bits depend on the shape alone, not on the split.
func globalPoolChannelsLast(c *ops.Context, x, y []float32, batch, size, ch int, avg bool) error {
	if batch == 0 || ch == 0 {
		return nil
	}
	tb := c.Engine().Table()
	chunks := (ch + nhwcChannelChunk - 1) / nhwcChannelChunk
	seg := segmentRows(ch)
	segs := (size + seg - 1) / seg
	var sums []float64 // each segment's sums: batch×segs×ch (more than one segment)
	var maxima []float32
	switch {
	case avg && segs > 1:
		sums = make([]float64, batch*segs*ch)
	case avg:
	case segs > 1:
		maxima = c.Scratch(batch * segs * ch)
		defer c.Free(maxima)
	default:
		maxima = y
	}
	cost := min(size, seg) * min(ch, nhwcChannelChunk) * 2 * ops.VectorCost
	err := c.ParallelRows(batch*chunks*segs, cost, func(t0, t1 int) {
		part := c.Scratch(2 * nhwcChannelChunk)
		defer c.Free(part)
		for t := t0; t < t1; t++ {
			b, k, sg := t/(chunks*segs), t/segs%chunks, t%segs
			c0, r0 := k*nhwcChannelChunk, sg*seg
			c1, r1 := min(c0+nhwcChannelChunk, ch), min(r0+seg, size)
			img := x[(b*size+r0)*ch : (b*size+r1)*ch]
			at := (b*segs+sg)*ch + c0
			switch {
			case avg && segs == 1: // the means at once
				var acc [nhwcChannelChunk]float64
				channelSums(tb, acc[:c1-c0], part, img, r1-r0, ch, c0)
				for j, v := range acc[:c1-c0] {
					y[at+j] = float32(v / float64(size))
				}
			case avg:
				channelSums(tb, sums[at:at+c1-c0], part, img, r1-r0, ch, c0)
			default:
				channelMaxima(tb, maxima[at:at+c1-c0], img, r1-r0, ch, c0)
			}
		}
	})
	if err != nil {
		return err
	}
	for b := 0; b < batch; b++ {
		dst := y[b*ch : (b+1)*ch]
		if avg && segs > 1 {
			acc := sums[b*segs*ch:][:ch]
			for sg := 1; sg < segs; sg++ {
				for j, v := range sums[(b*segs+sg)*ch:][:ch] {
					acc[j] += v
				}
			}
			for j := range dst {
				dst[j] = float32(acc[j] / float64(size))
			}
		} else if segs > 1 {
			copy(dst, maxima[b*segs*ch:][:ch])
			for sg := 1; sg < segs; sg++ {
				tb.MaxPair(dst, dst, maxima[(b*segs+sg)*ch:][:ch])
			}
		}
	}
	return nil
}

// rowsSideBySide is how many rows of ch channels the average adds at
// once, as one row of their values: as many as nhwcChannelChunk holds
// (1 when ch takes more than one chunk).
func rowsSideBySide(ch int) int {
	return max(1, nhwcChannelChunk/ch)
}

// segmentRows is how many rows one task of the channels-last pools
// covers for ch channels: about nhwcSegmentValues values, whole blocks
// of nhwcSumBlock rows side by side.
func segmentRows(ch int) int {
	unit := rowsSideBySide(ch) * nhwcSumBlock
	return max(1, nhwcSegmentValues/ch/unit) * unit
}

// channelSums adds to acc[j] the sum of channel c0+j over the rows rows
// of ch values of img (len(acc) <= nhwcChannelChunk). When acc covers
// every channel, k = rowsSideBySide(ch) rows side by side are one lane
// row of k·ch values (the last one maybe shorter); otherwise a lane row
// is a row's chunk of channels. nhwcSumBlock lane rows at a time are
// added in float32 (tb.AddBias, two a call), then nhwcSumBlock such
// blocks' sums in float32, each of those sums in float64 lane by lane,
// and at the end the k lanes of each channel in order. part holds two
// lane rows of nhwcChannelChunk values.
func channelSums(tb *dispatch.Table, acc []float64, part, img []float32, rows, ch, c0 int) {
	w := len(acc)
	k := 1
	if w == ch {
		k = rowsSideBySide(ch)
	}
	lane := k * w
	n := len(img)
	laneRow := func(s int) []float32 {
		if k == 1 {
			return img[s*ch+c0:][:w]
		}
		return img[s*lane : min((s+1)*lane, n)]
	}
	var lanes [nhwcChannelChunk]float64
	p, q := part[:lane], part[nhwcChannelChunk:][:lane]
	count := (rows + k - 1) / k
	for s0 := 0; s0 < count; s0 += nhwcSumBlock {
		s1 := min(s0+nhwcSumBlock, count)
		first := laneRow(s0)
		copy(p, first)
		clear(p[len(first):])
		for s := s0 + 1; s < s1; {
			a := laneRow(s)
			if s+1 < s1 {
				if b := laneRow(s + 1); len(a) == lane && len(b) == lane { // (p + a) + b
					tb.AddBias(p, a, b)
					s += 2
					continue
				}
			}
			tb.AddBias(p[:len(a)], a, nil)
			s++
		}
		// A block's sums add into q; every nhwcSumBlock blocks, and at
		// the end, q into the float64 lanes.
		switch block := s0 / nhwcSumBlock % nhwcSumBlock; {
		case block == 0:
			copy(q, p)
		default:
			tb.AddBias(q, p, nil)
		}
		if s0/nhwcSumBlock%nhwcSumBlock == nhwcSumBlock-1 || s1 == count {
			for i, v := range q {
				lanes[i] += float64(v)
			}
		}
	}
	for j := range acc {
		t := acc[j]
		for i := 0; i < k; i++ {
			t += lanes[i*w+j]
		}
		acc[j] = t
	}
}

// channelMaxima sets dst[j] to the maximum of channel c0+j over the size
// rows of ch values of img, with Go's max's bits (tb.MaxPair), as the
// ONNX operator's plane maximum.
func channelMaxima(tb *dispatch.Table, dst, img []float32, size, ch, c0 int) {
	w := len(dst)
	copy(dst, img[c0:][:w])
	for r := 1; r < size; r++ {
		tb.MaxPair(dst, dst, img[r*ch+c0:][:w])
	}
}
