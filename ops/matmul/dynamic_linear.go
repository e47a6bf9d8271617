package matmul

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.DynamicLinear is what the graph compiler's "dynamic"
// rewrite makes of ONNX Runtime's dynamically quantized products (what
// its quantize_dynamic writes for each MatMul by a constant weight):
//
//	xq, xs, xz = DynamicQuantizeLinear(x)
//	for each product j:
//	    Y_j = Cast(MatMulInteger(xq, W_j, xz, Wz_j), FLOAT) * (xs * Ws_j)
//	    Y_j = Y_j + bias_j     (optional)
//	    Y_j = Gelu(Y_j)        (optional, the exact form)
//	    Y_j = Y_j + R_j        (optional, a residual)
//
// Inputs: x, then five per product: W_j (INT8 or UINT8 [K, N_j]), its
// zero point Wz_j (scalar or [N_j], or absent), its scale Ws_j (FP32
// scalar or [N_j]) and the bias (FP32 [N_j], or absent), all constants,
// and the residual R_j (any value, or absent); one output per product.
// x is quantized once, straight into the rows the int8 kernels read, with
// DynamicQuantizeLinear's own scale, zero point and rounding; each
// product runs on the kernels in int32 with the zero points taken off
// exactly; then each sum is converted to float32 and multiplied by
// xs·Ws_j, and the bias, activation and residual applied row by row with
// the table's vector kernels, each step a float32 operation as the
// graph's Cast, Mul, Add and Gelu do: the node's outputs are the graph's
// bit for bit. A residual that broadcasts is added by the graph's Add.

func init() {
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "DynamicLinear", Since: 1, Fold: true}, buildDynamicLinear)
}

// DynamicLinearAttrs are quantserve.DynamicLinear's attributes.
type DynamicLinearAttrs struct {
	// Activations are the products' activations in order: "" (none), or
	// one of Linear's ("Relu", "Gelu" the exact form, "GeluTanh", "SiLU");
	// absent: none.
	Activations []string `onnx:"activations"`
	// Opset is the ai.onnx opset of the operators the node replaces.
	Opset int64 `onnx:"opset"`
}

// dynamicInputs is the number of inputs per product.
const dynamicInputs = 5

// dynamicLinear is a compiled quantserve.DynamicLinear.
type dynamicLinear struct {
	k     int
	prods []dynamicProduct
}

// dynamicProduct is one product of a DynamicLinear.
type dynamicProduct struct {
	p        *intProduct
	scale    []float32    // Ws: one value, or one per column
	bias     []float32    // nil: none
	act      string       // as Linear's activation
	residual int          // the residual's input, 0: none
	add      ops.Operator // the graph's Add, for a residual that broadcasts
}

