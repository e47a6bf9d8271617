package ops

import "math"

// Sigmoid returns 1/(1+e^-x), computed as e^x/(1+e^x) for negative x so
// that neither form overflows.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}
