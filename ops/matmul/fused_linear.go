package matmul

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.Linear is what the graph compiler's "linear" rewrite makes
// of a MatMul followed by the Add of a bias, an activation and the Add of
// a residual (each optional, in that order):
//
//	Y = act(A·W + bias) + residual
//
// With a constant float32 weight (the int8 or float kernels hold it), a
// float32 bias as long as a row of the product and a residual of the
// product's shape, the bias, activation and residual are applied row by
// row on the product's output with the table's vector kernels, in the
// graph's order of operations; any other inputs run the graph's own
// operators one after the other, so the node computes what they did.

func init() {
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "Linear", Since: 1, Fold: true}, buildLinear)
}

// LinearAttrs are quantserve.Linear's attributes.
type LinearAttrs struct {
	// Activation is "" (none), "Relu", "Gelu" (the exact, erf form),
	// "GeluTanh" (Gelu's tanh approximation) or "SiLU" (x·Sigmoid(x), a
	// Sigmoid and a Mul as the graph wrote them).
	Activation string `onnx:"activation"`
	// Opset is the ai.onnx opset of the operators the node replaces.
	Opset int64 `onnx:"opset"`
	// Product is the operator of the product: "MatMul" (or empty), or
	// "Gemm" for a Gemm of alpha and beta 1 whose B the rewrite
	// transposed into the weight when transB said so, which the model's
	// layers then report as the Gemm it was.
	Product string `onnx:"product"`
}

// fusedLinear is a compiled quantserve.Linear.
type fusedLinear struct {
	w     *Linear // the MatMul's weight, when the kernels hold it
	chain linearChain

	// The fused path, when lin is not nil: the bias (nil: none) and the
	// activation applied to the rows lin computes.
	lin  *Linear
	bias []float32
	act  string

	// gemm marks a node whose product is a Gemm's (LinearAttrs.Product):
	// it takes a 2-D float32 A only, as Gemm does.
	gemm bool
}

// linearChain is the operators a Linear node replaces, compiled as the
// graph had them, for the inputs the fused path does not take.
type linearChain struct {
	matmul, bias, act, residual ops.Operator
}

func buildLinear(n *ops.Node, at *LinearAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 4, 1, 1); err != nil {
		return nil, err
	}
	given := func(i int) bool { return i < len(n.Inputs) && n.Inputs[i] != "" }
	f := &fusedLinear{act: at.Activation}
	ch := &f.chain
	// The MatMul as the graph has it: with a constant weight, on the
	// kernels (and recorded among the model's layers).
	var err error
	product := "MatMul"
	switch at.Product {
	case "", "MatMul":
	case "Gemm": // A·W, no C: MatMul's values; an A the fused path does not take runs the chain, whose Gemm refuses it as the graph's would
		product, f.gemm = at.Product, true
	default:
		return nil, fmt.Errorf("product %q is not MatMul or Gemm", at.Product)
	}
	ch.matmul, err = n.BuildPart(product, at.Opset, []*tensor.Tensor{nil, n.Const(1)}, []*ops.QDQWeight{nil, n.QDQInput(1)})
	if err != nil {
		return nil, err
	}
	if f.w = WeightOf(ch.matmul); f.w != nil {
		n.HoldInputs(1)
	}
	none := []*tensor.Tensor{nil, nil}
	if given(2) {
		if ch.bias, err = n.BuildPart("Add", at.Opset, none, nil); err != nil {
			return nil, err
		}
	}
	switch at.Activation {
	case "":
	case "Relu", "Gelu":
		opset := at.Opset
		if at.Activation == "Gelu" {
			opset = max(opset, 20) // a GELU the "gelu" rewrite found spelled out below opset 20
		}
		if ch.act, err = n.BuildPart(at.Activation, opset, none[:1], nil); err != nil {
			return nil, err
		}
	case "GeluTanh":
		if ch.act, err = geluTanhPart(n); err != nil {
			return nil, err
		}
	case "SiLU":
		var s siluPart
		if s.sigmoid, err = n.BuildPart("Sigmoid", at.Opset, none[:1], nil); err != nil {
			return nil, err
		}
		if s.mul, err = n.BuildPart("Mul", at.Opset, none, nil); err != nil {
			return nil, err
		}
		ch.act = s
	default:
		return nil, fmt.Errorf("activation %q is not Relu, Gelu, GeluTanh or SiLU", at.Activation)
	}
	if given(3) {
		if ch.residual, err = n.BuildPart("Add", at.Opset, none, nil); err != nil {
			return nil, err
		}
	}

	// The fused path: the weight on the kernels, a constant float32 bias
	// of one row's length (or none).
	f.lin = f.w
	if f.lin != nil && given(2) {
		b := n.Const(2)
		if b != nil && b.DType == tensor.Float32 && b.Rank() == 1 && b.Shape[0] == f.lin.n {
			f.bias = b.Data.([]float32)
			n.HoldInputs(2)
		} else {
			f.lin = nil // a bias that broadcasts: the graph's Add adds it
		}
	}
	return f, nil
}

