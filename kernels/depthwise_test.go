package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDepthwiseRowsDefinition: DepthwiseRows is a channels-last depthwise
// convolution's taps over a zero-padded image. On a 5×7 image of 3
// channels, padded by one on every side, a 3×3 kernel with stride 1 and
// 2 gives, at each output pixel, the sum (in float64) of its nine taps
// over the image, the padding's reading zero: within the stated
// rounding. DepthwiseRowsCols leaves the channels below c0 as they were
// and gives DepthwiseRows's bits on the others.
func TestDepthwiseRowsDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const h, w, ch, k = 5, 7, 3, 3
	img := make([]float32, h*w*ch)
	for i := range img {
		img[i] = float32(r.NormFloat64())
	}
	wp := w + 2
	pad := make([]float32, (h+2)*wp*ch)
	for y := 0; y < h; y++ {
		copy(pad[((y+1)*wp+1)*ch:], img[y*w*ch:(y+1)*w*ch])
	}
	wt := make([]float32, k*k*ch)
	for i := range wt {
		wt[i] = float32(r.NormFloat64())
	}
	var offs []int
	for ky := 0; ky < k; ky++ {
		for kx := 0; kx < k; kx++ {
			offs = append(offs, (ky*wp+kx)*ch)
		}
	}
	for _, stride := range []int{1, 2} {
		oh, ow := (h-1)/stride+1, (w-1)/stride+1
		for oy := 0; oy < oh; oy++ {
			row := make([]float32, ow*ch)
			for i := range row {
				row[i] = float32(i) / 8
			}
			init := slices.Clone(row)
			DepthwiseRows(row, pad[oy*stride*wp*ch:], wt, offs, stride*ch, ch)
			for ox := 0; ox < ow; ox++ {
				for c := 0; c < ch; c++ {
					want, mag := float64(init[ox*ch+c]), math.Abs(float64(init[ox*ch+c]))
					for ky := 0; ky < k; ky++ {
						for kx := 0; kx < k; kx++ {
							iy, ix := oy*stride+ky-1, ox*stride+kx-1
							if iy < 0 || iy >= h || ix < 0 || ix >= w {
								continue
							}
							v := float64(wt[(ky*k+kx)*ch+c]) * float64(img[(iy*w+ix)*ch+c])
							want += v
							mag += math.Abs(v)
						}
					}
					got := row[ox*ch+c]
					if d := math.Abs(float64(got) - want); !(d <= 1e-6*mag+1e-7) {
						t.Fatalf("stride %d: pixel (%d, %d) channel %d = %v, want %v", stride, oy, ox, c, got, want)
					}
				}
			}
			cols := slices.Clone(init)
			DepthwiseRowsCols(cols, pad[oy*stride*wp*ch:], wt, offs, stride*ch, ch, 1)
			for i := range cols {
				want := row[i]
				if i%ch < 1 {
					want = init[i]
				}
				if math.Float32bits(cols[i]) != math.Float32bits(want) {
					t.Fatalf("stride %d: DepthwiseRowsCols from channel 1: [%d] = %v, want %v", stride, i, cols[i], want)
				}
			}
		}
	}
}
