package ml

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "LinearRegressor", Since: 1, Fold: true}, buildLinearRegressor)
}

// LinearRegressorAttrs are LinearRegressor's attributes.
type LinearRegressorAttrs struct {
	Coefficients  []float32 `onnx:"coefficients"`
	Intercepts    []float32 `onnx:"intercepts"`
	PostTransform string    `onnx:"post_transform" default:"NONE"`
	Targets       int64     `onnx:"targets" default:"1"`
}

// linearRegressor is a compiled LinearRegressor: t targets, each a row of
// feat coefficients and an intercept.
type linearRegressor struct {
	post       postTransform
	coef       []float32
	intercepts []float32
	t, feat    int
}

func buildLinearRegressor(n *ops.Node, a *LinearRegressorAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	post, err := parsePost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	if a.Targets < 1 || a.Targets > int64(len(a.Coefficients)) || len(a.Coefficients)%int(a.Targets) != 0 {
		return nil, fmt.Errorf("has %d coefficients for %d targets", len(a.Coefficients), a.Targets)
	}
	t := int(a.Targets)
	if len(a.Intercepts) != 0 && len(a.Intercepts) != t {
		return nil, fmt.Errorf("has %d intercepts for %d targets", len(a.Intercepts), t)
	}
	return &linearRegressor{post: post, coef: a.Coefficients, intercepts: a.Intercepts, t: t, feat: len(a.Coefficients) / t}, nil
}

func (l *linearRegressor) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	vs, rows, f, err := readRows("LinearRegressor", in[0], numeric...)
	if err != nil {
		return nil, err
	}
	if f != l.feat {
		return nil, ops.InputErrorf("LinearRegressor takes %d features, got %d", l.feat, f)
	}
	t := l.t
	if err := outputShape("LinearRegressor", rows, t); err != nil {
		return nil, err
	}
	y := make([]float32, rows*t)
	s := make([]float64, t)
	for r := range rows {
		linearScores(s, vs[r*f:(r+1)*f], l.coef, l.intercepts)
		l.post.apply(s)
		for j, v := range s {
			y[r*t+j] = float32(v)
		}
	}
	return []*tensor.Tensor{tensor.From([]int{rows, t}, y)}, nil
}

// linearScores sets s[j] = x·coef[j·F:(j+1)·F] + intercepts[j].
func linearScores(s, x []float64, coef, intercepts []float32) {
	f := len(x)
	for j := range s {
		acc := 0.0
		if len(intercepts) > 0 {
			acc = float64(intercepts[j])
		}
		w := coef[j*f : (j+1)*f]
		for i, v := range x {
			acc += v * float64(w[i])
		}
		s[j] = acc
	}
}
