//go:build autodiff

package autodiff

import (
	"fmt"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// Backward passes of Conv and ConvTranspose. A convolution y = conv(x, W)
// + b has
//
//	dx = convᵀ(dy, W)      (ConvTranspose of dy)
//	dW = Σ dy ⊗ im2col(x)  (model.ConvWeightGradient)
//	db = Σ_{batch, positions} dy
//
// and ConvTranspose, y = convᵀ(x, W) + b, the mirror: dx = conv(dy, W),
// dW = Σ x ⊗ im2col(dy). Every product runs on the float tiles of the
// engine the model runs on (Step.Exec). A weight the kernels hold as int8
// is used dequantized (the straight-through estimator): the gradient flows
// as if through the weights the forward pass multiplied by.

func init() {
	bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
		at := st.Params.(*model.ConvAttrs)
		return convBackward(st.Exec, at.Geometry, at.HeldWeight(), false, in, dy, need)
	}, model.Conv)
	bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
		at := st.Params.(*model.ConvTransposeAttrs)
		return convBackward(st.Exec, at.Geometry, at.HeldWeight(), true, in, dy, need)
	}, model.ConvTranspose)
}

// convBackward returns the gradients of x, W and b on e, the engine the
// node ran on. held, when not nil, is the weight as the kernels multiply by
// it; otherwise in[1] is.
func convBackward(e *gemm.Engine, geometry func(x, w []int) (*model.ConvGeometry, error), held *tensor.Tensor, transposed bool, in []*tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
	xv, err := floats(in[0], "the input")
	if err != nil {
		return nil, err
	}
	w := held
	if w == nil {
		w = in[1]
	}
	wv, err := floats(w, "the weight")
	if err != nil {
		return nil, err
	}
	g, err := geometry(in[0].Shape, w.Shape)
	if err != nil {
		return nil, err
	}
	// In the geometry's terms a Conv maps In-space x (C channels) to
	// Out-space y (M channels); a ConvTranspose maps Out-space to In-space.
	outLen, channels, size := g.Batch*g.M*g.OutSize(), g.M, g.OutSize()
	if transposed {
		outLen, channels, size = g.Batch*g.C*g.InSize(), g.C, g.InSize()
	}
	if len(dy) != outLen {
		return nil, fmt.Errorf("autodiff: the output gradient has %d values, the output %d", len(dy), outLen)
	}
	dx := make([][]float32, len(in))
	if need[0] {
		if transposed {
			dx[0], err = model.ConvForward(e, g, dy, wv)
		} else {
			dx[0], err = model.ConvAdjoint(e, g, dy, wv)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(need) > 1 && need[1] && in[1] != nil {
		if transposed {
			dx[1], err = model.ConvWeightGradient(e, g, dy, xv)
		} else {
			dx[1], err = model.ConvWeightGradient(e, g, xv, dy)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(in) > 2 && in[2] != nil && need[2] {
		db := make([]float64, channels)
		for i, v := range dy {
			db[i/max(size, 1)%channels] += float64(v)
		}
		dx[2] = f32(db)
	}
	return dx, nil
}
