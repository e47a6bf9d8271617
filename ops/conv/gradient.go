package conv

import (
	"context"
	"fmt"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// The backward passes of Conv and ConvTranspose (builds with the autodiff
// tag) run through these on the float tiles of an engine: the one the
// convolution's model runs on.

// Forward returns conv(x) by w (no bias) for geometry g on e: x is
// Batch×C×In, w is M×C/Group×Kernel, the result Batch×M×Out.
func Forward(e *gemm.Engine, g *Geometry, x, w []float32) ([]float32, error) {
	if err := g.check(len(x), len(w), g.C*g.InSize(), "x"); err != nil {
		return nil, err
	}
	c := ops.NewContext(context.Background(), e, false)
	y := make([]float32, g.Batch*g.M*g.OutSize())
	if g.depthwise() {
		return y, (&depthwiseWeights{w: w}).forward(c, g, x, nil, y)
	}
	cw, err := prepareWeights(w, append([]int{g.M, g.cg()}, g.Kernel...), g.Group, false, false, 0)
	if err != nil {
		return nil, err
	}
	return y, cw.forward(c, g, x, nil, y)
}

// Adjoint returns convᵀ(y) by w (no bias) for geometry g on e: y is
// Batch×M×Out, the result Batch×C×In. It is ConvTranspose, and the input
// gradient of a convolution.
func Adjoint(e *gemm.Engine, g *Geometry, y, w []float32) ([]float32, error) {
	if err := g.check(len(y), len(w), g.M*g.OutSize(), "y"); err != nil {
		return nil, err
	}
	c := ops.NewContext(context.Background(), e, false)
	x := make([]float32, g.Batch*g.C*g.InSize())
	cw, err := prepareWeights(w, append([]int{g.M, g.cg()}, g.Kernel...), g.Group, true, false, 0)
	if err != nil {
		return nil, err
	}
	return x, cw.adjoint(c, g, y, nil, x)
}

// WeightGradient returns dW (M×C/Group×Kernel) = Σ_b Σ_o dy[b][m][o] ·
// x[b][ci][o·s − p + k·d] for geometry g: the weight gradient of a
// convolution whose output gradient is dy (Batch×M×Out) at input x
// (Batch×C×In). It gathers im2col rows a tile at a time, as the forward
// pass does, and accumulates dYᵀ·rows on e's float tiles.
func WeightGradient(e *gemm.Engine, g *Geometry, x, dy []float32) ([]float32, error) {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	if len(x) != g.Batch*g.C*inSize || len(dy) != g.Batch*g.M*outSize {
		return nil, fmt.Errorf("conv: WeightGradient got %d and %d values for geometry %+v", len(x), len(dy), *g)
	}
	k := kk * cg
	dw := make([]float32, g.M*k)
	if g.Batch == 0 || outSize == 0 || k == 0 || g.M == 0 {
		return dw, nil
	}
	c := ops.NewContext(context.Background(), e, false)
	taps := newTaps(g)
	tile := tileRows(k)
	xt := make([]float32, inSize*g.C)
	rows := make([]float32, tile*k)
	dyt := make([]float32, mg*tile)
	part := make([]float32, mg*k)
	sum := make([][]float64, g.Group)
	for gi := range sum {
		sum[gi] = make([]float64, mg*k)
	}
	for b := 0; b < g.Batch; b++ {
		if err := channelsLast(c, xt, x[b*g.C*inSize:], g.C, inSize); err != nil {
			return nil, err
		}
		for gi := 0; gi < g.Group; gi++ {
			for p0 := 0; p0 < outSize; p0 += tile {
				n := min(tile, outSize-p0)
				taps.gatherRows(rows, xt, gi, p0, n)
				for co := 0; co < mg; co++ {
					copy(dyt[co*n:(co+1)*n], dy[(b*g.M+gi*mg+co)*outSize+p0:])
				}
				if err := e.MatMul(dyt[:mg*n], mg, packF(n, k, rows[:n*k]), part); err != nil {
					return nil, err
				}
				for i, v := range part {
					sum[gi][i] += float64(v)
				}
			}
		}
	}
	// part rows are (co, kidx·Cg+ci); dW is (m, ci, kidx).
	for gi := 0; gi < g.Group; gi++ {
		for co := 0; co < mg; co++ {
			for kidx := 0; kidx < kk; kidx++ {
				for ci := 0; ci < cg; ci++ {
					dw[((gi*mg+co)*cg+ci)*kk+kidx] = float32(sum[gi][co*k+kidx*cg+ci])
				}
			}
		}
	}
	return dw, nil
}

func (g *Geometry) check(nv, nw, per int, what string) error {
	if nv != g.Batch*per || nw != g.M*g.cg()*g.KernelSize() {
		return fmt.Errorf("conv: convolution got %d values of %s and %d of w for geometry %+v", nv, what, nw, *g)
	}
	if g.Group < 1 || g.C%g.Group != 0 || g.M%g.Group != 0 {
		return fmt.Errorf("conv: convolution geometry %+v has bad groups", *g)
	}
	return nil
}
