//go:build autodiff

package autodiff

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops/norm"
	"github.com/quantserve/quantserve/ops/pool"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	bindGrad(maxPoolBackward, pool.MaxPool)
	bindGrad(averagePoolBackward, pool.AveragePool)
	bindGrad(globalPoolBackward(false), pool.GlobalAveragePool)
	bindGrad(globalPoolBackward(true), pool.GlobalMaxPool)
	bindGrad(batchNormBackward, norm.BatchNormalization)
}

// poolInput returns the pooled input's values, the geometry its windows
// lie in, and the upstream gradient checked against it.
func poolInput(in []*tensor.Tensor, dy []float32, geometry func([]int) (*pool.Geometry, error)) ([]float32, *pool.Geometry, error) {
	x, err := floats(in[0], "the input")
	if err != nil {
		return nil, nil, err
	}
	g, err := geometry(in[0].Shape)
	if err != nil {
		return nil, nil, err
	}
	if len(dy) != g.Planes()*g.OutSize() {
		return nil, nil, fmt.Errorf("autodiff: %d output gradients for %d outputs", len(dy), g.Planes()*g.OutSize())
	}
	return x, g, nil
}

// firstMax returns the offset among offs of the element MaxPool's value
// came from: the first equal to the window's maximum (or its first NaN),
// as the forward pass reports in Indices.
func firstMax(x []float32, offs []int) int {
	m := float32(math.Inf(-1))
	for _, off := range offs {
		m = max(m, x[off])
	}
	for _, off := range offs {
		if v := x[off]; v == m || v != v && m != m {
			return off
		}
	}
	return -1
}

// maxPoolBackward routes each output's gradient to the input element its
// maximum came from.
func maxPoolBackward(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
	x, g, err := poolInput(in, dy, st.Params.(*pool.MaxPoolAttrs).Geometry)
	if err != nil {
		return nil, err
	}
	dx := make([]float32, len(x))
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	for p := 0; p < g.Planes(); p++ {
		xp, dxp := x[p*is:(p+1)*is], dx[p*is:(p+1)*is]
		for o := 0; o < os; o++ {
			if off := firstMax(xp, w.At(o)); off >= 0 {
				dxp[off] += dy[p*os+o]
			}
		}
	}
	return [][]float32{dx}, nil
}

// averagePoolBackward spreads each output's gradient evenly over the
// input elements of its window, divided as the forward pass divided.
func averagePoolBackward(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
	at := st.Params.(*pool.AveragePoolAttrs)
	x, g, err := poolInput(in, dy, at.Geometry)
	if err != nil {
		return nil, err
	}
	dx := make([]float32, len(x))
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	for p := 0; p < g.Planes(); p++ {
		dxp := dx[p*is : (p+1)*is]
		for o := 0; o < os; o++ {
			offs := w.At(o)
			div := len(offs)
			if at.CountIncludePad {
				div = w.Area()
			}
			if len(offs) == 0 || div == 0 {
				continue
			}
			d := dy[p*os+o] / float32(div)
			for _, off := range offs {
				dxp[off] += d
			}
		}
	}
	return [][]float32{dx}, nil
}

// globalPoolBackward is GlobalAveragePool's (each plane's gradient spread
// evenly) and, with maxPool, GlobalMaxPool's (to the plane's first maximum).
func globalPoolBackward(maxPool bool) gradFunc {
	return func(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, _ []bool) ([][]float32, error) {
		return globalPoolGrad(st, in, dy, maxPool)
	}
}

func globalPoolGrad(st model.Step, in []*tensor.Tensor, dy []float32, maxPool bool) ([][]float32, error) {
	x, err := floats(in[0], "the input")
	if err != nil {
		return nil, err
	}
	if in[0].Rank() < 2 {
		return nil, fmt.Errorf("autodiff: %s input of shape %v", st.Op, in[0].Shape)
	}
	planes := in[0].Shape[0] * in[0].Shape[1]
	if len(dy) != planes {
		return nil, fmt.Errorf("autodiff: %d output gradients for %d planes", len(dy), planes)
	}
	if planes == 0 {
		return [][]float32{make([]float32, len(x))}, nil
	}
	size := len(x) / planes
	dx := make([]float32, len(x))
	offs := make([]int, size)
	for i := range offs {
		offs[i] = i
	}
	for p := 0; p < planes; p++ {
		xp, dxp := x[p*size:(p+1)*size], dx[p*size:(p+1)*size]
		if maxPool {
			if off := firstMax(xp, offs); off >= 0 {
				dxp[off] = dy[p]
			}
			continue
		}
		d := dy[p] / float32(size)
		for i := range dxp {
			dxp[i] = d
		}
	}
	return [][]float32{dx}, nil
}

