package contrib

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "FusedMatMul", Since: 1, Fold: true}, buildFusedMatMul)
}

// FusedMatMulAttrs are FusedMatMul's attributes.
type FusedMatMulAttrs struct {
	Alpha       float32 `onnx:"alpha" default:"1"`
	TransA      bool    `onnx:"transA"`
	TransB      bool    `onnx:"transB"`
	TransBatchA bool    `onnx:"transBatchA"`
	TransBatchB bool    `onnx:"transBatchB"`
}

// fusedMatMul implements com.microsoft's FusedMatMul, the product ONNX
// Runtime's optimizer makes of a MatMul with the Transposes and the Mul
// by a scalar around it:
//
//	Y = alpha · op(A) · op(B)
//
// multiplied as numpy's matmul multiplies (a 1-D A is a row, a 1-D B a
// column, the dimensions before the last two broadcast). op(A) is A with,
// under transBatchA, its first dimension moved to the rows ([M, b…, K] to
// [b…, M, K]), then, under transA, its last two dimensions swapped; op(B)
// likewise with transBatchB and transB. As in ONNX Runtime, transA and
// transB leave a 1-D operand as it is, and transBatchA and transBatchB
// take operands of one rank, at least 3. (With a 1-D B, ONNX Runtime's
// CPU kernel reads a transposed A untransposed; this is the definition.)
//
// When B is a constant 2-D FLOAT tensor, op(B) is computed once, at load,
// and held by a matmul.Linear, which runs it on the int8 kernels when the
// model is loaded with quantization and the weight is large enough (as
// ai.onnx MatMul does); every other product runs on the engine's float
// kernels. FLOAT16 operands are multiplied in float32 and the product
// rounded once.
type fusedMatMul struct {
	alpha                          float32
	transA, transB, batchA, batchB bool
	lin                            *matmul.Linear // op(B), when B is a constant 2-D FLOAT tensor
}

func buildFusedMatMul(n *ops.Node, at *FusedMatMulAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	f := &fusedMatMul{alpha: at.Alpha, transA: at.TransA, transB: at.TransB, batchA: at.TransBatchA, batchB: at.TransBatchB}
	if b := n.Const(1); b != nil && b.DType == tensor.Float32 && b.Rank() == 2 {
		if f.batchA || f.batchB {
			return nil, fmt.Errorf("transBatchA and transBatchB take A and B of one rank, at least 3, and B is %s", tensor.ShapeString(b.Shape))
		}
		w := b
		if f.transB {
			w = swapLast(b)
		}
		var q *ops.QDQWeight // taken only by a model loaded with quantization
		if n.Quantize {
			if q = n.QDQInput(1); q != nil && f.transB {
				q = q.Transpose()
			}
		}
		var err error
		if f.lin, err = matmul.NewLinear(n, 1, w, q); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *fusedMatMul) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	const name = "FusedMatMul"
	a := in[0]
	if f.lin != nil {
		if a.DType != tensor.Float32 {
			return nil, ops.InputErrorf("%s by a FLOAT weight takes a FLOAT A, got %v", name, a.DType)
		}
		if f.transA && a.Rank() >= 2 {
			a = swapLast(a)
		}
		if a.Rank() == 0 || a.Shape[a.Rank()-1] != f.lin.K() {
			return nil, ops.InputErrorf("%s's inner dimensions differ: %s × [%d, %d] (after the transposes)",
				name, tensor.ShapeString(a.Shape), f.lin.K(), f.lin.N())
		}
		y, err := f.lin.Apply(c, a)
		if err != nil {
			return nil, err
		}
		scale(y.Data.([]float32), f.alpha)
		return []*tensor.Tensor{y}, nil
	}
	b := in[1]
	if err := sameType(name, a, b); err != nil {
		return nil, err
	}
	if a.Rank() == 0 || b.Rank() == 0 {
		return nil, ops.InputErrorf("%s takes A and B of rank 1 or more, got %s and %s", name, tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
	}
	if (f.batchA || f.batchB) && (a.Rank() != b.Rank() || a.Rank() < 3) {
		return nil, ops.InputErrorf("%s's transBatchA and transBatchB take A and B of one rank, at least 3, got %s and %s",
			name, tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
	}
	av, err := values(name, "A", a)
	if err != nil {
		return nil, err
	}
	bv, err := values(name, "B", b)
	if err != nil {
		return nil, err
	}
	opA := &tensor.Tensor{DType: tensor.Float32, Shape: a.Shape, Data: av}
	opB := &tensor.Tensor{DType: tensor.Float32, Shape: b.Shape, Data: bv}
	if f.batchA {
		opA = leadToRows(opA)
	}
	if f.transA && opA.Rank() >= 2 {
		opA = swapLast(opA)
	}
	if f.batchB {
		opB = leadToRows(opB)
	}
	if f.transB && opB.Rank() >= 2 {
		opB = swapLast(opB)
	}
	// the inner dimensions as the operands are multiplied (1-D B is a column)
	k, k2 := opA.Shape[opA.Rank()-1], opB.Shape[max(opB.Rank()-2, 0)]
	if k != k2 {
		return nil, ops.InputErrorf("FusedMatMul's inner dimensions differ: %s × %s (after the transposes)",
			tensor.ShapeString(opA.Shape), tensor.ShapeString(opB.Shape))
	}
	p, err := matmul.Product(c, name, opA, opB)
	if err != nil {
		return nil, err
	}
	y := p.Data.([]float32)
	scale(y, f.alpha)
	return []*tensor.Tensor{result(a.DType, p.Shape, y)}, nil
}

// scale multiplies each value of y by alpha (rounded to float32 once).
func scale(y []float32, alpha float32) {
	if alpha == 1 {
		return
	}
	for i, v := range y {
		y[i] = alpha * v
	}
}

// swapLast returns FLOAT x, [..., r, c], with its last two dimensions
// swapped: [..., c, r].
func swapLast(x *tensor.Tensor) *tensor.Tensor {
	s := x.Shape
	r, c := s[len(s)-2], s[len(s)-1]
	shape := append(append([]int(nil), s[:len(s)-2]...), c, r)
	return tensor.From(shape, swapMiddle(x.Data.([]float32), len(x.Data.([]float32))/max(r*c, 1), r, c, 1))
}

// leadToRows returns FLOAT x, [d0, d1, …, dr-2, dr-1], with its first
// dimension moved before its last: [d1, …, dr-2, d0, dr-1].
func leadToRows(x *tensor.Tensor) *tensor.Tensor {
	s := x.Shape
	r := len(s)
	mid := ops.ProdInts(s[1 : r-1])
	shape := append(append(append([]int(nil), s[1:r-1]...), s[0]), s[r-1])
	return tensor.From(shape, swapMiddle(x.Data.([]float32), 1, s[0], mid, s[r-1]))
}

// swapMiddle returns x, laid out [a, b, c, d], as [a, c, b, d].
func swapMiddle(x []float32, a, b, c, d int) []float32 {
	y := make([]float32, len(x))
	for i := 0; i < a; i++ {
		src, dst := x[i*b*c*d:], y[i*b*c*d:]
		for j := 0; j < b; j++ {
			for l := 0; l < c; l++ {
				copy(dst[(l*b+j)*d:(l*b+j+1)*d], src[(j*c+l)*d:(j*c+l+1)*d])
			}
		}
	}
	return y
}
