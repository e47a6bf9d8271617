package activation

import (
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
)

// Tanh is the Tanh operator.
var Tanh = ops.Op{
	ops.Register(ops.Descriptor{Type: "Tanh", Since: 1, Fold: true}, tableBuilder("Tanh", func(t *dispatch.Table) func(dst, src []float32) { return t.Tanh }, math.Tanh)),
}

// tanhC are the Taylor coefficients of tanh: tanh x = x + x·Σ c[i]·x^(2i+2).
var tanhC = [...]float32{-1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925,
	21844.0 / 6081075, -929569.0 / 638512875, 6404582.0 / 10854718875, -443861162.0 / 1856156927625}

// Tanh32 returns tanh x in float32, within 1.3 ulp of math.Tanh: its
// Taylor series below 0.625, 1 - 2/(e**2|x| + 1) above, ±1 beyond 9.1
// where float32 rounds to it.
func Tanh32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a < 0.625 {
		z := x * x
		c := &tanhC
		p := c[8]
		p = p*z + c[7]
		p = p*z + c[6]
		p = p*z + c[5]
		p = p*z + c[4]
		p = p*z + c[3]
		p = p*z + c[2]
		p = p*z + c[1]
		p = p*z + c[0]
		return x + x*z*p
	}
	if a > 9.1 {
		if x < 0 {
			return -1
		}
		return 1
	}
	t := 1 - 2/(arith.Expf(2*float64(a))+1) // NaN stays NaN
	if x < 0 {
		return -t
	}
	return t
}
