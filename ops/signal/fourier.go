package signal

import (
	"math"
	"math/bits"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// maxDFTLength bounds dft_length, frame lengths and window sizes: a
// transform of this size is already far beyond any audio front end.
const maxDFTLength = 1 << 24

// fourier transforms length-n complex vectors: radix-2 FFT when n is a
// power of two, a direct DFT over a table of the n roots of unity
// otherwise. One fourier serves one run of an operator.
type fourier struct {
	n        int
	cos, sin []float64 // cos(2πk/n), sin(2πk/n)
	tre, tim []float64 // scratch for the direct DFT
}

func newFourier(n int) *fourier {
	f := &fourier{n: n, cos: make([]float64, n), sin: make([]float64, n)}
	for k := range n {
		s, c := math.Sincos(2 * math.Pi * float64(k) / float64(n))
		f.cos[k], f.sin[k] = c, s
	}
	return f
}

// transform replaces (re, im) by its DFT (forward: e^{-2πikn/N}) or its
// normalised inverse. It stops with the request's error once the request
// ends.
func (f *fourier) transform(c *ops.Context, re, im []float64, inverse bool) error {
	n := f.n
	if err := c.Tick(n); err != nil {
		return err
	}
	sign := -1.0
	if inverse {
		sign = 1
	}
	if n&(n-1) == 0 {
		// bit-reversal permutation, then butterflies
		shift := 64 - bits.Len(uint(n)) + 1
		for i := 1; i < n; i++ {
			j := int(bits.Reverse64(uint64(i)) >> shift)
			if i < j {
				re[i], re[j] = re[j], re[i]
				im[i], im[j] = im[j], im[i]
			}
		}
		for size := 2; size <= n; size <<= 1 {
			if err := c.Tick(n / 2); err != nil {
				return err
			}
			step := n / size
			for start := 0; start < n; start += size {
				for k := 0; k < size/2; k++ {
					wr, wi := f.cos[k*step], sign*f.sin[k*step]
					a, b := start+k, start+k+size/2
					tr := re[b]*wr - im[b]*wi
					ti := re[b]*wi + im[b]*wr
					re[b], im[b] = re[a]-tr, im[a]-ti
					re[a], im[a] = re[a]+tr, im[a]+ti
				}
			}
		}
	} else {
		if f.tre == nil {
			f.tre, f.tim = make([]float64, n), make([]float64, n)
		}
		for k := 0; k < n; k++ {
			if err := c.Tick(n); err != nil {
				return err
			}
			var sr, si float64
			idx := 0 // k·t mod n
			for t := 0; t < n; t++ {
				wr, wi := f.cos[idx], sign*f.sin[idx]
				sr += re[t]*wr - im[t]*wi
				si += re[t]*wi + im[t]*wr
				if idx += k; idx >= n {
					idx -= n
				}
			}
			f.tre[k], f.tim[k] = sr, si
		}
		copy(re, f.tre)
		copy(im, f.tim)
	}
	if inverse {
		for k := range re {
			re[k] /= float64(n)
			im[k] /= float64(n)
		}
	}
	return nil
}

// floatValues returns a floating-point tensor's values as float64.
func floatValues(x *tensor.Tensor) []float64 {
	if d, ok := x.Data.([]float64); ok {
		return d
	}
	return x.Float64s()
}

// floatTensor rounds float64 values once to the floating-point type dt.
func floatTensor(dt tensor.DataType, shape []int, v []float64) *tensor.Tensor {
	return &tensor.Tensor{DType: dt, Shape: shape, Data: ops.RoundFloat64s(v, dt)}
}
