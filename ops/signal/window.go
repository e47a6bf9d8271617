package signal

import (
	"math"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// HannWindow, HammingWindow and BlackmanWindow are one idea: the
// generalised cosine window a0 - a1·cos(2πn/N) + a2·cos(4πn/N) of size
// samples, N = size (periodic) or size-1 (symmetric).
func init() {
	ops.Register(ops.Descriptor{Type: "HannWindow", Since: 17, Fold: true}, cosineWindow{0.5, 0.5, 0}.build)
	ops.Register(ops.Descriptor{Type: "HammingWindow", Since: 17, Fold: true}, cosineWindow{25.0 / 46, 1 - 25.0/46, 0}.build)
	ops.Register(ops.Descriptor{Type: "BlackmanWindow", Since: 17, Fold: true}, cosineWindow{0.42, 0.5, 0.08}.build)
}

// WindowAttrs are the attributes of HannWindow, HammingWindow and
// BlackmanWindow.
type WindowAttrs struct {
	OutputDType int64 `onnx:"output_datatype" default:"1"`
	Periodic    bool  `onnx:"periodic" default:"true"`
}

// cosineWindow holds the coefficients of one window operator.
type cosineWindow struct{ a0, a1, a2 float64 }

// window is a compiled window operator: its coefficients, whether it is
// periodic, and its output type.
type window struct {
	cosineWindow
	periodic bool
	dt       tensor.DataType
}

func (cw cosineWindow) build(n *ops.Node, at *WindowAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	dt, err := onnx.DataTypeFromONNX(onnxpb.DataType(at.OutputDType))
	if err != nil {
		return nil, err
	}
	return window{cosineWindow: cw, periodic: at.Periodic, dt: dt}, nil
}

// Run takes the window's size and returns the window.
func (op window) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	size, err := ops.ScalarInt(in[0], "size")
	if err != nil {
		return nil, err
	}
	if size < 0 || size > maxDFTLength {
		return nil, ops.InputErrorf("window size %d is outside [0, %d]", size, maxDFTLength)
	}
	den := float64(size)
	if !op.periodic {
		den = float64(size - 1)
	}
	if err := c.Reserve(16 * int64(size)); err != nil { // the window in float64, and its cast
		return nil, err
	}
	w := make([]float64, size)
	err = c.InPieces(len(w), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := 2 * math.Pi * float64(i) / den
			w[i] = op.a0 - op.a1*math.Cos(x) + op.a2*math.Cos(2*x)
		}
	})
	if err != nil {
		return nil, err
	}
	t, err := tensorops.CastToContext(c, tensor.From([]int{int(size)}, w), op.dt)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}
