//go:build autodiff

package autodiff

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/activation"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// Backward functions of the activations (ops/activation) and the
// elementwise math (ops/arith). (Relu, LeakyRelu, Sigmoid, Tanh, Gelu,
// Clip and Add, Sub, Mul, Div are in backward.go.) Piecewise-constant functions (Ceil, Floor, Round, Sign)
// have the derivative 0 wherever they have one.
func init() {
	unaryGrads := []struct {
		op ops.Op
		d  func(st model.Step) func(x, y float64) float64
	}{
		{arith.Sqrt, ewFixed(func(_, y float64) float64 { return 0.5 / y })},
		{arith.Exp, ewFixed(func(_, y float64) float64 { return y })},
		{arith.Log, ewFixed(func(x, _ float64) float64 { return 1 / x })},
		{arith.Abs, ewFixed(func(x, _ float64) float64 { return ewSign(x) })},
		{arith.Neg, ewFixed(func(_, _ float64) float64 { return -1 })},
		{arith.Reciprocal, ewFixed(func(_, y float64) float64 { return -y * y })},
		{arith.Sin, ewFixed(func(x, _ float64) float64 { return math.Cos(x) })},
		{arith.Cos, ewFixed(func(x, _ float64) float64 { return -math.Sin(x) })},
		{arith.Tan, ewFixed(func(_, y float64) float64 { return 1 + y*y })},
		{arith.Asin, ewFixed(func(x, _ float64) float64 { return 1 / math.Sqrt(1-x*x) })},
		{arith.Acos, ewFixed(func(x, _ float64) float64 { return -1 / math.Sqrt(1-x*x) })},
		{arith.Atan, ewFixed(func(x, _ float64) float64 { return 1 / (1 + x*x) })},
		{arith.Sinh, ewFixed(func(x, _ float64) float64 { return math.Cosh(x) })},
		{arith.Cosh, ewFixed(func(x, _ float64) float64 { return math.Sinh(x) })},
		{arith.Asinh, ewFixed(func(x, _ float64) float64 { return 1 / math.Sqrt(x*x+1) })},
		{arith.Acosh, ewFixed(func(x, _ float64) float64 { return 1 / math.Sqrt(x*x-1) })},
		{arith.Atanh, ewFixed(func(x, _ float64) float64 { return 1 / (1 - x*x) })},
		{arith.Erf, ewFixed(func(x, _ float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) })},
		{arith.Ceil, ewFixed(func(_, _ float64) float64 { return 0 })},
		{arith.Floor, ewFixed(func(_, _ float64) float64 { return 0 })},
		{arith.Round, ewFixed(func(_, _ float64) float64 { return 0 })},
		{arith.Sign, ewFixed(func(_, _ float64) float64 { return 0 })},
		{activation.Softplus, ewFixed(func(x, _ float64) float64 { return ewLogistic(x) })},
		{activation.Softsign, ewFixed(func(x, _ float64) float64 {
			d := 1 + math.Abs(x)
			return 1 / (d * d)
		})},
		{activation.Mish, ewFixed(func(x, _ float64) float64 {
			t := math.Tanh(ewSoftplus(x))
			return t + x*(1-t*t)*ewLogistic(x)
		})},
		{activation.HardSwish, ewFixed(func(x, _ float64) float64 {
			switch {
			case x < -3:
				return 0
			case x > 3:
				return 1
			}
			return x/3 + 0.5
		})},
		{activation.HardSigmoid, func(st model.Step) func(x, y float64) float64 {
			at := st.Params.(*activation.HardSigmoidAttrs)
			a, b := float64(at.Alpha), float64(at.Beta)
			return func(x, _ float64) float64 {
				if v := a*x + b; v > 0 && v < 1 {
					return a
				}
				return 0
			}
		}},
		{activation.Elu, func(st model.Step) func(x, y float64) float64 {
			a := float64(st.Params.(*activation.EluAttrs).Alpha)
			return func(x, _ float64) float64 {
				if x > 0 {
					return 1
				}
				return a * math.Exp(x)
			}
		}},
		{activation.Celu, func(st model.Step) func(x, y float64) float64 {
			a := float64(st.Params.(*activation.EluAttrs).Alpha)
			return func(x, _ float64) float64 {
				if x > 0 {
					return 1
				}
				return math.Exp(x / a)
			}
		}},
		{activation.Selu, func(st model.Step) func(x, y float64) float64 {
			at := st.Params.(*activation.SeluAttrs)
			a, g := float64(at.Alpha), float64(at.Gamma)
			return func(x, _ float64) float64 {
				if x > 0 {
					return g
				}
				return g * a * math.Exp(x)
			}
		}},
		{activation.ThresholdedRelu, func(st model.Step) func(x, y float64) float64 {
			a := float64(st.Params.(*activation.ThresholdedReluAttrs).Alpha)
			return func(x, _ float64) float64 {
				if x > a {
					return 1
				}
				return 0
			}
		}},
		{activation.Shrink, func(st model.Step) func(x, y float64) float64 {
			l := float64(st.Params.(*activation.ShrinkAttrs).Lambd)
			return func(x, _ float64) float64 {
				if x < -l || x > l {
					return 1
				}
				return 0
			}
		}},
		{activation.Swish, func(st model.Step) func(x, y float64) float64 {
			a := float64(st.Params.(*activation.SwishAttrs).Alpha)
			return func(x, _ float64) float64 {
				s := ewLogistic(a * x)
				return s + a*x*s*(1-s)
			}
		}},
	}
	for _, u := range unaryGrads {
		d := u.d
		bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
			g, err := elemUnaryBackward(in[0], y, dy, d(st))
			dx := make([][]float32, len(in))
			dx[0] = g
			return dx, err
		}, u.op)
	}
	bindGrad(func(_ model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
		dx := make([][]float32, len(in))
		dx[0] = dy // inference: the identity
		return dx, nil
	}, activation.Dropout)
	bindGrad(elemPReluBackward, activation.PRelu)
	bindGrad(elemPowBackward, arith.Pow)
	bindGrad(elemSumBackward(false), arith.Sum)
	bindGrad(elemSumBackward(true), arith.Mean)
	bindGrad(elemExtremeBackward, arith.Min, arith.Max)
}

