//go:build autodiff

package autodiff

import (
	"fmt"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/tensor"
)

// Backward passes of Conv and ConvTranspose. A convolution y = conv(x, W)
// + b has
//
//	dx = convᵀ(dy, W)      (ConvTranspose of dy)
//	dW = Σ dy ⊗ im2col(x)  (conv.WeightGradient)
//	db = Σ_{batch, positions} dy
//
// and ConvTranspose, y = convᵀ(x, W) + b, the mirror: dx = conv(dy, W),
// dW = Σ x ⊗ im2col(dy). Every product runs on the float tiles of the
// engine the model runs on (Step.Exec). A weight the kernels hold as int8
// is used dequantized (the straight-through estimator): the gradient flows
// as if through the weights the forward pass multiplied by. The compiled
// operator (conv.Convolution, conv.Transposed) gives the geometry and the
// weight its kernels hold.

func init() {
	bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
		op, ok := st.Operator.(*conv.Convolution)
		if !ok {
			return nil, fmt.Errorf("autodiff: Conv compiled to %T", st.Operator)
		}
		return convBackward(st.Exec, op.Geometry, op.HeldWeight(), false, in, dy, need)
	}, conv.Conv)
	bindGrad(func(st model.Step, in []*tensor.Tensor, y *tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
		op, ok := st.Operator.(*conv.Transposed)
		if !ok {
			return nil, fmt.Errorf("autodiff: ConvTranspose compiled to %T", st.Operator)
		}
		return convBackward(st.Exec, op.Geometry, op.HeldWeight(), true, in, dy, need)
	}, conv.ConvTranspose)
}

// convBackward returns the gradients of x, W and b on e, the engine the
// node ran on. held, when not nil, is the weight as the kernels multiply by
// it; otherwise in[1] is.
func convBackward(e *gemm.Engine, geometry func(x, w []int) (*conv.Geometry, error), held *tensor.Tensor, transposed bool, in []*tensor.Tensor, dy []float32, need []bool) ([][]float32, error) {
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
			dx[0], err = conv.Forward(e, g, dy, wv)
		} else {
			dx[0], err = conv.Adjoint(e, g, dy, wv)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(need) > 1 && need[1] && in[1] != nil {
		if transposed {
			dx[1], err = conv.WeightGradient(e, g, dy, xv)
		} else {
			dx[1], err = conv.WeightGradient(e, g, xv, dy)
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