// geluTanhPart builds the chain's activation for "GeluTanh": a Gelu part
// of opset 20 with approximate="tanh".
func geluTanhPart(n *ops.Node) (ops.Operator, error) {
	d, err := ops.Lookup("", "Gelu", 20)
	if err != nil {
		return nil, err
	}
	p := n.Part("Gelu", 20, []*tensor.Tensor{nil}, nil)
	p.Attrs["approximate"] = &onnxpb.Attribute{Name: "approximate", Type: onnxpb.AttrString, S: []byte("tanh")}
	at, err := d.Parse(p)
	if err != nil {
		return nil, err
	}
	return d.Build(p, at)
}

// siluPart is the chain's activation for "SiLU": x·Sigmoid(x) on the
// graph's Sigmoid and Mul.
type siluPart struct{ sigmoid, mul ops.Operator }

func (s siluPart) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	sg, err := s.sigmoid.Run(c, in[:1])
	if err != nil {
		return nil, err
	}
	return s.mul.Run(c, []*tensor.Tensor{in[0], sg[0]})
}

// Weight returns the MatMul's constant weight the kernels hold, or nil
// (Weighted).
func (f *fusedLinear) Weight() *Linear { return f.w }

func (f *fusedLinear) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if x := in[0]; f.lin == nil || f.gemm && (x.Rank() != 2 || x.DType != tensor.Float32) {
		return f.chain.run(c, in)
	}
	if y, ok, err := f.runFinished(c, in); ok || err != nil {
		return []*tensor.Tensor{y}, err
	}
	y, err := f.lin.Apply(c, in[0])
	if err != nil {
		return nil, err
	}
	bias := f.bias
	var rd []float32
	if res := ops.Optional(in, 3); res != nil {
		if rd, _ = res.Data.([]float32); rd == nil || !ops.EqualShape(res.Shape, y.Shape) {
			// a residual that broadcasts, or of another type: the
			// graph's operators take it from the bias on
			if err := addRows(c, y.Data.([]float32), bias); err != nil {
				return nil, err
			}
			if y, err = f.chain.rest(c, y, nil, res); err != nil {
				return nil, err
			}
			return []*tensor.Tensor{y}, nil
		}
	}
	if err := epilogue(c, y.Data.([]float32), f.lin.n, bias, rd, f.act); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// runFinished runs a node with a bias whose residual is absent or of the
// product's shape with the bias added by the product's own finish, as
// each row tile is written: without an activation the residual too,
// ((y + bias) + residual: the bits of epilogue's pass, without the
// pass); with one but Gelu (whose kernel adds the bias itself), the
// activation and the residual then follow on the finished rows. ok is
// false for any other node, which Run finishes itself.
func (f *fusedLinear) runFinished(c *ops.Context, in []*tensor.Tensor) (y *tensor.Tensor, ok bool, err error) {
	x, n := in[0], f.lin.n
	if f.act == "Gelu" || f.lin.k == 0 || x.Rank() == 0 {
		return nil, false, nil
	}
	res := ops.Optional(in, 3)
	if f.act == "" {
		fin := biasFinish(f.bias, n, res, x.Shape)
		if fin == nil {
			return nil, false, nil
		}
		y, err = f.lin.ApplyFinish(c, x, fin)
		return y, true, err
	}
	var rd []float32
	if res != nil {
		if rd, _ = res.Data.([]float32); rd == nil || !productShape(res.Shape, x.Shape, n) {
			return nil, false, nil
		}
	}
	fin := biasFinish(f.bias, n, nil, x.Shape)
	if fin == nil {
		return nil, false, nil
	}
	if y, err = f.lin.ApplyFinish(c, x, fin); err != nil {
		return nil, true, err
	}
	return y, true, epilogue(c, y.Data.([]float32), n, nil, rd, f.act)
}

// productShape reports whether shape is that of the product of an input
// of shape x (rank 1 or more) by a weight of n columns: x's but its last
// dimension, which is n.
func productShape(shape, x []int, n int) bool {
	r := len(x)
	return len(shape) == r && r > 0 && shape[r-1] == n && slices.Equal(shape[:r-1], x[:r-1])
}

