package conv

import (
	"math/bits"
	"sync"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/tensor"
)

// Channels-last (NHWC) values, which only fused convolutions read and
// write, and the buffers that hold them.

// nchwShape and nhwcShape move the channel axis.
func nchwShape(s []int) []int { return nchwShapeTo(make([]int, 0, len(s)), s) }

func nhwcShape(s []int) []int { return nhwcShapeTo(make([]int, 0, len(s)), s) }

// nchwShapeTo appends nchwShape(s) to dst (a caller's own array, most
// often, so that the shape costs no allocation).
func nchwShapeTo(dst, s []int) []int {
	if len(s) < 2 {
		return append(dst, s...)
	}
	dst = append(dst, s[0], s[len(s)-1])
	return append(dst, s[1:len(s)-1]...)
}

// nhwcShapeTo appends nhwcShape(s) to dst.
func nhwcShapeTo(dst, s []int) []int {
	if len(s) < 2 {
		return append(dst, s...)
	}
	dst = append(dst, s[0])
	dst = append(dst, s[2:]...)
	return append(dst, s[1])
}

// toNCHW returns a channels-last tensor in NCHW.
func toNCHW(t *tensor.Tensor) *tensor.Tensor {
	shape := nchwShape(t.Shape)
	src := t.Data.([]float32)
	dst := make([]float32, len(src))
	if len(shape) >= 2 && len(src) > 0 {
		n, c := shape[0], shape[1]
		size := len(src) / max(n*c, 1)
		for b := 0; b < n; b++ {
			kernels.TransposeCols(dst[b*c*size:], src[b*c*size:(b+1)*c*size], size, c, 0, 0, c)
		}
	}
	return &tensor.Tensor{DType: t.DType, Shape: shape, Data: dst}
}

// nhwcInto writes NCHW values src (batch×c×size) channels-last into dst.
func nhwcInto(dst, src []float32, batch, c, size int) {
	for b := 0; b < batch; b++ {
		kernels.TransposeCols(dst[b*c*size:], src[b*c*size:(b+1)*c*size], c, size, 0, 0, size)
	}
}

// channelScale reports whether s scales the channels of image x (NCHW):
// s broadcasts to x without changing x's shape, and is 1 along every
// spatial axis.
func channelScale(s, x *tensor.Tensor) bool {
	if x.Rank() < 3 || s.Rank() > x.Rank() {
		return false
	}
	off := x.Rank() - s.Rank()
	for i, d := range s.Shape {
		switch ax := i + off; {
		case d == 1:
		case ax < 2 && d == x.Shape[ax]:
		default:
			return false
		}
	}
	return true
}

// expandScale returns channel scale s (channelScale) of an image of shape
// xs as xs[0]×xs[1] values.
func expandScale(s *tensor.Tensor, xs []int) []float32 {
	n, c := xs[0], xs[1]
	off := len(xs) - s.Rank() // s's axis j is the image's axis j+off
	dn, dc := 1, 1
	if off <= 0 {
		dn = s.Shape[-off]
	}
	if off <= 1 {
		dc = s.Shape[1-off]
	}
	// Every other axis of s is 1: value (i, j) is at (i mod dn)·dc + j
	// mod dc, dc being c or 1 (copied or repeated: a squeeze-and-excite
	// block's scale, per image, runs every few steps).
	sv := s.Data.([]float32)
	if dn == n && dc == c { // laid out as the scale of every image and channel already: read as it is
		return sv[: n*c : n*c]
	}
	out := make([]float32, n*c)
	for i := 0; i < n; i++ {
		src, dst := sv[i%dn*dc:][:dc], out[i*c:(i+1)*c]
		switch dc {
		case c:
			copy(dst, src)
		case 1:
			for j := range dst {
				dst[j] = src[0]
			}
		default:
			for j := range dst {
				dst[j] = src[j%dc]
			}
		}
	}
	return out
}

// Values in pooled buffers are recycled by their last reader, through
// pools by size class: sizes above 1,024 round up to one of eight steps
// per power of two (at most 12.5% more than asked), so few classes serve
// every shape and batch. Unlike scratch (ops.Context.Scratch), they are a
// fused convolution's outputs, and outlive its Run.
var bufPools [64 * 8]sync.Pool

// bufClass returns the class of a buffer of n values and its size.
func bufClass(n int) (int, int) {
	if n <= 1024 {
		return 0, 1024
	}
	e := bits.Len(uint(n - 1)) // 2^(e-1) < n <= 2^e
	step := 1 << (e - 3)
	sub := (n + step - 1) / step // 5..8
	return e*8 + sub - 1, sub * step
}

// getBuf returns n values of undefined content.
func getBuf(n int) []float32 {
	class, size := bufClass(n)
	if class >= len(bufPools) {
		return make([]float32, n)
	}
	if v := bufPools[class].Get(); v != nil {
		h := v.(*[]float32)
		b := (*h)[:n]
		*h = nil
		bufHeaders.Put(h)
		return b
	}
	return make([]float32, n, size)
}

// putBuf recycles a buffer getBuf returned.
func putBuf(b []float32) {
	class, size := bufClass(cap(b))
	if class >= len(bufPools) || size != cap(b) {
		return // not one of ours
	}
	h := bufHeaders.Get().(*[]float32)
	*h = b[:cap(b)]
	bufPools[class].Put(h)
}

// bufHeaders recycles the slice headers bufPools hold, so that putting a
// buffer back allocates nothing.
var bufHeaders = sync.Pool{New: func() any { return new([]float32) }}