// ewFixed adapts a derivative without parameters.
func ewFixed(f func(x, y float64) float64) func(model.Step) func(x, y float64) float64 {
	return func(model.Step) func(x, y float64) float64 { return f }
}

func ewSign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func ewLogistic(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func ewSoftplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// elemUnaryBackward returns dy·f'(x) for y = f(x) elementwise, the
// derivative given x and y.
func elemUnaryBackward(x, y *tensor.Tensor, dy []float32, d func(x, y float64) float64) ([]float32, error) {
	xv, err := floats(x, "the input")
	if err != nil {
		return nil, err
	}
	yv, err := floats(y, "the output")
	if err != nil {
		return nil, err
	}
	g := make([]float32, len(dy))
	for i := range g {
		g[i] = float32(float64(dy[i]) * d(float64(xv[i]), float64(yv[i])))
	}
	return g, nil
}

// elemPReluBackward: y = x for x >= 0, slope·x below (slope broadcast to x).
func elemPReluBackward(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	xv, err := floats(in[0], "X")
	if err != nil {
		return nil, err
	}
	sv, err := floats(in[1], "slope")
	if err != nil {
		return nil, err
	}
	s := expand(sv, in[1].Shape, y.Shape)
	dx := make([][]float32, 2)
	if need[0] {
		g := make([]float32, len(dy))
		for i, v := range xv {
			g[i] = dy[i]
			if v < 0 {
				g[i] *= s[i]
			}
		}
		dx[0] = g
	}
	if need[1] {
		g := make([]float32, len(dy))
		for i, v := range xv {
			if v < 0 {
				g[i] = dy[i] * v
			}
		}
		dx[1] = reduceTo(g, y.Shape, in[1].Shape)
	}
	return dx, nil
}

// elemPowBackward: z = x^p, dz/dx = p·x^(p-1), dz/dp = z·ln x (taken as 0
// where x <= 0, where it is not real). The exponent may have any numeric
// type; it takes a gradient only when it is FP32.
func elemPowBackward(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	xv, err := floats(in[0], "the base")
	if err != nil {
		return nil, err
	}
	p := in[1].Float64s()
	out := y.Shape
	n := numel(out)
	xe := expand(xv, in[0].Shape, out)
	pe := make([]float64, n)
	walk(in[1].Shape, out, func(o, i int) { pe[o] = p[i] })
	dx := make([][]float32, 2)
	if need[0] {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(float64(dy[i]) * pe[i] * math.Pow(float64(xe[i]), pe[i]-1))
		}
		dx[0] = reduceTo(g, out, in[0].Shape)
	}
	if len(need) > 1 && need[1] {
		if _, err := floats(in[1], "the exponent"); err != nil {
			return nil, err
		}
		zv, err := floats(y, "the output")
		if err != nil {
			return nil, err
		}
		g := make([]float32, n)
		for i := range g {
			if xe[i] > 0 {
				g[i] = float32(float64(dy[i]) * float64(zv[i]) * math.Log(float64(xe[i])))
			}
		}
		dx[1] = reduceTo(g, out, in[1].Shape)
	}
	return dx, nil
}