// biasFinish returns the gemm.Finish that adds bias (n values) and res
// (nil: none) to the rows of the product of an input of shape x by n
// columns, (y + bias) + res unclamped: epilogue's bits. It is nil when
// the bias is not n values or res is not float32 of the product's shape:
// the caller finishes then.
func biasFinish(bias []float32, n int, res *tensor.Tensor, x []int) *gemm.Finish {
	if len(bias) != n {
		return nil
	}
	fin := &gemm.Finish{Bias: bias, LDR: n, Lo: float32(math.Inf(-1)), Hi: float32(math.Inf(1))}
	if res != nil {
		rd, ok := res.Data.([]float32)
		if !ok || !productShape(res.Shape, x, n) {
			return nil
		}
		fin.Res = rd
	}
	return fin
}

// epilogue finishes the rows of a product y (cols values each): y + bias
// (bias nil or cols values), or Gelu(y + bias) as tb.Gelu computes it,
// then Relu, GeluTanh or SiLU (the Sigmoid operator's bits, tb.Sigmoid,
// times the value, as the graph's Mul), then + res (nil or as long as y);
// with a bias, a residual and no activation, (y + bias) + res in one
// pass. The rows split across the engine's cores.
func epilogue(c *ops.Context, y []float32, cols int, bias, res []float32, act string) error {
	tb := c.Engine().Table()
	return c.ParallelRows(len(y)/max(cols, 1), cols*epilogueCost(act == "Gelu" || act == "GeluTanh" || act == "SiLU"), func(r0, r1 int) {
		var sig []float32 // SiLU's sigmoids, a chunk of a row at a time
		if act == "SiLU" {
			sig = c.Scratch(min(cols, siluChunk))
			defer c.Free(sig)
		}
		for r := r0; r < r1; r++ {
			row := y[r*cols : (r+1)*cols]
			var rr []float32
			if res != nil {
				rr = res[r*cols : (r+1)*cols]
			}
			switch {
			case act == "Gelu":
				tb.Gelu(row, row, bias)
			case bias != nil && (act != "" || rr == nil):
				tb.AddBias(row, bias, nil)
			case bias != nil:
				tb.AddBias(row, bias, rr) // (y + bias) + residual
				continue
			}
			switch act {
			case "Relu":
				for i, v := range row {
					row[i] = max(v, 0)
				}
			case "GeluTanh":
				tb.GeluTanh(row, row)
			case "SiLU":
				for v := row; len(v) > 0; {
					n := min(len(v), len(sig))
					tb.Sigmoid(sig[:n], v[:n])
					tb.ScaleRows(v[:n], sig[:n]) // v·sigmoid(v), as Mul rounds it
					v = v[n:]
				}
			}
			if rr != nil {
				tb.AddBias(row, rr, nil)
			}
		}
	})
}

// siluChunk is how many values of a row SiLU takes the sigmoids of at a
// time.
const siluChunk = 2048

// epilogueCost is the work (ops.ParallelFor's units) of a product's
// epilogue on one output value: an erf Gelu's vector kernel costs about
// as much as a scalar transcendental (measured against the int8 product
// it follows), a bias, Relu or residual add a few vector passes.
func epilogueCost(gelu bool) int {
	if gelu {
		return ops.ScalarCost
	}
	return 2 * ops.VectorCost
}

// addRows adds bias (nil: nothing) to each row of y, counting each row
// with c.Tick.
func addRows(c *ops.Context, y, bias []float32) error {
	for r := 0; len(bias) > 0 && r*len(bias) < len(y); r++ {
		if err := c.Tick(len(bias)); err != nil {
			return err
		}
		row := y[r*len(bias) : (r+1)*len(bias)]
		for j, b := range bias {
			row[j] += b
		}
	}
	return nil
}

// run computes the node with the graph's operators.
func (ch *linearChain) run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	out, err := ch.matmul.Run(c, in[:2])
	if err != nil {
		return nil, err
	}
	return ops.Result(ch.rest(c, out[0], ops.Optional(in, 2), ops.Optional(in, 3)))
}

// rest applies to y, with the graph's operators, the bias (when not nil),
// the activation and the residual (when not nil).
func (ch *linearChain) rest(c *ops.Context, y, bias, res *tensor.Tensor) (*tensor.Tensor, error) {
	step := func(op ops.Operator, in ...*tensor.Tensor) error {
		out, err := op.Run(c, in)
		if err == nil {
			y = out[0]
		}
		return err
	}
	if bias != nil {
		if err := step(ch.bias, y, bias); err != nil {
			return nil, err
		}
	}
	if ch.act != nil {
		if err := step(ch.act, y); err != nil {
			return nil, err
		}
	}
	if res != nil {
		if err := step(ch.residual, y, res); err != nil {
			return nil, err
		}
	}
	return y, nil
}
