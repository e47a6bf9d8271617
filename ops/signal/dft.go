package signal

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "DFT", Since: 17, Until: 19, Fold: true}, buildDFT17)
	ops.Register(ops.Descriptor{Type: "DFT", Since: 20, Fold: true}, buildDFT)
}

// DFTAttrs are DFT's attributes from opset 20 (the axis is an input).
type DFTAttrs struct {
	Inverse  bool `onnx:"inverse"`
	OneSided bool `onnx:"onesided"`
}

// DFT17Attrs are DFT's attributes in opsets 17–19.
type DFT17Attrs struct {
	Axis     int64 `onnx:"axis" default:"1"`
	Inverse  bool  `onnx:"inverse"`
	OneSided bool  `onnx:"onesided"`
}

// dft is a compiled DFT: the axis it transforms (the attribute, or the
// default of the axis input from opset 20), and which transform.
type dft struct {
	axis      int64
	axisInput bool // opset 20 on: input 2, when present, names the axis
	inverse   bool
	onesided  bool
}

func buildDFT17(n *ops.Node, at *DFT17Attrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	return dft{axis: at.Axis, inverse: at.Inverse, onesided: at.OneSided}, nil
}

func buildDFT(n *ops.Node, at *DFTAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 3, 1, 1); err != nil {
		return nil, err
	}
	return dft{axis: -2, axisInput: true, inverse: at.Inverse, onesided: at.OneSided}, nil
}

// Run takes the signal, the optional dft_length and (from opset 20) the
// optional axis, and returns the transform.
func (op dft) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	axis := op.axis
	if a := ops.Optional(in, 2); op.axisInput && a != nil {
		v, err := ops.ScalarInt(a, "axis")
		if err != nil {
			return nil, err
		}
		axis = v
	}
	return op.transform(c, in[0], ops.Optional(in, 1), axis)
}

// transform computes the DFT of x along axis, of length given by the
// one-element tensor length when not nil.
func (op dft) transform(c *ops.Context, x, length *tensor.Tensor, axis int64) ([]*tensor.Tensor, error) {
	inverse, onesided := op.inverse, op.onesided
	if !x.DType.IsFloat() {
		return nil, ops.InputErrorf("DFT takes a floating-point signal, got %v", x.DType)
	}
	r := x.Rank()
	if r < 2 || (x.Shape[r-1] != 1 && x.Shape[r-1] != 2) {
		return nil, ops.InputErrorf("DFT takes a signal whose last axis holds 1 (real) or 2 (complex) values, got %s", tensor.ShapeString(x.Shape))
	}
	if axis < 0 {
		axis += int64(r)
	}
	if axis < 0 || axis > int64(r-2) {
		return nil, ops.InputErrorf("DFT axis must not be the last (complex) axis of rank %d", r)
	}
	a := int(axis)
	complexIn := x.Shape[r-1] == 2
	dim := x.Shape[a]
	n := dim
	if inverse && onesided {
		n = 2 * (dim - 1)
	}
	if length != nil {
		l, err := ops.ScalarInt(length, "dft_length")
		if err != nil {
			return nil, err
		}
		if l < 1 || l > maxDFTLength {
			return nil, ops.InputErrorf("dft_length %d is outside [1, %d]", l, maxDFTLength)
		}
		n = int(l)
	}
	if n < 1 {
		return nil, ops.InputErrorf("DFT of length %d", n)
	}
	if onesided && !inverse && complexIn {
		return nil, ops.InputErrorf("a one-sided forward DFT takes a real signal")
	}
	if onesided && inverse && !complexIn {
		return nil, ops.InputErrorf("a one-sided inverse DFT takes a complex spectrum")
	}
	outBins, outComps := n, 2
	switch {
	case onesided && !inverse:
		outBins = n/2 + 1
	case onesided && inverse:
		outComps = 1
	}
	outShape := append([]int(nil), x.Shape...)
	outShape[a], outShape[r-1] = outBins, outComps
	total, err := tensor.NumElements(outShape)
	if err != nil {
		return nil, ops.InputErrorf("DFT output %s: %v", tensor.ShapeString(outShape), err)
	}
	xv := floatValues(x)
	outer, inner := 1, 1
	for _, d := range x.Shape[:a] {
		outer *= d
	}
	for _, d := range x.Shape[a+1 : r-1] {
		inner *= d
	}
	comps := x.Shape[r-1]
	// The output in float64 and its cast; a transform's work space.
	if err := c.Reserve(16*int64(total) + fourierBytes(n)); err != nil {
		return nil, err
	}
	out := make([]float64, total)
	re, im := make([]float64, n), make([]float64, n)
	f, err := newFourier(c, n)
	if err != nil {
		return nil, err
	}
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			clear(re)
			clear(im)
			at := func(k int) int { return ((o*dim+k)*inner + j) * comps }
			if onesided && inverse {
				// Rebuild the full spectrum from its non-redundant half.
				for k := 0; k < dim && k <= n/2; k++ {
					re[k], im[k] = xv[at(k)], xv[at(k)+1]
					if k > 0 && k < n-k {
						re[n-k], im[n-k] = re[k], -im[k]
					}
				}
			} else {
				for k := 0; k < min(dim, n); k++ {
					re[k] = xv[at(k)]
					if complexIn {
						im[k] = xv[at(k)+1]
					}
				}
			}
			if err := f.transform(c, re, im, inverse); err != nil {
				return nil, err
			}
			for k := 0; k < outBins; k++ {
				p := ((o*outBins+k)*inner + j) * outComps
				out[p] = re[k]
				if outComps == 2 {
					out[p+1] = im[k]
				}
			}
		}
	}
	return []*tensor.Tensor{floatTensor(x.DType, outShape, out)}, nil
}