func buildDynamicLinear(n *ops.Node, at *DynamicLinearAttrs) (ops.Operator, error) {
	np := (len(n.Inputs) - 1) / dynamicInputs
	if np < 1 || len(n.Inputs) != 1+dynamicInputs*np || len(n.Outputs) != np {
		return nil, fmt.Errorf("has %d inputs and %d outputs, takes 1 + %d per output", len(n.Inputs), len(n.Outputs), dynamicInputs)
	}
	if len(at.Activations) != 0 && len(at.Activations) != np {
		return nil, fmt.Errorf("%d activations for %d products", len(at.Activations), np)
	}
	if err := n.RequireInputs(1); err != nil {
		return nil, err
	}
	d := &dynamicLinear{k: -1}
	for j := range len(n.Outputs) {
		wi, zi, si, bi, ri := 1+dynamicInputs*j, 2+dynamicInputs*j, 3+dynamicInputs*j, 4+dynamicInputs*j, 5+dynamicInputs*j
		if n.Inputs[wi] == "" || n.Inputs[si] == "" {
			return nil, fmt.Errorf("product %d: weight and scale are required", j)
		}
		p := newIntProduct(n, wi, zi)
		if p == nil {
			return nil, fmt.Errorf("product %d: the weight and its zero point must be INT8 or UINT8 constants of rank 2 and 1 or N values, K <= %d", j, gemm.MaxQK)
		}
		if d.k >= 0 && p.k != d.k {
			return nil, fmt.Errorf("product %d: weights of K = %d and %d", j, d.k, p.k)
		}
		d.k = p.k
		dp := dynamicProduct{p: p}
		s := n.Const(si)
		if s == nil || s.DType != tensor.Float32 || s.Rank() > 1 || s.Len() != 1 && s.Len() != p.n {
			return nil, fmt.Errorf("product %d: the weight's scale must be an FP32 constant of 1 or %d values", j, p.n)
		}
		dp.scale = s.Data.([]float32)
		n.HoldInputs(si)
		if bi < len(n.Inputs) && n.Inputs[bi] != "" {
			b := n.Const(bi)
			if b == nil || b.DType != tensor.Float32 || b.Rank() != 1 || b.Shape[0] != p.n {
				return nil, fmt.Errorf("product %d: the bias must be an FP32 constant of shape [%d]", j, p.n)
			}
			dp.bias = b.Data.([]float32)
			n.HoldInputs(bi)
		}
		if len(at.Activations) > 0 {
			switch a := at.Activations[j]; a {
			case "", "Relu", "Gelu", "GeluTanh", "SiLU":
				dp.act = a
			default:
				return nil, fmt.Errorf("product %d: activation %q is not Relu, Gelu, GeluTanh or SiLU", j, a)
			}
		}
		if n.Inputs[ri] != "" {
			dp.residual = ri
			var err error
			if dp.add, err = n.BuildPart("Add", at.Opset, []*tensor.Tensor{nil, nil}, nil); err != nil {
				return nil, err
			}
		}
		d.prods = append(d.prods, dp)
	}
	return d, nil
}

// dynamicRows are quantized activations, kept between runs.
var dynamicRows = sync.Pool{New: func() any { return new(gemm.QRows) }}