// elemSumBackward is Sum's gradient (dy to every input, summed back to its
// own shape) and, with mean, Mean's (dy shared among the inputs).
func elemSumBackward(mean bool) gradFunc {
	return func(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
		g := dy
		if mean && len(in) > 1 {
			g = make([]float32, len(dy))
			for i, v := range dy {
				g[i] = v / float32(len(in))
			}
		}
		dx := make([][]float32, len(in))
		for k, t := range in {
			if need[k] {
				dx[k] = reduceTo(g, y.Shape, t.Shape)
			}
		}
		return dx, nil
	}
}

// elemExtremeBackward is Min's and Max's gradient: dy to the first input
// holding the output's value at each position.
func elemExtremeBackward(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	out := y.Shape
	dx := make([][]float32, len(in))
	yv, err := floats(y, "the output")
	if err != nil {
		return nil, err
	}
	taken := make([]bool, len(dy))
	for k, t := range in {
		v, err := floats(t, fmt.Sprintf("input %d", k))
		if err != nil {
			return nil, err
		}
		e := expand(v, t.Shape, out)
		g := make([]float32, len(dy))
		for i := range g {
			if !taken[i] && e[i] == yv[i] {
				g[i], taken[i] = dy[i], true
			}
		}
		if need[k] {
			dx[k] = reduceTo(g, out, t.Shape)
		}
	}
	return dx, nil
}

// elemWhereBackward sends dy to X where the condition holds and to Y where it
// does not; the condition has no gradient.
func elemWhereBackward(_ model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	cond, ok := in[0].Data.([]bool)
	if !ok {
		return nil, fmt.Errorf("autodiff: Where's condition is %v", in[0].DType)
	}
	out := y.Shape
	c := make([]bool, len(dy))
	walk(in[0].Shape, out, func(o, i int) { c[o] = cond[i] })
	dx := make([][]float32, 3)
	for k, takes := range []bool{true, false} {
		if !need[k+1] {
			continue
		}
		if _, err := floats(in[k+1], "a value input"); err != nil {
			return nil, err
		}
		g := make([]float32, len(dy))
		for i := range g {
			if c[i] == takes {
				g[i] = dy[i]
			}
		}
		dx[k+1] = reduceTo(g, out, in[k+1].Shape)
	}
	return dx, nil
}
