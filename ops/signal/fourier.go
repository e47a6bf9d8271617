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

// maxDirect is the longest length (not a power of two) transformed by
// the direct DFT: its n² products cost less than Bluestein's two
// power-of-two transforms of at least 2n-1 points up to about here.
const maxDirect = 48

// fourier transforms length-n complex vectors in float64: radix-2 FFT
// when n is a power of two; otherwise a direct DFT over a table of the n
// roots of unity for short lengths, and Bluestein's chirp-z transform
// (as ONNX Runtime computes it) for the rest, a convolution done with a
// radix-2 FFT of m >= 2n-1 points. One fourier serves one run of an
// operator; every step looks at the request as it goes (c.Tick), so a
// transform stops once the request ends.
type fourier struct {
	n int

	// fft is the radix-2 transform: of length n, or Bluestein's of m.
	fft *radix2

	// The direct DFT: the roots cos(2πk/n), sin(2πk/n), and scratch.
	cos, sin []float64
	tre, tim []float64

	// Bluestein: the chirp w[k] = e^{-iπk²/n} (k < n), the transform of
	// its conjugate wrapped around m points, scaled by 1/m (exactly: m
	// is a power of two), and the work vector of m points.
	wr, wi []float64
	br, bi []float64
	ar, ai []float64
}

// fourierBytes bounds the memory a transform of n points works in: its
// (re, im) vectors, and for Bluestein's a radix-2 plan of m < 4n points,
// the chirp and its transform, and the work vector: 5m + 4n doubles.
func fourierBytes(n int) int64 { return 8 * 24 * int64(n) }

// newFourier prepares the transform of length n.
func newFourier(c *ops.Context, n int) (*fourier, error) {
	f := &fourier{n: n}
	var err error
	switch {
	case n&(n-1) == 0:
		f.fft, err = newRadix2(c, n)
	case n <= maxDirect:
		f.cos, f.sin = make([]float64, n), make([]float64, n)
		for k := range n {
			f.sin[k], f.cos[k] = math.Sincos(2 * math.Pi * float64(k) / float64(n))
		}
		f.tre, f.tim = make([]float64, n), make([]float64, n)
	default:
		err = f.bluestein(c)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// bluestein prepares the chirp-z transform of f.n points.
func (f *fourier) bluestein(c *ops.Context) error {
	n := f.n
	m := 1 << bits.Len(uint(2*n-2)) // the least power of two >= 2n-1
	var err error
	if f.fft, err = newRadix2(c, m); err != nil {
		return err
	}
	f.wr, f.wi = make([]float64, n), make([]float64, n)
	twoN := uint64(2 * n)
	err = c.InPieces(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			// e^{-iπk²/n}, the exponent reduced mod 2n exactly in
			// integers so that the angle keeps its precision.
			r := uint64(k) * uint64(k) % twoN
			s, co := math.Sincos(math.Pi * float64(r) / float64(n))
			f.wr[k], f.wi[k] = co, -s
		}
	})
	if err != nil {
		return err
	}
	f.br, f.bi = make([]float64, m), make([]float64, m)
	f.br[0], f.bi[0] = f.wr[0], -f.wi[0]
	for k := 1; k < n; k++ {
		f.br[k], f.bi[k] = f.wr[k], -f.wi[k]
		f.br[m-k], f.bi[m-k] = f.wr[k], -f.wi[k]
	}
	if err := f.fft.transform(c, f.br, f.bi, -1); err != nil {
		return err
	}
	scale := 1 / float64(m)
	err = c.InPieces(m, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			f.br[k] *= scale
			f.bi[k] *= scale
		}
	})
	f.ar, f.ai = make([]float64, m), make([]float64, m)
	return err
}

// transform replaces (re, im), of length n, by its DFT (forward:
// e^{-2πikt/n}) or its normalised inverse. It stops with the request's
// error once the request ends.
func (f *fourier) transform(c *ops.Context, re, im []float64, inverse bool) error {
	n := f.n
	re, im = re[:n], im[:n]
	sign := -1.0
	if inverse {
		sign = 1
	}
	var err error
	switch {
	case f.wr != nil:
		err = f.chirpZ(c, re, im, inverse)
	case f.fft != nil:
		err = f.fft.transform(c, re, im, sign)
	default:
		err = f.direct(c, re, im, sign)
	}
	if err != nil || !inverse {
		return err
	}
	return c.InPieces(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			re[k] /= float64(n)
			im[k] /= float64(n)
		}
	})
}

