package model

import (
	"math"
	"math/bits"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Signal processing: Fourier transforms and the windows and filter banks
// speech front ends build from them. Values are computed in float64 and
// rounded once to the output type.

func init() {
	register(Descriptor{Type: "DFT", Since: 17, Until: 19, Fold: true}, buildDFT17)
	register(Descriptor{Type: "DFT", Since: 20, Fold: true}, buildDFT)
	register(Descriptor{Type: "STFT", Since: 17, Fold: true}, buildSTFT)
	register(Descriptor{Type: "HannWindow", Since: 17, Fold: true}, windowBuilder(0.5, 0.5, 0))
	register(Descriptor{Type: "HammingWindow", Since: 17, Fold: true}, windowBuilder(25.0/46, 1-25.0/46, 0))
	register(Descriptor{Type: "BlackmanWindow", Since: 17, Fold: true}, windowBuilder(0.42, 0.5, 0.08))
	register(Descriptor{Type: "MelWeightMatrix", Since: 17, Fold: true}, buildMelWeightMatrix)
}

// DFTAttrs are DFT's attributes from opset 20 (the axis is an input).
type DFTAttrs struct {
	Inverse  bool `onnx:"inverse"`
	OneSided bool `onnx:"onesided"`
}

// DFT17Attrs are DFT's attributes in opsets 17–19.
type DFT17Attrs struct {
	Axis     int64 `onnx:"axis" default:"1"`
	Inverse  bool  `onnx:"inverse"`
	OneSided bool  `onnx:"onesided"`
}

func buildDFT17(n *node, at *DFT17Attrs) (opFunc, error) {
	if err := n.checkArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return dftOp(in[0], optionalInput(in, 1), at.Axis, at.Inverse, at.OneSided)
	}, nil
}

func buildDFT(n *node, at *DFTAttrs) (opFunc, error) {
	if err := n.checkArity(1, 3, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		axis := int64(-2)
		if a := optionalInput(in, 2); a != nil {
			v, err := scalarInt(a, "axis")
			if err != nil {
				return nil, err
			}
			axis = v
		}
		return dftOp(in[0], optionalInput(in, 1), axis, at.Inverse, at.OneSided)
	}, nil
}

// maxDFTLength bounds dft_length and frame lengths: a transform of this
// size is already far beyond any audio front end.
const maxDFTLength = 1 << 24

func dftOp(x, length *tensor.Tensor, axis int64, inverse, onesided bool) ([]*tensor.Tensor, error) {
	if !x.DType.IsFloat() {
		return nil, inputErrorf("DFT takes a floating-point signal, got %v", x.DType)
	}
	r := x.Rank()
	if r < 2 || (x.Shape[r-1] != 1 && x.Shape[r-1] != 2) {
		return nil, inputErrorf("DFT takes a signal whose last axis holds 1 (real) or 2 (complex) values, got %s", tensor.ShapeString(x.Shape))
	}
	if axis < 0 {
		axis += int64(r)
	}
	if axis < 0 || axis > int64(r-2) {
		return nil, inputErrorf("DFT axis must not be the last (complex) axis of rank %d", r)
	}
	a := int(axis)
	complexIn := x.Shape[r-1] == 2
	dim := x.Shape[a]
	n := dim
	if inverse && onesided {
		n = 2 * (dim - 1)
	}
	if length != nil {
		l, err := scalarInt(length, "dft_length")
		if err != nil {
			return nil, err
		}
		if l < 1 || l > maxDFTLength {
			return nil, inputErrorf("dft_length %d is outside [1, %d]", l, maxDFTLength)
		}
		n = int(l)
	}
	if n < 1 {
		return nil, inputErrorf("DFT of length %d", n)
	}
	if onesided && !inverse && complexIn {
		return nil, inputErrorf("a one-sided forward DFT takes a real signal")
	}
	if onesided && inverse && !complexIn {
		return nil, inputErrorf("a one-sided inverse DFT takes a complex spectrum")
	}
	outBins, outComps := n, 2
	switch {
	case onesided && !inverse:
		outBins = n/2 + 1
	case onesided && inverse:
		outComps = 1
	}
	outShape := append([]int(nil), x.Shape...)
	outShape[a], outShape[r-1] = outBins, outComps
	total, err := tensor.NumElements(outShape)
	if err != nil {
		return nil, inputErrorf("DFT output %s: %v", tensor.ShapeString(outShape), err)
	}
	xv := floatValues(x)
	outer, inner := 1, 1
	for _, d := range x.Shape[:a] {
		outer *= d
	}
	for _, d := range x.Shape[a+1 : r-1] {
		inner *= d
	}
	comps := x.Shape[r-1]
	out := make([]float64, total)
	re, im := make([]float64, n), make([]float64, n)
	f := newFourier(n)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			clear(re)
			clear(im)
			at := func(k int) int { return ((o*dim+k)*inner + j) * comps }
			if onesided && inverse {
				// Rebuild the full spectrum from its non-redundant half.
				for k := 0; k < dim && k <= n/2; k++ {
					re[k], im[k] = xv[at(k)], xv[at(k)+1]
					if k > 0 && k < n-k {
						re[n-k], im[n-k] = re[k], -im[k]
					}
				}
			} else {
				for k := 0; k < min(dim, n); k++ {
					re[k] = xv[at(k)]
					if complexIn {
						im[k] = xv[at(k)+1]
					}
				}
			}
			f.transform(re, im, inverse)
			for k := 0; k < outBins; k++ {
				p := ((o*outBins+k)*inner + j) * outComps
				out[p] = re[k]
				if outComps == 2 {
					out[p+1] = im[k]
				}
			}
		}
	}
	return []*tensor.Tensor{floatTensor(x.DType, outShape, out)}, nil
}

