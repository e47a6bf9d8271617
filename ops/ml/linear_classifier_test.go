package ml

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestLinearClassifier(t *testing.T) {
	x := tensor.From([]int{2, 2}, []float32{1, 2, 3, -4})
	// Binary: one row of coefficients, s = x·[1, 1] − 1: rows 2 and −2.
	out := run(t, node("LinearClassifier", 1, 2, opstest.AttrFloats("coefficients", 1, 1), opstest.AttrFloats("intercepts", -1), opstest.AttrInts("classlabels_ints", 5, 6)), x)
	if !slices.Equal(out[0].Data.([]int64), []int64{6, 5}) || !near(out[1], []float64{-1, 2, 3, -2}, 1e-6) {
		t.Errorf("binary NONE: %v %v", out[0].Data, out[1].Data)
	}
	out = run(t, node("LinearClassifier", 1, 2, opstest.AttrFloats("coefficients", 1, 1), opstest.AttrFloats("intercepts", -1), opstest.AttrInts("classlabels_ints", 5, 6),
		opstest.AttrString("post_transform", "LOGISTIC")), x)
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if !slices.Equal(out[0].Data.([]int64), []int64{6, 5}) || !near(out[1], []float64{sig(-2), sig(2), sig(2), sig(-2)}, 1e-6) {
		t.Errorf("binary LOGISTIC: %v %v", out[0].Data, out[1].Data)
	}
	// Three classes, string labels, softmax: scores x0, x1, x0+x1.
	three := node("LinearClassifier", 1, 2, opstest.AttrFloats("coefficients", 1, 0, 0, 1, 1, 1), opstest.AttrFloats("intercepts", 0, 0, 0),
		opstest.AttrStrings("classlabels_strings", "a", "b", "c"), opstest.AttrString("post_transform", "SOFTMAX"))
	out = run(t, three, tensor.From([]int{2, 2}, []float64{1, 2, 3, -4}))
	soft := func(v ...float64) []float64 {
		s := 0.0
		for _, e := range v {
			s += math.Exp(e)
		}
		for i := range v {
			v[i] = math.Exp(v[i]) / s
		}
		return v
	}
	if got := out[0].Data.([]string); strings.Join(got, "") != "ca" || !near(out[1], append(soft(1, 2, 3), soft(3, -4, -1)...), 1e-6) {
		t.Errorf("softmax: %v %v", got, out[1].Data)
	}
	// Without intercepts, X's width says how many rows of coefficients
	// there are: four coefficients over four features are one binary row.
	out = run(t, node("LinearClassifier", 1, 2, opstest.AttrFloats("coefficients", 1, 1, 1, 1), opstest.AttrInts("classlabels_ints", 0, 1)),
		tensor.From([]int{1, 4}, []float32{1, 1, 1, 1}))
	if !slices.Equal(out[0].Data.([]int64), []int64{1}) || !near(out[1], []float64{-3, 4}, 1e-6) {
		t.Errorf("binary without intercepts: %v %v", out[0].Data, out[1].Data)
	}
	// The features must match the coefficients.
	if err := runErr(t, three, tensor.From([]int{1, 3}, []float64{1, 2, 3})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("three features: %v", err)
	}
	if err := compileErr(node("LinearClassifier", 1, 1, opstest.AttrFloats("coefficients", 1, 1), opstest.AttrInts("classlabels_ints", 1, 2), opstest.AttrStrings("classlabels_strings", "a", "b")), 1); err == nil {
		t.Error("both kinds of labels compiled")
	}
}