// direct computes the DFT by its definition, over the table of roots.
func (f *fourier) direct(c *ops.Context, re, im []float64, sign float64) error {
	n := f.n
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
	return nil
}

// chirpZ computes the unnormalised DFT by Bluestein's identity
// kt = (k² + t² - (k-t)²)/2: X[k] = w[k]·Σ_t (x[t]·w[t])·conj(w[k-t]), a
// convolution with the conjugate chirp done by FFT. The inverse is the
// conjugate of the forward transform of the conjugate.
func (f *fourier) chirpZ(c *ops.Context, re, im []float64, inverse bool) error {
	n, m := f.n, len(f.ar)
	conj := 1.0
	if inverse {
		conj = -1
	}
	ar, ai, wr, wi := f.ar, f.ai, f.wr, f.wi
	err := c.InPieces(m, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			if k >= n {
				ar[k], ai[k] = 0, 0
				continue
			}
			xr, xi := re[k], conj*im[k]
			ar[k], ai[k] = xr*wr[k]-xi*wi[k], xr*wi[k]+xi*wr[k]
		}
	})
	if err != nil {
		return err
	}
	if err := f.fft.transform(c, ar, ai, -1); err != nil {
		return err
	}
	br, bi := f.br, f.bi
	err = c.InPieces(m, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			xr, xi := ar[k], ai[k]
			ar[k], ai[k] = xr*br[k]-xi*bi[k], xr*bi[k]+xi*br[k]
		}
	})
	if err != nil {
		return err
	}
	if err := f.fft.transform(c, ar, ai, 1); err != nil {
		return err
	}
	return c.InPieces(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			xr, xi := ar[k], ai[k]
			re[k], im[k] = xr*wr[k]-xi*wi[k], conj*(xr*wi[k]+xi*wr[k])
		}
	})
}

// radix2 is the iterative radix-2 FFT of n points, n a power of two.
type radix2 struct {
	n        int
	cos, sin []float64 // cos(2πk/n), sin(2πk/n), k < n/2
}

func newRadix2(c *ops.Context, n int) (*radix2, error) {
	f := &radix2{n: n, cos: make([]float64, n/2), sin: make([]float64, n/2)}
	err := c.InPieces(n/2, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			f.sin[k], f.cos[k] = math.Sincos(2 * math.Pi * float64(k) / float64(n))
		}
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// transform replaces (re, im) by its unnormalised transform with
// e^{sign·2πikt/n}: the bit-reversal permutation, then log₂ n passes of
// butterflies.
func (f *radix2) transform(c *ops.Context, re, im []float64, sign float64) error {
	n := f.n
	re, im = re[:n], im[:n]
	shift := 64 - bits.Len(uint(n)) + 1
	err := c.InPieces(n, func(lo, hi int) {
		for i := max(lo, 1); i < hi; i++ {
			j := int(bits.Reverse64(uint64(i)) >> shift)
			if i < j {
				re[i], re[j] = re[j], re[i]
				im[i], im[j] = im[j], im[i]
			}
		}
	})
	if err != nil {
		return err
	}
	cos, sin := f.cos, f.sin
	for size := 2; size <= n; size <<= 1 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			// Each look at the request covers at most ops.TickEvery
			// butterflies, or one group of them.
			for k0 := 0; k0 < half; k0 += ops.TickEvery {
				k1 := min(k0+ops.TickEvery, half)
				if err := c.Tick(k1 - k0); err != nil {
					return err
				}
				for k := k0; k < k1; k++ {
					wr, wi := cos[k*step], sign*sin[k*step]
					a, b := start+k, start+k+half
					tr := re[b]*wr - im[b]*wi
					ti := re[b]*wi + im[b]*wr
					re[b], im[b] = re[a]-tr, im[a]-ti
					re[a], im[a] = re[a]+tr, im[a]+ti
				}
			}
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