// floatValues returns a floating-point tensor's values as float64.
func floatValues(x *tensor.Tensor) []float64 {
	if d, ok := x.Data.([]float64); ok {
		return d
	}
	return x.Float64s()
}

// floatTensor rounds float64 values once to a floating-point type.
func floatTensor(dt tensor.DataType, shape []int, v []float64) *tensor.Tensor {
	var data any
	switch dt {
	case tensor.Float64:
		data = v
	case tensor.Float16:
		h := make([]tensor.F16, len(v))
		for i, x := range v {
			h[i] = tensor.F16FromFloat64(x)
		}
		data = h
	case tensor.BFloat16:
		h := make([]tensor.BF16, len(v))
		for i, x := range v {
			h[i] = tensor.BF16FromFloat64(x)
		}
		data = h
	default:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		data = f
	}
	return &tensor.Tensor{DType: dt, Shape: shape, Data: data}
}

// fourier transforms length-n complex vectors: radix-2 FFT when n is a
// power of two, a direct DFT over a table of the n roots of unity
// otherwise.
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
// normalised inverse.
func (f *fourier) transform(re, im []float64, inverse bool) {
	n := f.n
	sign := -1.0
	if inverse {
		sign = 1
	}
	if n&(n-1) == 0 {
		// bit-reversal permutation, then butterflies
		shift := 64 - bits.Len(uint(n)) + 1
		for i := 1; i < n; i++ {
			j := int(bits.Reverse64(uint64(i)) >> shift)
			if n == 1 {
				break
			}
			if i < j {
				re[i], re[j] = re[j], re[i]
				im[i], im[j] = im[j], im[i]
			}
		}
		for size := 2; size <= n; size <<= 1 {
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
			var sr, si float64
			for t := 0; t < n; t++ {
				idx := k * t % n
				wr, wi := f.cos[idx], sign*f.sin[idx]
				sr += re[t]*wr - im[t]*wi
				si += re[t]*wi + im[t]*wr
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
}

// STFTAttrs are STFT's attributes.
type STFTAttrs struct {
	OneSided bool `onnx:"onesided" default:"true"`
}

func buildSTFT(n *node, at *STFTAttrs) (opFunc, error) {
	if err := n.checkArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, window, length := in[0], optionalInput(in, 2), optionalInput(in, 3)
		if !x.DType.IsFloat() || x.Rank() != 3 || (x.Shape[2] != 1 && x.Shape[2] != 2) {
			return nil, inputErrorf("STFT takes a float signal [batch, length, 1 or 2], got %v%s", x.DType, tensor.ShapeString(x.Shape))
		}
		step, err := scalarInt(in[1], "frame_step")
		if err != nil {
			return nil, err
		}
		batch, sigLen, comps := x.Shape[0], x.Shape[1], x.Shape[2]
		frameLen := sigLen
		var w []float64
		if window != nil {
			if window.Rank() != 1 || !window.DType.IsFloat() {
				return nil, inputErrorf("STFT window must be a 1-D float tensor")
			}
			w = floatValues(window)
			frameLen = len(w)
		}
		if length != nil {
			l, err := scalarInt(length, "frame_length")
			if err != nil {
				return nil, err
			}
			if l < 1 || l > maxDFTLength {
				return nil, inputErrorf("frame_length %d is outside [1, %d]", l, maxDFTLength)
			}
			frameLen = int(l)
		}
		if w == nil {
			w = make([]float64, frameLen)
			for i := range w {
				w[i] = 1
			}
		}
		if step < 1 || frameLen < 1 || frameLen > sigLen {
			return nil, inputErrorf("STFT frame_step %d and frame length %d do not fit a signal of %d samples", step, frameLen, sigLen)
		}
		if at.OneSided && comps == 2 {
			return nil, inputErrorf("a one-sided STFT takes a real signal")
		}
		frames := 1 + (sigLen-frameLen)/int(step)
		bins := frameLen
		if at.OneSided {
			bins = frameLen/2 + 1
		}
		outShape := []int{batch, frames, bins, 2}
		total, err := tensor.NumElements(outShape)
		if err != nil {
			return nil, inputErrorf("STFT output %s: %v", tensor.ShapeString(outShape), err)
		}
		xv := floatValues(x)
		out := make([]float64, total)
		re, im := make([]float64, frameLen), make([]float64, frameLen)
		f := newFourier(frameLen)
		for b := 0; b < batch; b++ {
			for fr := 0; fr < frames; fr++ {
				clear(re)
				clear(im)
				begin := fr * int(step)
				for k := 0; k < min(len(w), frameLen) && begin+k < sigLen; k++ {
					p := (b*sigLen + begin + k) * comps
					re[k] = xv[p] * w[k]
					if comps == 2 {
						im[k] = xv[p+1] * w[k]
					}
				}
				f.transform(re, im, false)
				for k := 0; k < bins; k++ {
					p := ((b*frames+fr)*bins + k) * 2
					out[p], out[p+1] = re[k], im[k]
				}
			}
		}
		return []*tensor.Tensor{floatTensor(x.DType, outShape, out)}, nil
	}, nil
}

// WindowAttrs are the attributes of HannWindow, HammingWindow and
// BlackmanWindow.
type WindowAttrs struct {
	OutputDType int64 `onnx:"output_datatype" default:"1"`
	Periodic    bool  `onnx:"periodic" default:"true"`
}

// windowBuilder builds the generalised cosine window
// a0 - a1·cos(2πn/N) + a2·cos(4πn/N), N = size (periodic) or size-1.
func windowBuilder(a0, a1, a2 float64) func(n *node, at *WindowAttrs) (opFunc, error) {
	return func(n *node, at *WindowAttrs) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		dt, err := DataTypeFromONNX(onnxpb.DataType(at.OutputDType))
		if err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			size, err := scalarInt(in[0], "size")
			if err != nil {
				return nil, err
			}
			if size < 0 || size > maxDFTLength {
				return nil, inputErrorf("window size %d is outside [0, %d]", size, maxDFTLength)
			}
			den := float64(size)
			if !at.Periodic {
				den = float64(size - 1)
			}
			w := make([]float64, size)
			for i := range w {
				x := 2 * math.Pi * float64(i) / den
				w[i] = a0 - a1*math.Cos(x) + a2*math.Cos(2*x)
			}
			t, err := castTo(tensor.From([]int{int(size)}, w), dt)
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{t}, nil
		}, nil
	}
}