func (d *dynamicLinear) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	xs, ok := x.Data.([]float32)
	if !ok {
		return nil, ops.InputErrorf("DynamicLinear takes FP32, got %v", x.DType)
	}
	if x.Rank() == 0 || x.Shape[x.Rank()-1] != d.k {
		return nil, ops.InputErrorf("MatMul inner dimensions differ: %s × [%d,…]", tensor.ShapeString(x.Shape), d.k)
	}
	m := 0
	if d.k > 0 {
		m = len(xs) / d.k
	}
	q, err := newDynamicQuant(c, xs)
	if err != nil {
		return nil, err
	}
	qa := dynamicRows.Get().(*gemm.QRows)
	defer dynamicRows.Put(qa)
	u, ldu, err := qa.PrepareU8(m, d.k, int32(uint8(q.zp)), q.wide())
	if err != nil {
		return nil, err
	}
	k := d.k
	t := c.Engine().Table()
	err = c.ParallelRows(m, k*ops.VectorCost, func(r0, r1 int) {
		for i := r0; i < r1; i++ {
			q.quantizeWith(t, xs[i*k:(i+1)*k], u[i*ldu:i*ldu+k])
		}
	})
	if err != nil {
		return nil, err
	}
	outs := make([]*tensor.Tensor, len(d.prods))
	for j := range d.prods {
		if outs[j], err = d.prods[j].run(c, qa, x.Shape, m, q, in); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// run computes one product of the rows qa (m of them, x's shape) whose
// quantization is q; in are the node's inputs.
func (dp *dynamicProduct) run(c *ops.Context, qa *gemm.QRows, xshape []int, m int, q dynamicQuant, in []*tensor.Tensor) (*tensor.Tensor, error) {
	n := dp.p.n
	shape := append(append([]int(nil), xshape[:len(xshape)-1]...), n)
	size, err := tensor.NumElements(shape)
	if err != nil {
		return nil, err
	}
	if err := c.ReserveTensor(tensor.Float32, shape); err != nil {
		return nil, err
	}
	out := c.Float32Output(size) // the products write every element
	if size == 0 {
		return &tensor.Tensor{DType: tensor.Float32, Shape: shape, Data: out}, nil
	}
	// s = xs * Ws: the graph's Mul of the two scales.
	s := make([]float32, n)
	for j := range s {
		s[j] = q.scale * dp.scale[min(j, len(dp.scale)-1)]
	}
	if err := c.Tick(m * n * max(dp.p.k, 1)); err != nil {
		return nil, err
	}
	e := c.Engine()
	if !qa.Wide() || e.Table().FullRange {
		// The kernels' own epilogue: float32(Σ (u - xz)·(W - Wz)) · 1 · s[j],
		// each step a float32 operation, as the graph's Cast and Mul.
		w, err := dp.p.w.WithScales(s)
		if err != nil {
			return nil, err
		}
		if fin := dp.finishOf(shape, in); fin != nil {
			// The bias and residual in the product's finish, as each
			// row tile is written: finish's bits without its pass.
			if err := e.QMatMulRowsFinish(qa, w, out, n, fin); err != nil {
				return nil, err
			}
			return &tensor.Tensor{DType: tensor.Float32, Shape: shape, Data: out}, nil
		}
		if err := e.QMatMulRows(qa, w, out, n); err != nil {
			return nil, err
		}
		return dp.finish(c, out, shape, m, in)
	}
	// A table that multiplies bytes above 128 exactly only in int32: the
	// sums go into the output's memory, each replaced by its float32
	// result in place.
	acc := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(out))), len(out))
	if err := e.QMatMulInt32(qa, dp.p.w, acc, n); err != nil {
		return nil, err
	}
	cs := dp.p.w.ColSums()
	zp := int32(uint8(q.zp)) // the zero point as DynamicQuantizeLinear outputs it
	err = c.ParallelRows(m, n, func(r0, r1 int) {
		for i := r0; i < r1; i++ {
			a, o := acc[i*n:(i+1)*n], out[i*n:(i+1)*n]
			for j := range o {
				v := a[j] - zp*cs[j] // wraps as the int32 product does
				// Cast, Mul: each rounds to float32 (the conversion
				// keeps a compiler from fusing the Mul with what follows).
				o[j] = float32(float32(v) * s[j])
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return dp.finish(c, out, shape, m, in)
}

// finishOf returns the gemm.Finish that does finish's work on the
// product's rows (shape shape), (y + bias) + residual, for a product of a
// bias and no Gelu whose residual, if any, has the product's shape; nil
// for any other, which finish finishes.
func (dp *dynamicProduct) finishOf(shape []int, in []*tensor.Tensor) *gemm.Finish {
	if dp.act != "" {
		return nil
	}
	var res *tensor.Tensor
	if dp.residual > 0 {
		res = in[dp.residual]
	}
	return biasFinish(dp.bias, dp.p.n, res, shape)
}

// finish applies the bias, activation and residual to the m rows of out
// (shape shape), the products scaled; in are the node's inputs.
func (dp *dynamicProduct) finish(c *ops.Context, out []float32, shape []int, m int, in []*tensor.Tensor) (*tensor.Tensor, error) {
	y := &tensor.Tensor{DType: tensor.Float32, Shape: shape, Data: out}
	var res *tensor.Tensor
	var rd []float32
	if dp.residual > 0 {
		res = in[dp.residual]
		rd, _ = res.Data.([]float32)
	}
	if res != nil && (rd == nil || !ops.EqualShape(res.Shape, shape)) {
		// a residual that broadcasts, or of another type: the graph's Add
		// takes it once the rest is done
		rd = nil
	}
	if dp.bias != nil || dp.act != "" || rd != nil {
		if err := epilogue(c, out[:m*dp.p.n], dp.p.n, dp.bias, rd, dp.act); err != nil {
			return nil, err
		}
	}
	if res != nil && rd == nil {
		out, err := dp.add.Run(c, []*tensor.Tensor{y, res})
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
	return y, nil
}
