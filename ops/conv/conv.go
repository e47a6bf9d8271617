package conv

import (
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Conv is the Conv operator (11 and 22 widened its types, one
// implementation serves every opset).
var Conv = ops.Op{ops.Register(ops.Descriptor{Type: "Conv", Since: 1, Fold: true}, buildConv)}

// Convolution is a compiled Conv: its attributes and, when the node's
// weight is a constant, the weight as the kernels hold it.
type Convolution struct {
	at   *ConvAttrs
	held *held
}

func buildConv(n *ops.Node, at *ConvAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	op := &Convolution{at: at}
	if w := n.Const(1); w != nil {
		if err := checkHeldShape("Conv", w.Shape, at.KernelShape); err != nil {
			return nil, err
		}
		h, l, err := holdWeight(n, w, int(at.Group), false, nil)
		if err != nil {
			return nil, err
		}
		if h != nil {
			n.AddLayer(l.k, l.cols, l.kernels)
			holdWeightInput(n)
		}
		op.held = h
	}
	return op, nil
}

// holdWeightInput tells the compiler the kernels hold the weight (input
// 1) from here on; builds with the autodiff tag keep it in the trace, for
// weight gradients.
func holdWeightInput(n *ops.Node) {
	if !dispatch.AutodiffBuilt {
		n.HoldInputs(1)
	}
}

// Geometry resolves the convolution of input shape x by weight shape w
// (the held weight's, when the kernels hold it).
func (o *Convolution) Geometry(x, w []int) (*Geometry, error) { return o.at.Geometry(x, w) }

// HeldWeight returns, in builds with the autodiff tag, the weight the
// kernels multiply by in the file's layout: for int8 layers the
// dequantized weight (the straight-through estimator's), else the weight
// itself. It returns nil when the weight is not a constant the kernels
// hold, or the build has no autodiff support.
func (o *Convolution) HeldWeight() *tensor.Tensor { return o.held.tensor() }

func (o *Convolution) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(runConv(c, o.at, o.held, in[0], in[1], input(in, 2)))
}

// input returns in[i], or nil when the node has no input i.
func input(in []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(in) {
		return in[i]
	}
	return nil
}

// weightShape returns the shape of the weight op multiplies x by (the
// held one, or else w), after checking x is floating-point and of the
// weight's type.
func weightShape(op string, held *held, x, w *tensor.Tensor) ([]int, error) {
	var wShape []int
	var wType tensor.DataType
	switch {
	case held != nil:
		wShape, wType = held.shape, held.dtype
	case w == nil:
		return nil, ops.InputErrorf("%s has no weight", op)
	default:
		wShape, wType = w.Shape, w.DType
	}
	if !isFloat(x.DType) {
		return nil, ops.InputErrorf("%s takes floating-point inputs, got %v", op, x.DType)
	}
	if x.DType != wType {
		return nil, ops.InputErrorf("%s input is %v, its weight %v", op, x.DType, wType)
	}
	return wShape, nil
}

// runConv runs Conv on x with the held weight, or else w.
func runConv(c *ops.Context, at *ConvAttrs, held *held, x, w, b *tensor.Tensor) (*tensor.Tensor, error) {
	wShape, err := weightShape("Conv", held, x, w)
	if err != nil {
		return nil, err
	}
	g, err := at.Geometry(x.Shape, wShape)
	if err != nil {
		return nil, err
	}
	outShape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(outShape)
	if x.DType == tensor.Float64 {
		if _, err := biasOf("Conv", b, x.DType, g.M); err != nil {
			return nil, err
		}
		var bv []float64
		if b != nil {
			bv = b.Data.([]float64)
		}
		y := make([]float64, size)
		if err := directConv(c, g, x.Data.([]float64), w.Data.([]float64), bv, y); err != nil {
			return nil, err
		}
		return tensor.From(outShape, y), nil
	}
	bias, err := biasOf("Conv", b, x.DType, g.M)
	if err != nil {
		return nil, err
	}
	xv, _ := floats(x)
	y := make([]float32, size)
	switch {
	case held != nil && held.dw != nil:
		err = held.dw.forward(c, g, xv, bias, y)
	case held != nil && held.planar != nil:
		err = held.planar.planarTo(c, g, xv, y, &output{bias: bias})
	case held != nil:
		err = held.w.forward(c, g, xv, bias, y)
	case g.depthwise():
		wv, _ := floats(w)
		err = (&depthwiseWeights{w: wv}).forward(c, g, xv, bias, y)
	default:
		wv, _ := floats(w)
		cw, perr := prepareWeights(wv, wShape, g.Group, false, false, 0)
		if perr != nil {
			return nil, perr
		}
		err = cw.forward(c, g, xv, bias, y)
	}
	if err != nil {
		return nil, err
	}
	return fromFloats(x.DType, outShape, y), nil
}
