package pool

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// MaxPool is the MaxPool operator, by opset range.
// MaxPool gained its Indices output and storage_order at 8, ceil_mode
// and dilations at 10; later versions widened its types.
var MaxPool = ops.Op{
	ops.Register(ops.Descriptor{Type: "MaxPool", Since: 1, Until: 7, Fold: true}, buildMaxPool),
	ops.Register(ops.Descriptor{Type: "MaxPool", Since: 8, Until: 9, Fold: true}, buildMaxPool),
	ops.Register(ops.Descriptor{Type: "MaxPool", Since: 10, Fold: true}, buildMaxPool),
}

// MaxPoolAttrs are MaxPool's attributes.
type MaxPoolAttrs struct {
	Window
	StorageOrder int64 `onnx:"storage_order"`
}

// maxPoolOp is a compiled MaxPool.
type maxPoolOp struct {
	spec     *spec
	wantIdx  bool // the node reads Indices
	colMajor bool // storage_order 1
}

func buildMaxPool(n *ops.Node, at *MaxPoolAttrs) (ops.Operator, error) {
	maxOut := 2
	if n.Opset < 8 {
		maxOut = 1
	}
	if err := n.CheckArity(1, 1, 1, maxOut); err != nil {
		return nil, err
	}
	if err := n.CheckAttrOpsets(ops.OpsetAttr{Name: "storage_order", Since: 8}, ops.OpsetAttr{Name: "ceil_mode", Since: 10}, ops.OpsetAttr{Name: "dilations", Since: 10}); err != nil {
		return nil, err
	}
	s, err := at.spec("MaxPool")
	if err != nil {
		return nil, err
	}
	if at.StorageOrder != 0 && at.StorageOrder != 1 {
		return nil, fmt.Errorf("storage_order %d is not 0 (row major) or 1 (column major)", at.StorageOrder)
	}
	return &maxPoolOp{spec: s, wantIdx: len(n.Outputs) > 1 && n.Outputs[1] != "", colMajor: at.StorageOrder == 1}, nil
}

func (o *maxPoolOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	g, err := o.spec.geometry(x.Shape)
	if err != nil {
		return nil, err
	}
	var y any
	var idx []int64
	switch d := x.Data.(type) {
	case []float32:
		y, idx, err = maxPool(d, g, o.wantIdx, c)
	case []float64:
		y, idx, err = maxPool(d, g, o.wantIdx, c)
	case []int8:
		y, idx, err = maxPool(d, g, o.wantIdx, c)
	case []uint8:
		y, idx, err = maxPool(d, g, o.wantIdx, c)
	case []tensor.F16, []tensor.BF16:
		f, _ := ops.WidenHalf(x)
		var yf []float32
		yf, idx, err = maxPool(f, g, o.wantIdx, c)
		y = ops.NarrowHalf(x.DType, yf)
	default:
		return nil, ops.InputErrorf("MaxPool does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	out := []*tensor.Tensor{{DType: x.DType, Shape: g.OutShape(), Data: y}}
	if o.wantIdx {
		if o.colMajor {
			columnMajor(idx, g)
		}
		out = append(out, tensor.From(g.OutShape(), idx))
	}
	return out, nil
}

// lowest returns the identity of max over T: -Inf for floats, the
// smallest value for integers.
func lowest[T tensor.Numeric]() T {
	var z T
	switch any(z).(type) {
	case float32, float64:
		inf := math.Inf(-1)
		return T(inf)
	case int8:
		v := int8(math.MinInt8)
		return T(v)
	case int16:
		v := int16(math.MinInt16)
		return T(v)
	case int32:
		v := int32(math.MinInt32)
		return T(v)
	case int64:
		v := int64(math.MinInt64)
		return T(v)
	}
	return 0
}

// maxPool returns the maximum of each window (NaN if it holds one, as
// math.Max; -Inf, or the type's smallest value, for a window over padding
// only), and with wantIdx the flat row-major input index of the first
// element equal to it (-1 for an empty window). 2-D float32 pooling
// without indices runs pool2D.
func maxPool[T tensor.Numeric](x []T, g *Geometry, wantIdx bool, oc *ops.Context) ([]T, []int64, error) {
	n := g.Planes() * g.OutSize()
	if xf, ok := any(x).([]float32); ok && len(g.In) == 2 && !wantIdx {
		y := oc.Float32Output(n) // pool2D writes every value
		err := pool2D(xf, y, g, poolMax, oc)
		return any(y).([]T), nil, err
	}
	y := make([]T, n)
	var idx []int64
	if wantIdx {
		idx = make([]int64, len(y))
	}
	err := maxPoolND(x, y, idx, g, oc)
	return y, idx, err
}

// maxPoolND is the reference every pooling path is tested against: any
// rank, any type, window by window. The outputs split across the
// engine's cores, each computed alone.
func maxPoolND[T tensor.Numeric](x, y []T, idx []int64, g *Geometry, oc *ops.Context) error {
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	low := lowest[T]()
	if os == 0 {
		return nil
	}
	return oc.ParallelRows(len(y), tapCost*g.kernelTaps(), func(i0, i1 int) {
		w := w.fork()
		for i := i0; i < i1; i++ {
			p, o := i/os, i%os
			xp := x[p*is : (p+1)*is]
			offs := w.At(o)
			m := low
			for _, off := range offs {
				m = max(m, xp[off])
			}
			y[i] = m
			if idx == nil {
				continue
			}
			best := int64(-1)
			for _, off := range offs {
				if v := xp[off]; v == m || v != v && m != m {
					best = int64(p*is + off)
					break
				}
			}
			idx[i] = best
		}
	})
}

// columnMajor rewrites row-major plane offsets in idx (flat input
// indices) as column-major ones: storage_order 1.
func columnMajor(idx []int64, g *Geometry) {
	is := int64(g.InSize())
	r := len(g.In)
	coords := make([]int64, r)
	for i, v := range idx {
		if v < 0 {
			continue
		}
		plane, off := v/is, v%is
		col, stride := int64(0), int64(1)
		for a := r - 1; a >= 0; a-- {
			coords[a] = off % int64(g.In[a])
			off /= int64(g.In[a])
		}
		for a := 0; a < r; a++ {
			col += coords[a] * stride
			stride *= int64(g.In[a])
		}
		idx[i] = plane*is + col
	}
}
