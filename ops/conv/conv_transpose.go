package conv

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// ConvTranspose is the ConvTranspose operator, by opset range: 11 changed
// how SAME_UPPER splits an odd padding.
var ConvTranspose = ops.Op{
	ops.Register(ops.Descriptor{Type: "ConvTranspose", Since: 1, Until: 10, Fold: true}, buildConvTranspose),
	ops.Register(ops.Descriptor{Type: "ConvTranspose", Since: 11, Fold: true}, buildConvTranspose),
}

// Transposed is a compiled ConvTranspose: its attributes, the opset of
// its model and, when the node's weight is a constant, the weight as the
// kernels hold it.
type Transposed struct {
	at    *ConvTransposeAttrs
	opset int64
	held  *held
}

func buildConvTranspose(n *ops.Node, at *ConvTransposeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	for _, v := range at.OutputPadding {
		if v < 0 || v > maxAttr {
			return nil, fmt.Errorf("output_padding %v: each value must lie in [0, 2^32]", at.OutputPadding)
		}
	}
	for _, v := range at.OutputShape {
		if v < 0 || v > maxAttr {
			return nil, fmt.Errorf("output_shape %v: each value must lie in [0, 2^32]", at.OutputShape)
		}
	}
	op := &Transposed{at: at, opset: n.Opset}
	if w := n.Const(1); w != nil {
		if err := checkHeldShape("ConvTranspose", w.Shape, at.KernelShape); err != nil {
			return nil, err
		}
		h, l, err := holdWeight(n, w, int(at.Group), true, nil)
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

// Geometry resolves the ConvTranspose of input shape x by weight shape w
// as the geometry of the convolution it is the adjoint of.
func (o *Transposed) Geometry(x, w []int) (*Geometry, error) { return o.at.Geometry(x, w, o.opset) }

// HeldWeight is Convolution.HeldWeight for ConvTranspose.
func (o *Transposed) HeldWeight() *tensor.Tensor { return o.held.tensor() }

func (o *Transposed) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, w, b := in[0], in[1], input(in, 2)
	wShape, err := weightShape("ConvTranspose", o.held, x, w)
	if err != nil {
		return nil, err
	}
	g, err := o.Geometry(x.Shape, wShape)
	if err != nil {
		return nil, err
	}
	outShape := append([]int{g.Batch, g.C}, g.In...)
	size, _ := tensor.NumElements(outShape)
	if x.DType == tensor.Float64 {
		if _, err := biasOf("ConvTranspose", b, x.DType, g.C); err != nil {
			return nil, err
		}
		var bv []float64
		if b != nil {
			bv = b.Data.([]float64)
		}
		y := make([]float64, size)
		if err := directAdjoint(c, g, x.Data.([]float64), w.Data.([]float64), bv, y); err != nil {
			return nil, err
		}
		return ops.Result(tensor.From(outShape, y), nil)
	}
	bias, err := biasOf("ConvTranspose", b, x.DType, g.C)
	if err != nil {
		return nil, err
	}
	xv, _ := floats(x)
	y := make([]float32, size)
	cw := (*gemmWeights)(nil)
	if o.held != nil {
		cw = o.held.w
	} else {
		wv, _ := floats(w)
		if cw, err = prepareWeights(wv, wShape, g.Group, true, false, 0); err != nil {
			return nil, err
		}
	}
	if err := cw.adjoint(c, g, xv, bias, y); err != nil {
		return nil, err
	}
	return ops.Result(fromFloats(x.DType, outShape, y), nil)
}