// batchNormBackward differentiates inference BatchNormalization,
// Y = scale·(X − mean)/√(var + ε) + B, with respect to X and, when they
// are values of the request rather than constants folded at load, to
// scale, B, mean and var.
func batchNormBackward(st model.Step, in []*tensor.Tensor, _ *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	at := st.Params.(*norm.BatchNormAttrs)
	bn, ok := st.Operator.(*norm.BatchNorm)
	if !ok {
		return nil, fmt.Errorf("autodiff: BatchNormalization compiled to %T", st.Operator)
	}
	if bn.Training() {
		return nil, fmt.Errorf("%w: gradients through BatchNormalization in training mode (batch statistics) are not supported", errBadRequest)
	}
	x, err := floats(in[0], "the input")
	if err != nil {
		return nil, err
	}
	N, C, S, err := at.Layout(in[0].Shape)
	if err != nil {
		return nil, err
	}
	if len(dy) != len(x) || N*C*S != len(x) {
		return nil, fmt.Errorf("autodiff: %d output gradients for an input of shape %v", len(dy), in[0].Shape)
	}
	dx := make([][]float32, len(in))
	if f := bn.Folded(); f != nil {
		for j := 1; j < len(need) && j < 5; j++ {
			if need[j] {
				return nil, fmt.Errorf("%w: BatchNormalization folded its constant scale, B, mean and var at load; they have no gradient", errBadRequest)
			}
		}
		if len(f.Scale) != C {
			return nil, fmt.Errorf("autodiff: BatchNormalization of %d channels, %d folded", C, len(f.Scale))
		}
		dx[0] = make([]float32, len(x))
		for i := range x {
			dx[0][i] = dy[i] * float32(f.Scale[i/S%C])
		}
		return dx, nil
	}
	var p [4][]float32
	for j, name := range []string{"scale", "B", "mean", "var"} {
		if p[j], err = floats(in[j+1], name); err != nil {
			return nil, err
		}
		if len(p[j]) != C {
			return nil, fmt.Errorf("autodiff: BatchNormalization %s has %d values for %d channels", name, len(p[j]), C)
		}
	}
	scale, mean, variance := p[0], p[2], p[3]
	eps := float64(at.Epsilon)
	inv := make([]float64, C)
	for c := range inv {
		inv[c] = 1 / math.Sqrt(float64(variance[c])+eps)
	}
	// Sums over each channel's elements: Σdy and Σdy·(x − mean).
	sumDy, sumDyXc := make([]float64, C), make([]float64, C)
	dx[0] = make([]float32, len(x))
	for i, v := range x {
		c := i / S % C
		sumDy[c] += float64(dy[i])
		sumDyXc[c] += float64(dy[i]) * (float64(v) - float64(mean[c]))
		dx[0][i] = float32(float64(dy[i]) * float64(scale[c]) * inv[c])
	}
	grad := func(j int, f func(c int) float64) {
		if j < len(need) && need[j] {
			dx[j] = make([]float32, C)
			for c := range dx[j] {
				dx[j][c] = float32(f(c))
			}
		}
	}
	grad(1, func(c int) float64 { return sumDyXc[c] * inv[c] })
	grad(2, func(c int) float64 { return sumDy[c] })
	grad(3, func(c int) float64 { return -sumDy[c] * float64(scale[c]) * inv[c] })
	grad(4, func(c int) float64 { return -0.5 * sumDyXc[c] * float64(scale[c]) * inv[c] * inv[c] * inv[c] })
	return dx, nil
}
