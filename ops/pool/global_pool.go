package pool

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// GlobalAveragePool is the GlobalAveragePool operator.
var GlobalAveragePool = ops.Op{
	ops.Register(ops.Descriptor{Type: "GlobalAveragePool", Since: 1, Fold: true}, buildGlobalPool("GlobalAveragePool")),
}

// GlobalMaxPool is the GlobalMaxPool operator.
var GlobalMaxPool = ops.Op{
	ops.Register(ops.Descriptor{Type: "GlobalMaxPool", Since: 1, Fold: true}, buildGlobalPool("GlobalMaxPool")),
}

func init() {
	ops.Register(ops.Descriptor{Type: "GlobalLpPool", Since: 2, Fold: true}, buildGlobalLpPool)
}

// GlobalLpPoolAttrs are GlobalLpPool's attributes.
type GlobalLpPoolAttrs struct {
	P int64 `onnx:"p" default:"2"`
}

// globalPoolShape checks x is [N, C, D...] with non-empty spatial
// dimensions and returns N·C, the spatial size and the output shape
// [N, C, 1...].
func globalPoolShape(op string, x *tensor.Tensor) (planes, size int, out []int, err error) {
	if x.Rank() < 2 {
		return 0, 0, nil, ops.InputErrorf("%s takes an input of rank 2 or more (N, C, spatial...), got shape %v", op, x.Shape)
	}
	size = ops.ProdInts(x.Shape[2:])
	if size == 0 && x.Shape[0]*x.Shape[1] != 0 {
		return 0, 0, nil, ops.InputErrorf("%s over empty spatial dimensions (shape %v)", op, x.Shape)
	}
	out = make([]int, x.Rank())
	for i := range out {
		out[i] = 1
	}
	out[0], out[1] = x.Shape[0], x.Shape[1]
	return x.Shape[0] * x.Shape[1], size, out, nil
}

// globalPoolOp is a compiled GlobalAveragePool or GlobalMaxPool.
type globalPoolOp struct {
	op    string
	avg   bool
	sum32 func([]float32) float64 // the engine's float32 plane sum
}

func buildGlobalPool(op string) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return &globalPoolOp{op: op, avg: op == "GlobalAveragePool", sum32: n.Engine.Table().PoolSum}, nil
	}
}

func (o *globalPoolOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	planes, size, out, err := globalPoolShape(o.op, x)
	if err != nil {
		return nil, err
	}
	var y any
	switch d := x.Data.(type) {
	case []float32:
		y, err = globalPool(d, planes, size, o.avg, o.sum32, c)
	case []float64:
		y, err = globalPool(d, planes, size, o.avg, o.sum32, c)
	case []tensor.F16, []tensor.BF16:
		f, _ := ops.WidenHalf(x)
		var yf []float32
		yf, err = globalPool(f, planes, size, o.avg, o.sum32, c)
		y = ops.NarrowHalf(x.DType, yf)
	default:
		return nil, ops.InputErrorf("%s does not take %v", o.op, x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: out, Data: y}}, nil
}

// globalPool returns each plane's mean (avg) or maximum (NaN if it holds
// one).
// Means add in float64, four lanes at a time. The planes split across
// the engine's cores, each summed alone.
func globalPool[T tensor.Float](x []T, planes, size int, avg bool, sum32 func([]float32) float64, oc *ops.Context) ([]T, error) {
	y := ops.Output[T](oc, planes) // every plane's value is written
	cost := tapCost
	if _, ok := any(x).([]float32); ok && avg {
		// The engine's PoolSum kernel: each value widened to float64 and
		// added, with a plane's partial sums combined at its end (about
		// 0.15 ns a value on AVX2 for planes of a few hundred).
		cost = 2 * ops.VectorCost
	}
	err := oc.ParallelRows(planes, cost*size, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			y[p] = globalPlane(x[p*size:(p+1)*size], avg, sum32)
		}
	})
	if err != nil {
		return nil, err
	}
	return y, nil
}

// globalPlane returns the mean (avg) or the maximum of one plane.
func globalPlane[T tensor.Float](row []T, avg bool, sum32 func([]float32) float64) T {
	size := len(row)
	if r32, ok := any(row).([]float32); ok && avg {
		return T(sum32(r32) / float64(size))
	}
	if avg {
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= len(row); i += 4 {
			s0 += float64(row[i])
			s1 += float64(row[i+1])
			s2 += float64(row[i+2])
			s3 += float64(row[i+3])
		}
		for ; i < len(row); i++ {
			s0 += float64(row[i])
		}
		return T((s0 + s1 + s2 + s3) / float64(size))
	}
	m := T(math.Inf(-1))
	for _, v := range row {
		m = max(m, v)
	}
	return m
}

// globalLpPoolOp is a compiled GlobalLpPool.
type globalLpPoolOp struct{ p float64 }

func buildGlobalLpPool(n *ops.Node, at *GlobalLpPoolAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.P < 1 {
		return nil, fmt.Errorf("GlobalLpPool p = %d, must be at least 1", at.P)
	}
	return &globalLpPoolOp{p: float64(at.P)}, nil
}

func (o *globalLpPoolOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	planes, size, out, err := globalPoolShape("GlobalLpPool", x)
	if err != nil {
		return nil, err
	}
	return ops.Result(poolFloats("GlobalLpPool", x, out, func(xs, y []float64) error {
		return c.ParallelRows(planes, lpCost(o.p)*size, func(p0, p1 int) {
			for pl := p0; pl < p1; pl++ {
				var s float64
				for _, v := range xs[pl*size : (pl+1)*size] {
					s += lpPow(v, o.p)
				}
				y[pl] = lpRoot(s, o.p)
			}
		})
	}))
}
