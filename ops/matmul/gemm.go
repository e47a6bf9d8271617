package matmul

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Gemm is the Gemm operator.
var Gemm = ops.Op{
	ops.Register(ops.Descriptor{Type: "Gemm", Since: 7, Fold: true}, buildGemm),
}

// GemmAttrs are Gemm's attributes.
type GemmAttrs struct {
	Alpha  float32 `onnx:"alpha" default:"1"`
	Beta   float32 `onnx:"beta" default:"1"`
	TransA bool    `onnx:"transA"`
	TransB bool    `onnx:"transB"`
}

// gemmOp is a compiled Gemm: Y = alpha·A'·B' + beta·C with A' = transA ?
// Aᵀ : A and B' likewise; C broadcasts unidirectionally to [M, N] and is
// optional from opset 11. A constant B is transposed once, at load,
// rather than on every call, and a float32 one is a Linear.
type gemmOp struct {
	alpha, beta    float32
	transA, transB bool
	constB         *tensor.Tensor // B', when constant and not held by lin
	lin            *Linear
}

func buildGemm(n *ops.Node, at *GemmAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	g := &gemmOp{alpha: at.Alpha, beta: at.Beta, transA: at.TransA, transB: at.TransB}
	if b := n.Const(1); b != nil && b.Rank() == 2 {
		g.constB = b
		if g.transB {
			g.constB, _ = transpose2D(nil, b) // no request: never stops
		}
		if g.constB.DType == tensor.Float32 {
			var q *ops.QDQWeight // taken only by a model loaded with quantization
			if n.Quantize {
				if q = n.QDQInput(1); q != nil && g.transB {
					q = q.Transpose()
				}
			}
			var err error
			if g.lin, err = NewLinear(n, 1, g.constB, q); err != nil {
				return nil, err
			}
			g.constB = nil // the kernels hold the weight now
		}
	}
	return g, nil
}

// Weight returns the constant weight the kernels hold (B', K×N), or nil
// (Weighted).
func (g *gemmOp) Weight() *Linear { return g.lin }

func (g *gemmOp) Run(ctx *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, c := in[0], ops.Optional(in, 2)
	if a.Rank() != 2 {
		return nil, ops.InputErrorf("Gemm takes a 2-D A, got %s", tensor.ShapeString(a.Shape))
	}
	var y *tensor.Tensor
	var err error
	if g.transA {
		if a, err = transpose2D(ctx, a); err != nil {
			return nil, err
		}
	}
	if g.lin != nil {
		if err := ops.SameType("Gemm", a, c); err != nil {
			return nil, err
		}
		y, err = g.lin.Apply(ctx, a)
	} else {
		b := in[1]
		if err := ops.SameType("Gemm", a, b, c); err != nil {
			return nil, err
		}
		if b.Rank() != 2 {
			return nil, ops.InputErrorf("Gemm takes a 2-D B, got %s", tensor.ShapeString(b.Shape))
		}
		if g.constB != nil {
			b = g.constB
		} else if g.transB {
			if b, err = transpose2D(ctx, b); err != nil {
				return nil, err
			}
		}
		y, err = Product(ctx, "MatMul", a, b)
	}
	if err != nil {
		return nil, err
	}
	alpha, beta := g.alpha, g.beta
	switch yd := y.Data.(type) {
	case []float32:
		err = gemmEpilogue(ctx, yd, y.Shape, alpha, beta, c)
	case []float64:
		err = gemmEpilogue(ctx, yd, y.Shape, float64(alpha), float64(beta), c)
	case []int32:
		err = gemmEpilogue(ctx, yd, y.Shape, int32(alpha), int32(beta), c)
	case []int64:
		err = gemmEpilogue(ctx, yd, y.Shape, int64(alpha), int64(beta), c)
	case []uint32:
		err = gemmEpilogue(ctx, yd, y.Shape, uint32(alpha), uint32(beta), c)
	case []uint64:
		err = gemmEpilogue(ctx, yd, y.Shape, uint64(alpha), uint64(beta), c)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// gemmEpilogue computes y = alpha·y + beta·C in place, C broadcast to y,
// piece by piece under the request.
func gemmEpilogue[T tensor.Numeric](oc *ops.Context, y []T, shape []int, alpha, beta T, c *tensor.Tensor) error {
	if alpha != 1 {
		err := oc.InPieces(len(y), func(lo, hi int) {
			y := y[lo:hi]
			for i := range y {
				y[i] *= alpha
			}
		})
		if err != nil {
			return err
		}
	}
	if c == nil || beta == 0 {
		return nil
	}
	// A bias row (N or 1×N) is added row by row, without broadcasting it
	// to a whole M×N copy first: the same operations on every element.
	if len(shape) == 2 && shape[1] > 0 && (c.Rank() == 1 && c.Shape[0] == shape[1] || c.Rank() == 2 && c.Shape[0] == 1 && c.Shape[1] == shape[1]) {
		cd, n := c.Data.([]T), shape[1]
		for r := 0; r+n <= len(y); r += n {
			err := oc.InPieces(n, func(lo, hi int) {
				row, bias := y[r+lo:r+hi], cd[lo:hi]
				for j := range row {
					row[j] += beta * bias[j]
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	cd, err := ops.BroadcastTo(c.Data.([]T), c.Shape, shape)
	if err != nil {
		return err
	}
	return oc.InPieces(len(y), func(lo, hi int) {
		y, cd := y[lo:hi], cd[lo:hi]
		for i := range y {
			y[i] += beta * cd[i]
		}
	})
}

// transpose2D returns t transposed (t itself for a type it does not
// move), piece by piece under the request.
func transpose2D(oc *ops.Context, t *tensor.Tensor) (*tensor.Tensor, error) {
	r, c := t.Shape[0], t.Shape[1]
	out := &tensor.Tensor{DType: t.DType, Shape: []int{c, r}}
	var err error
	switch d := t.Data.(type) {
	case []float32:
		out.Data, err = transposeData(oc, d, r, c)
	case []float64:
		out.Data, err = transposeData(oc, d, r, c)
	case []int32:
		out.Data, err = transposeData(oc, d, r, c)
	case []int64:
		out.Data, err = transposeData(oc, d, r, c)
	case []uint32:
		out.Data, err = transposeData(oc, d, r, c)
	case []uint64:
		out.Data, err = transposeData(oc, d, r, c)
	case []int8:
		out.Data, err = transposeData(oc, d, r, c)
	case []uint8:
		out.Data, err = transposeData(oc, d, r, c)
	default:
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func transposeData[T tensor.Elem](oc *ops.Context, d []T, r, c int) ([]T, error) {
	out := make([]T, len(d))
	for i := 0; i < r; i++ {
		err := oc.InPieces(c, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				out[j*r+i] = d[i*c+j]
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
