package quant

import (
	"errors"
	"fmt"
	"math"
)

// Scheme is a weight quantization granularity.
type Scheme int

// The weight schemes.
const (
	PerTensor Scheme = iota
	PerChannel
	PerBlock
)

// BlockSize is the number of consecutive values along K sharing a scale in
// the PerBlock scheme.
const BlockSize = 32

// MinScaleRange is the smallest group magnitude that gets a nonzero scale;
// smaller groups (zeros, subnormals) quantize to zero.
const MinScaleRange = 0x1p-120

var schemeNames = [...]string{PerTensor: "per_tensor", PerChannel: "per_channel", PerBlock: "per_block"}

func (s Scheme) String() string {
	if int(s) < len(schemeNames) {
		return schemeNames[s]
	}
	return fmt.Sprintf("Scheme(%d)", int(s))
}

// ParseScheme returns the scheme named per_tensor, per_channel or
// per_block.
func ParseScheme(name string) (Scheme, error) {
	for i, n := range schemeNames {
		if n == name {
			return Scheme(i), nil
		}
	}
	return 0, fmt.Errorf("quant: unknown scheme %q (per_tensor, per_channel or per_block)", name)
}

// ErrNotFinite reports a NaN or infinite value where quantization needs
// finite ones.
var ErrNotFinite = errors.New("quant: value is NaN or infinite")

// Weights is a K×N matrix quantized to int8.
type Weights struct {
	Scheme Scheme
	K, N   int
	Q      []int8    // K×N row-major
	Scales []float32 // 1 (PerTensor), N (PerChannel) or Blocks()×N (PerBlock)
}

// Blocks returns the number of K blocks of the PerBlock scheme.
func (w *Weights) Blocks() int { return (w.K + BlockSize - 1) / BlockSize }

// Scale returns the scale of element (k, n).
func (w *Weights) Scale(k, n int) float32 {
	switch w.Scheme {
	case PerTensor:
		return w.Scales[0]
	case PerChannel:
		return w.Scales[n]
	}
	return w.Scales[k/BlockSize*w.N+n]
}

// ChannelScales returns one scale per column: the per-tensor scale
// repeated, or the per-channel scales. It panics for PerBlock.
func (w *Weights) ChannelScales() []float32 {
	switch w.Scheme {
	case PerTensor:
		s := make([]float32, w.N)
		for i := range s {
			s[i] = w.Scales[0]
		}
		return s
	case PerChannel:
		return w.Scales
	}
	panic("quant: ChannelScales of per-block weights")
}

// QuantizeWeights quantizes x (K×N row-major) with the given scheme.
func QuantizeWeights(x []float32, k, n int, s Scheme) (*Weights, error) {
	if len(x) != k*n {
		return nil, fmt.Errorf("quant: %d values for a %d×%d matrix", len(x), k, n)
	}
	for i, v := range x {
		if !finite(v) {
			return nil, fmt.Errorf("%w: weight [%d,%d] is %v", ErrNotFinite, i/max(n, 1), i%max(n, 1), v)
		}
	}
	w := &Weights{Scheme: s, K: k, N: n, Q: make([]int8, k*n)}
	switch s {
	case PerTensor:
		w.Scales = []float32{scaleFor(maxAbs(x, 0, len(x), 1))}
	case PerChannel:
		w.Scales = make([]float32, n)
		for j := 0; j < n; j++ {
			w.Scales[j] = scaleFor(maxAbs(x, j, k*n, n))
		}
	case PerBlock:
		nb := (k + BlockSize - 1) / BlockSize
		w.Scales = make([]float32, nb*n)
		for b := 0; b < nb; b++ {
			lo, hi := b*BlockSize*n, min(k, (b+1)*BlockSize)*n
			for j := 0; j < n; j++ {
				w.Scales[b*n+j] = scaleFor(maxAbs(x, lo+j, hi, n))
			}
		}
	default:
		return nil, fmt.Errorf("quant: unknown scheme %d", s)
	}
	for i, v := range x {
		w.Q[i] = Quantize(v, w.Scale(i/max(n, 1), i%max(n, 1)))
	}
	return w, nil
}

// Quantize returns round(x/s) clamped to [-127, 127], or 0 when s is 0.
func Quantize(x, s float32) int8 {
	if s == 0 {
		return 0
	}
	q := math.RoundToEven(float64(x) / float64(s))
	return int8(min(max(q, -127), 127))
}

// Dequantize returns the K×N float32 matrix q·s.
func (w *Weights) Dequantize() []float32 {
	out := make([]float32, len(w.Q))
	for i, q := range w.Q {
		out[i] = float32(q) * w.Scale(i/max(w.N, 1), i%max(w.N, 1))
	}
	return out
}

// scaleFor returns max/127, or 0 for groups below MinScaleRange.
func scaleFor(maxAbs float32) float32 {
	if maxAbs < MinScaleRange {
		return 0
	}
	return maxAbs / 127
}

func maxAbs(x []float32, from, to, stride int) float32 {
	var m float32
	for i := from; i < to; i += stride {
		m = max(m, float32(math.Abs(float64(x[i]))))
	}
	return m
}

func finite(v float32) bool { return v == v && v <= math.MaxFloat32 && v >= -math.MaxFloat32 }

// ActivationLevels is the number of steps a row of activations is
// quantized to: unsigned bytes in [0, 127], whose products with int8
// weights every kernel table sums exactly (x86's vpmaddubsw saturates
// pairs past 32,767: 2·127·127 is below it, 2·255·127 is not).
const ActivationLevels = 127

// RowParams returns the activation quantization of a row whose values lie
// in [lo, hi]: the range widened to hold 0, [min(lo, 0), max(hi, 0)],
// spread over ActivationLevels steps with the zero point where 0 falls
// (0 for a row with no negative value, 127 for one with no positive
// value). It returns the scale, the reciprocal the kernels multiply by and
// the zero point: a value x quantizes to clamp(roundEven(x·inv), -zp,
// 127-zp) + zp. A row spanning less than MinScaleRange gets scale 0, inv 0
// and zero point 0: it quantizes to zeros.
func RowParams(lo, hi float32) (scale, inv float32, zp int32) {
	lo, hi = min(lo, 0), max(hi, 0)
	span := hi - lo
	if span < MinScaleRange || !finite(span) {
		return 0, 0, 0
	}
	if lo == 0 {
		return hi / ActivationLevels, ActivationLevels / hi, 0
	}
	scale, inv = span/ActivationLevels, ActivationLevels/span
	z := math.RoundToEven(float64(-lo * inv))
	return scale, inv, int32(min(max(z, 0), ActivationLevels))
}
