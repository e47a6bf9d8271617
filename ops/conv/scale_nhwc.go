package conv

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// A squeeze-and-excitation block's scaled convolution reading its image
// channels-last: the channel scale multiplies each pixel's vector of
// channels (ScaleRows, as Mul does), and the product reads the scaled
// image as any channels-last input, with no transpose.

// scaleNHWC returns the channels-last image x ([N, spatial..., C]) times
// xs as Mul gives it, channels-last. When xs is a channel scale of the
// image (channelScale of x's NCHW shape), each pixel's channels are
// multiplied by its image's scale: in x itself when own, otherwise into
// a pooled buffer. Any other xs multiplies through NCHW, as Mul does,
// and the product is laid out channels-last again. tmp reports whether
// the result is a pooled buffer of its own, which the caller returns
// (putBuf) once nothing reads it.
func scaleNHWC(c *ops.Context, x, xs *tensor.Tensor, own bool) (y *tensor.Tensor, tmp bool, err error) {
	shape := nchwShape(x.Shape)
	if img := (&tensor.Tensor{DType: x.DType, Shape: shape}); channelScale(xs, img) {
		n, ch := shape[0], shape[1]
		size := ops.ProdInts(shape[2:])
		src := x.Data.([]float32)
		dst := src
		if !own {
			dst = getBuf(len(src))
		}
		if err := scaleChannelsLast(c, dst, src, expandScale(xs, shape), n, size, ch); err != nil {
			if !own {
				putBuf(dst)
			}
			return nil, false, err
		}
		return &tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: dst}, !own, nil
	}
	p, err := arith.MulTensors(toNCHW(x), xs)
	if err != nil {
		return nil, false, err
	}
	if p.Rank() < 3 {
		return p, false, nil // no image: the convolution refuses it
	}
	pv := p.Data.([]float32)
	out := getBuf(len(pv))
	n, ch := p.Shape[0], p.Shape[1]
	nhwcInto(out, pv, n, ch, len(pv)/max(n*ch, 1))
	return &tensor.Tensor{DType: tensor.Float32, Shape: nhwcShape(p.Shape), Data: out}, true, nil
}

// scaleChannelsLast sets dst = src with each of the size rows of ch
// channels of image b multiplied by scale[b·ch : (b+1)·ch] (ScaleRows);
// dst may be src. Rows split across c's engine's cores.
func scaleChannelsLast(c *ops.Context, dst, src, scale []float32, batch, size, ch int) error {
	if batch == 0 || size == 0 || ch == 0 {
		return nil
	}
	tb := c.Engine().Table()
	same := &dst[0] == &src[0]
	return c.ParallelRows(batch*size, 2*ch*ops.VectorCost, func(r0, r1 int) {
		for r0 < r1 {
			b := r0 / size
			end := min(r1, (b+1)*size)
			d := dst[r0*ch : end*ch]
			if !same {
				copy(d, src[r0*ch:end*ch])
			}
			tb.ScaleRows(d, scale[b*ch:(b+1)*ch])
			r0 = end
		}
	})
}
