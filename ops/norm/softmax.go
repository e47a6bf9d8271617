package norm

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Softmax and LogSoftmax are the operators, by opset range.
var (
	Softmax    = softmaxOps("Softmax")
	LogSoftmax = softmaxOps("LogSoftmax")
)

// softmaxOps registers op (Softmax or LogSoftmax) before and from opset
// 13, when it stopped coercing its input to 2-D.
func softmaxOps(op string) ops.Op {
	return ops.Op{
		ops.Register(ops.Descriptor{Type: op, Since: 1, Until: 12, Fold: true}, func(n *ops.Node, at *SoftmaxLegacyAttrs) (ops.Operator, error) {
			return buildSoftmax(n, op, at.Axis, true)
		}),
		ops.Register(ops.Descriptor{Type: op, Since: 13, Fold: true}, func(n *ops.Node, at *SoftmaxAttrs) (ops.Operator, error) {
			return buildSoftmax(n, op, at.Axis, false)
		}),
	}
}

// SoftmaxAttrs are the attributes of Softmax and LogSoftmax from opset 13:
// normalised along axis alone.
type SoftmaxAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
}

// SoftmaxLegacyAttrs are their attributes before opset 13: the input is
// coerced to 2-D at axis and normalised over the flattened trailing block.
type SoftmaxLegacyAttrs struct {
	Axis int64 `onnx:"axis" default:"1"`
}

// softmaxOp is a compiled Softmax or LogSoftmax; legacy selects the
// pre-13 semantics.
type softmaxOp struct {
	op     string
	axis   int64
	legacy bool
	log    bool
}

func buildSoftmax(n *ops.Node, op string, axis int64, legacy bool) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return &softmaxOp{op: op, axis: axis, legacy: legacy, log: op == "LogSoftmax"}, nil
}

func (s *softmaxOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	outer, dim, inner, err := softmaxGeometry(x, s.axis, s.legacy)
	if err != nil {
		return nil, err
	}
	f32 := func(x []float32) ([]float32, error) { return logSoftmax(x, outer, dim, inner, c) }
	f64 := func(x []float64) ([]float64, error) { return logSoftmax(x, outer, dim, inner, c) }
	if !s.log {
		soft := c.Engine().Table().SoftmaxRow
		f32 = func(x []float32) ([]float32, error) { return softmax32(x, outer, dim, inner, soft, c) }
		f64 = func(x []float64) ([]float64, error) { return softmax(x, outer, dim, inner, c) }
	}
	var out any
	switch d := x.Data.(type) {
	case []float32:
		out, err = f32(d)
	case []float64:
		out, err = f64(d)
	case []tensor.F16, []tensor.BF16: // in float32, rounded once
		r, err := f32(ops.HalfTo32(x).Data.([]float32))
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{ops.ToHalf(&tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: r}, x.DType)}, nil
	default:
		return nil, ops.InputErrorf("%s does not take %v", s.op, x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
}

// softmax normalises x viewed as [outer, dim, inner] along dim, in
// float64 (float32 runs on the kernels: softmax32).
func softmax[T float32 | float64](x []T, outer, dim, inner int, oc *ops.Context) ([]T, error) {
	r := make([]T, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			if err := oc.Tick(3 * dim); err != nil {
				return nil, err
			}
			base := o*dim*inner + j
			m := math.Inf(-1)
			for i := 0; i < dim; i++ {
				m = math.Max(m, float64(x[base+i*inner]))
			}
			var sum float64
			for i := 0; i < dim; i++ {
				sum += math.Exp(float64(x[base+i*inner]) - m)
			}
			for i := 0; i < dim; i++ {
				r[base+i*inner] = T(math.Exp(float64(x[base+i*inner])-m) / sum)
			}
		}
	}
	return r, nil
}

// softmax32 normalises x viewed as [outer, dim, inner] along dim with
// soft, a kernel table's SoftmaxRow; strided rows go through a buffer.
func softmax32(x []float32, outer, dim, inner int, soft func([]float32, float32), oc *ops.Context) ([]float32, error) {
	r := oc.Float32Output(len(x)) // every element is written
	if inner == 1 {
		err := oc.ParallelRows(outer, dim*ops.ScalarCost, func(o0, o1 int) {
			copy(r[o0*dim:o1*dim], x[o0*dim:o1*dim])
			for o := o0; o < o1; o++ {
				soft(r[o*dim:(o+1)*dim], 1)
			}
		})
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	row := make([]float32, dim)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			if err := oc.Tick(dim); err != nil {
				return nil, err
			}
			base := o*dim*inner + j
			for i := range row {
				row[i] = x[base+i*inner]
			}
			soft(row, 1)
			for i, v := range row {
				r[base+i*inner] = v
			}
		}
	}
	return r, nil
}

func softmaxGeometry(x *tensor.Tensor, axis int64, legacy bool) (outer, dim, inner int, err error) {
	if x.Rank() == 0 {
		return 0, 0, 0, ops.InputErrorf("needs a tensor of rank >= 1")
	}
	a, err := ops.NormAxis(axis, x.Rank())
	if err != nil {
		return 0, 0, 0, err
	}
	outer, dim, inner = 1, 1, 1
	for i, d := range x.Shape {
		switch {
		case i < a:
			outer *= d
		case i == a || legacy:
			dim *= d
		default:
			inner *= d
		}
	}
	return outer, dim, inner, nil
}

// logSoftmax is log(softmax(x)) along dim of x viewed as [outer, dim,
// inner], computed as x − max − log Σ exp(x − max) in float64.
func logSoftmax[T float32 | float64](x []T, outer, dim, inner int, oc *ops.Context) ([]T, error) {
	r := make([]T, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			if err := oc.Tick(3 * dim); err != nil {
				return nil, err
			}
			base := o*dim*inner + j
			m := math.Inf(-1)
			for i := 0; i < dim; i++ {
				m = math.Max(m, float64(x[base+i*inner]))
			}
			var sum float64
			for i := 0; i < dim; i++ {
				sum += math.Exp(float64(x[base+i*inner]) - m)
			}
			ls := math.Log(sum)
			for i := 0; i < dim; i++ {
				r[base+i*inner] = T(float64(x[base+i*inner]) - m - ls)
			}
		}
	}
	return r, nil
}
