package ops

import (
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/kernels"
)

// Sigmoid returns 1/(1+e^-x), computed as e^x/(1+e^x) for negative x so
// that neither form overflows.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// ScaledSigmoid is x·sigmoid(alpha·x), Swish's and QuickGelu's, for
// float32 values on the engine table's XSigmoid kernel
// (kernels.XSigmoidConsts(0, alpha)): alpha·x exact in float64, the result
// within a few ulps.
type ScaledSigmoid struct {
	alpha  float64
	consts *[kernels.ActRows][8]float32
}

// NewScaledSigmoid returns x·sigmoid(alpha·x).
func NewScaledSigmoid(alpha float64) *ScaledSigmoid {
	return &ScaledSigmoid{alpha: alpha, consts: kernels.XSigmoidConsts(0, alpha)}
}

// Of returns x·sigmoid(alpha·x) in float64.
func (s *ScaledSigmoid) Of(x float64) float64 { return x * Sigmoid(s.alpha*x) }

// Apply sets dst[i] = src[i]·sigmoid(alpha·src[i]) on tb's kernel; dst
// must not overlap src. The kernel's NaN for ±Inf (its x³ term's 0·∞)
// becomes Of's value (+Inf for x·sigmoid(+Inf), NaN for ∞·0); NaN stays
// NaN. Only a src that is not all finite (the table's MinMax, a vector
// pass over src where the kernel left it in cache) is looked at again
// value by value.
func (s *ScaledSigmoid) Apply(tb *dispatch.Table, dst, src []float32) {
	dst = dst[:len(src)]
	tb.XSigmoid(dst, src, s.consts)
	if _, _, finite := tb.MinMax(src); finite {
		return
	}
	for i, v := range dst {
		if x := src[i]; v != v && x == x {
			dst[i] = float32(s.Of(float64(x)))
		}
	}
}
