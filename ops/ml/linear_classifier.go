package ml

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "LinearClassifier", Since: 1, Fold: true}, buildLinearClassifier)
}

// LinearClassifierAttrs are LinearClassifier's attributes.
type LinearClassifierAttrs struct {
	ClasslabelsInts    []int64   `onnx:"classlabels_ints"`
	ClasslabelsStrings []string  `onnx:"classlabels_strings"`
	Coefficients       []float32 `onnx:"coefficients"`
	Intercepts         []float32 `onnx:"intercepts"`
	MultiClass         int64     `onnx:"multi_class" default:"0"`
	PostTransform      string    `onnx:"post_transform" default:"NONE"`
}

// linearClassifier is a compiled LinearClassifier: E rows of
// coefficients, one per class or one for two classes (binary). Without
// intercepts to count them (fixed 0), X's width tells.
type linearClassifier struct {
	post       postTransform
	labels     classLabels
	coef       []float32
	intercepts []float32
	fixed, nc  int
}

func buildLinearClassifier(n *ops.Node, a *LinearClassifierAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 2); err != nil {
		return nil, err
	}
	post, err := parsePost(a.PostTransform)
	if err != nil {
		return nil, err
	}
	labels, err := newClassLabels(a.ClasslabelsInts, a.ClasslabelsStrings)
	if err != nil {
		return nil, err
	}
	if len(a.Coefficients) == 0 {
		return nil, fmt.Errorf("has no coefficients")
	}
	nc := labels.n()
	fixed := len(a.Intercepts)
	if fixed > 0 && (fixed != nc && !(fixed == 1 && nc <= 2) || len(a.Coefficients)%fixed != 0) {
		return nil, fmt.Errorf("has %d coefficients and %d intercepts for %d classes", len(a.Coefficients), fixed, nc)
	}
	if nc == 1 && labels.strings != nil {
		return nil, ops.Unsupportedf("a one-class LinearClassifier with string labels")
	}
	return &linearClassifier{post: post, labels: labels, coef: a.Coefficients, intercepts: a.Intercepts, fixed: fixed, nc: nc}, nil
}

func (l *linearClassifier) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	vs, rows, f, err := readRows("LinearClassifier", in[0], numeric...)
	if err != nil {
		return nil, err
	}
	nc, post := l.nc, l.post
	e := l.fixed
	if e == 0 && f > 0 && len(l.coef)%f == 0 {
		e = len(l.coef) / f
	}
	if e == 0 || len(l.coef) != e*f || e != nc && !(e == 1 && nc <= 2) {
		return nil, ops.InputErrorf("LinearClassifier: %d features do not fit its %d coefficients for %d classes", f, len(l.coef), nc)
	}
	width := e
	if e == 1 && nc == 2 {
		width = 2
	}
	z := make([]float32, rows*width)
	idx := make([]int, rows)
	ints := make([]int64, rows) // one class: its label or 0
	s := make([]float64, width)
	for r := range rows {
		linearScores(s[:e], vs[r*f:(r+1)*f], l.coef, l.intercepts)
		// The label is the class of the highest raw score (the
		// transforms keep the order, except where PROBIT gives NaN).
		switch {
		case width == 2 && e == 1:
			v := s[0]
			idx[r] = 0
			if v > 0 {
				idx[r] = 1
			}
			if post == postNone {
				s[0], s[1] = 1-v, v // as ONNX Runtime reports it
			} else {
				s[0], s[1] = -v, v
				post.apply(s)
			}
		case width > 1:
			idx[r] = argmax(s)
			post.apply(s)
		default:
			post.apply(s)
			th := 0.5
			if post == postNone {
				th = 0
			}
			if s[0] >= th {
				ints[r] = l.labels.ints[0]
			}
		}
		for j, v := range s {
			z[r*width+j] = float32(v)
		}
	}
	y := l.labels.tensor(idx)
	if width == 1 {
		y = tensor.From([]int{rows}, ints)
	}
	return []*tensor.Tensor{y, tensor.From([]int{rows, width}, z)}, nil
}
