package ml

import (
	"fmt"
	"math"
)

// svmKernel is the kernel of SVMRegressor and SVMClassifier.
type svmKernel struct {
	kind                 string
	gamma, coef0, degree float64
}

func newSVMKernel(kind string, params []float32) (svmKernel, error) {
	k := svmKernel{kind: kind}
	switch kind {
	case "LINEAR", "POLY", "RBF", "SIGMOID":
	default:
		return k, fmt.Errorf("kernel_type %q is not one of LINEAR, POLY, RBF, SIGMOID", kind)
	}
	if len(params) > 0 {
		if len(params) != 3 {
			return k, fmt.Errorf("kernel_params has %d values, not 3 (gamma, coef0, degree)", len(params))
		}
		k.gamma, k.coef0, k.degree = float64(params[0]), float64(params[1]), float64(int(params[2]))
	}
	return k, nil
}

func (k svmKernel) dot(x []float64, v []float32) float64 {
	s := 0.0
	if k.kind == "RBF" {
		for i, a := range x {
			d := a - float64(v[i])
			s += d * d
		}
		return math.Exp(-k.gamma * s)
	}
	for i, a := range x {
		s += a * float64(v[i])
	}
	switch k.kind {
	case "POLY":
		return math.Pow(k.gamma*s+k.coef0, k.degree)
	case "SIGMOID":
		return math.Tanh(k.gamma*s + k.coef0)
	}
	return s
}
