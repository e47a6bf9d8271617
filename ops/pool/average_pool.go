package pool

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// AveragePool gained count_include_pad at 7, ceil_mode at 10 and
	// dilations at 19.
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 1, Until: 6, Fold: true}, buildAveragePool)
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 7, Until: 9, Fold: true}, buildAveragePool)
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 10, Until: 18, Fold: true}, buildAveragePool)
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 19, Fold: true}, buildAveragePool)
}

// AveragePoolAttrs are AveragePool's attributes.
type AveragePoolAttrs struct {
	AutoPad         string  `onnx:"auto_pad" default:"NOTSET"`
	KernelShape     []int64 `onnx:"kernel_shape"`
	Pads            []int64 `onnx:"pads"`
	Strides         []int64 `onnx:"strides"`
	Dilations       []int64 `onnx:"dilations"`
	CeilMode        bool    `onnx:"ceil_mode"`
	CountIncludePad bool    `onnx:"count_include_pad"`
}

// validate checks the window attributes; the builder refuses the node
// when they are malformed.
func (a *AveragePoolAttrs) validate() (*spec, error) {
	return newSpec("AveragePool", a.AutoPad, a.KernelShape, a.Pads, a.Strides, a.Dilations, a.CeilMode)
}

// Geometry returns how the node's windows lie over an input of the given
// shape.
func (a *AveragePoolAttrs) Geometry(shape []int) (*Geometry, error) {
	s, err := a.validate()
	if err != nil {
		return nil, err
	}
	return s.geometry(shape)
}

// averagePoolOp is a compiled AveragePool.
type averagePoolOp struct {
	spec    *spec
	include bool // count_include_pad
}

func buildAveragePool(n *ops.Node, at *AveragePoolAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.CheckAttrOpsets(ops.OpsetAttr{Name: "count_include_pad", Since: 7}, ops.OpsetAttr{Name: "ceil_mode", Since: 10}, ops.OpsetAttr{Name: "dilations", Since: 19}); err != nil {
		return nil, err
	}
	s, err := at.validate()
	if err != nil {
		return nil, err
	}
	return &averagePoolOp{spec: s, include: at.CountIncludePad}, nil
}

func (o *averagePoolOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	g, err := o.spec.geometry(x.Shape)
	if err != nil {
		return nil, err
	}
	pc := newPacer(c)
	var y any
	switch d := x.Data.(type) {
	case []float32:
		y, err = avgPool(d, g, o.include, pc)
	case []float64:
		y, err = avgPool(d, g, o.include, pc)
	case []tensor.F16, []tensor.BF16:
		f, _ := ops.WidenHalf(x)
		var yf []float32
		yf, err = avgPool(f, g, o.include, pc)
		y = ops.NarrowHalf(x.DType, yf)
	default:
		return nil, ops.InputErrorf("AveragePool does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: g.OutShape(), Data: y}}, nil
}

// avgPool returns the mean of each window: its sum over the input
// elements it covers, divided by their count, or with include by the
// number of its positions inside the padded input (padding counts as
// zeros; positions past the end padding, which only ceil_mode makes, do
// not count). 2-D float32 runs pool2D.
func avgPool[T tensor.Float](x []T, g *Geometry, include bool, pc *pacer) ([]T, error) {
	y := make([]T, g.Planes()*g.OutSize())
	if xf, ok := any(x).([]float32); ok && len(g.In) == 2 {
		kind := poolAvg
		if include {
			kind = poolAvgPadding
		}
		return y, pool2D(xf, any(y).([]float32), g, kind, pc)
	}
	return y, avgPoolND(x, y, g, include, pc)
}

// avgPoolND is the reference for average pooling: any rank, window by
// window, summing in row-major kernel order.
func avgPoolND[T tensor.Float](x, y []T, g *Geometry, include bool, pc *pacer) error {
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	for p := 0; p < g.Planes(); p++ {
		xp := x[p*is : (p+1)*is]
		for o := 0; o < os; o++ {
			var s T
			offs := w.At(o)
			if err := pc.after(len(offs)); err != nil {
				return err
			}
			for _, off := range offs {
				s += xp[off]
			}
			if include {
				y[p*os+o] = s / T(w.area)
			} else {
				y[p*os+o] = s / T(len(offs))
			}
		}
	}
	return nil
}
