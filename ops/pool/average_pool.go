package pool

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// AveragePool is the AveragePool operator, by opset range.
// AveragePool gained count_include_pad at 7, ceil_mode at 10 and
// dilations at 19.
var AveragePool = ops.Op{
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 1, Until: 6, Fold: true}, buildAveragePool),
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 7, Until: 9, Fold: true}, buildAveragePool),
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 10, Until: 18, Fold: true}, buildAveragePool),
	ops.Register(ops.Descriptor{Type: "AveragePool", Since: 19, Fold: true}, buildAveragePool),
}

// AveragePoolAttrs are AveragePool's attributes.
type AveragePoolAttrs struct {
	Window
	CountIncludePad bool `onnx:"count_include_pad"`
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
	s, err := at.spec("AveragePool")
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
	var y any
	switch d := x.Data.(type) {
	case []float32:
		y, err = avgPool(d, g, o.include, c)
	case []float64:
		y, err = avgPool(d, g, o.include, c)
	case []tensor.F16, []tensor.BF16:
		f, _ := ops.WidenHalf(x)
		var yf []float32
		yf, err = avgPool(f, g, o.include, c)
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
// not count). A float32 window that is the whole plane is a global mean
// (globalPool); other 2-D float32 windows run pool2D.
func avgPool[T tensor.Float](x []T, g *Geometry, include bool, oc *ops.Context) ([]T, error) {
	n := g.Planes() * g.OutSize()
	if xf, ok := any(x).([]float32); ok && g.wholePlane() {
		// One window, the whole plane (a network's last pool, 7×7 over
		// ResNet-50's 2048 planes): a global mean, each plane summed on
		// the engine's PoolSum kernel as GlobalAveragePool sums it.
		y, err := globalPool(xf, g.Planes(), g.InSize(), true, oc.Engine().Table().PoolSum, oc)
		return any(y).([]T), err
	}
	if xf, ok := any(x).([]float32); ok && len(g.In) == 2 {
		kind := poolAvg
		if include {
			kind = poolAvgPadding
		}
		y := oc.Float32Output(n) // pool2D writes every value
		return any(y).([]T), pool2D(xf, y, g, kind, oc)
	}
	y := make([]T, n)
	return y, avgPoolND(x, y, g, include, oc)
}

// avgPoolND is the reference for average pooling: any rank, window by
// window, summing in row-major kernel order. The outputs split across
// the engine's cores, each computed alone.
func avgPoolND[T tensor.Float](x, y []T, g *Geometry, include bool, oc *ops.Context) error {
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	if os == 0 {
		return nil
	}
	return oc.ParallelRows(len(y), tapCost*g.kernelTaps(), func(i0, i1 int) {
		w := w.fork()
		for i := i0; i < i1; i++ {
			p, o := i/os, i%os
			xp := x[p*is : (p+1)*is]
			var s T
			offs := w.At(o)
			for _, off := range offs {
				s += xp[off]
			}
			if include {
				y[i] = s / T(w.area)
			} else {
				y[i] = s / T(len(offs))
			}
		}
	})
}