// MelWeightMatrixAttrs are MelWeightMatrix's attributes.
type MelWeightMatrixAttrs struct {
	OutputDType int64 `onnx:"output_datatype" default:"1"`
}

// buildMelWeightMatrix implements MelWeightMatrix as ONNX's reference
// computes it: num_mel_bins triangles with peak 1 over the one-sided DFT
// bins, edges equally spaced on the mel scale.
func buildMelWeightMatrix(n *node, at *MelWeightMatrixAttrs) (opFunc, error) {
	if err := n.checkArity(5, 5, 1, 1); err != nil {
		return nil, err
	}
	dt, err := DataTypeFromONNX(onnxpb.DataType(at.OutputDType))
	if err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var iv [3]int64
		for i, name := range []string{"num_mel_bins", "dft_length", "sample_rate"} {
			v, err := scalarInt(in[i], name)
			if err != nil {
				return nil, err
			}
			iv[i] = v
		}
		mels, dftLen, rate := iv[0], iv[1], iv[2]
		lo, hi := in[3].Float64s(), in[4].Float64s()
		if len(lo) != 1 || len(hi) != 1 || !in[3].DType.IsFloat() || !in[4].DType.IsFloat() {
			return nil, inputErrorf("lower_edge_hertz and upper_edge_hertz must be float scalars")
		}
		if mels < 1 || dftLen < 1 || rate < 1 || mels > maxDFTLength || dftLen > maxDFTLength {
			return nil, inputErrorf("MelWeightMatrix needs positive num_mel_bins, dft_length and sample_rate")
		}
		bins := int(dftLen/2 + 1)
		shape := []int{bins, int(mels)}
		total, err := tensor.NumElements(shape)
		if err != nil {
			return nil, inputErrorf("MelWeightMatrix %s: %v", tensor.ShapeString(shape), err)
		}
		lowMel := 2595 * math.Log10(1+lo[0]/700)
		highMel := 2595 * math.Log10(1+hi[0]/700)
		step := (highMel - lowMel) / float64(mels+2)
		edge := make([]int, mels+2)
		for i := range edge {
			hz := 700 * (math.Pow(10, (float64(i)*step+lowMel)/2595) - 1)
			edge[i] = int(math.Floor(float64(dftLen+1) * hz / float64(rate)))
		}
		out := make([]float64, total)
		set := func(j, i int, v float64) error {
			if j < 0 || j >= bins {
				return inputErrorf("mel band %d reaches bin %d, outside the %d DFT bins", i, j, bins)
			}
			out[j*int(mels)+i] = v
			return nil
		}
		for i := 0; i < int(mels); i++ {
			l, c, h := edge[i], edge[i+1], edge[i+2]
			if c == l {
				if err := set(c, i, 1); err != nil {
					return nil, err
				}
			} else {
				for j := l; j <= c; j++ {
					if err := set(j, i, float64(j-l)/float64(c-l)); err != nil {
						return nil, err
					}
				}
			}
			for j := c; j < h; j++ {
				if err := set(j, i, float64(h-j)/float64(h-c)); err != nil {
					return nil, err
				}
			}
		}
		t, err := castTo(tensor.From(shape, out), dt)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}
