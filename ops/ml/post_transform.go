package ml

import (
	"fmt"
	"math"
)

// postTransform is a classifier's or regressor's post_transform. Its
// values are TreeEnsemble's numbering of the transforms.
type postTransform uint8

const (
	postNone postTransform = iota
	postSoftmax
	postLogistic
	postSoftmaxZero
	postProbit
)

func parsePost(s string) (postTransform, error) {
	switch s {
	case "", "NONE":
		return postNone, nil
	case "SOFTMAX":
		return postSoftmax, nil
	case "LOGISTIC":
		return postLogistic, nil
	case "SOFTMAX_ZERO":
		return postSoftmaxZero, nil
	case "PROBIT":
		return postProbit, nil
	}
	return 0, fmt.Errorf("post_transform %q is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT", s)
}

// apply transforms one row of scores in place.
func (p postTransform) apply(s []float64) {
	switch p {
	case postLogistic:
		for i, v := range s {
			s[i] = logistic(v)
		}
	case postSoftmax:
		mx := math.Inf(-1)
		for _, v := range s {
			mx = max(mx, v)
		}
		sum := 0.0
		for i, v := range s {
			s[i] = math.Exp(v - mx)
			sum += s[i]
		}
		for i := range s {
			s[i] /= sum
		}
	case postSoftmaxZero:
		// Softmax over the nonzero scores; zero scores stay (about) zero.
		mx := math.Inf(-1)
		for _, v := range s {
			mx = max(mx, v)
		}
		expNeg := math.Exp(-mx)
		sum := 0.0
		for i, v := range s {
			if v > 1e-7 || v < -1e-7 {
				s[i] = math.Exp(v - mx)
			} else {
				s[i] = v * expNeg
			}
			sum += s[i]
		}
		for i := range s {
			if sum == 0 {
				s[i] = 0.5
			} else {
				s[i] /= sum
			}
		}
	case postProbit:
		for i, v := range s {
			s[i] = probit(v)
		}
	}
}

func logistic(v float64) float64 {
	e := 1 / (1 + math.Exp(-math.Abs(v)))
	if v < 0 {
		return 1 - e
	}
	return e
}

// probit is √2·erfinv(2v−1) with the closed-form approximation of erfinv
// (a = 0.147) that ONNX's reference evaluator and ONNX Runtime use, so
// that PROBIT scores agree with theirs.
func probit(v float64) float64 {
	x := 2*v - 1
	sgn := 1.0
	if x < 0 {
		sgn = -1
	}
	x = (1 - x) * (1 + x)
	if x == 0 {
		return math.Inf(int(sgn)) // probit(0) = −∞, probit(1) = +∞
	}
	l := math.Log(x)
	a := 2/(math.Pi*0.147) + 0.5*l
	b := l / 0.147
	return math.Sqrt2 * sgn * math.Sqrt(-a+math.Sqrt(a*a-b))
}
