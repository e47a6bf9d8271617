package matmul

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// The parts a Linear node compiles for what it does not fuse are the
// graph's Add, Relu, Gelu, Sigmoid and Mul, operators of other families. Where this
// test binary links none, it registers plain float32 ones, computed in
// float64 by their definitions, for the parts to be compiled with.
func init() {
	binary := func(typ string, f func(x, y float64) float64) {
		if len(ops.Descriptors("", typ)) > 0 {
			return
		}
		ops.Register(ops.Descriptor{Type: typ, Since: 1}, func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
			return ops.Func(func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				a, b := in[0], in[1]
				if a.DType != tensor.Float32 || b.DType != tensor.Float32 {
					return nil, ops.InputErrorf("%s takes FP32 here, got %v and %v", typ, a.DType, b.DType)
				}
				shape, y, err := ops.BinaryMap(a.Data.([]float32), b.Data.([]float32), a.Shape, b.Shape, func(x, y float32) float32 {
					return float32(f(float64(x), float64(y)))
				})
				if err != nil {
					return nil, err
				}
				return []*tensor.Tensor{tensor.From(shape, y)}, nil
			}), nil
		})
	}
	binary("Add", func(x, y float64) float64 { return x + y })
	binary("Mul", func(x, y float64) float64 { return x * y })
	unary := func(typ string, f func(float64) float64) {
		if len(ops.Descriptors("", typ)) > 0 {
			return
		}
		ops.Register(ops.Descriptor{Type: typ, Since: 1}, func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
			return ops.Unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
				xv := x.Data.([]float32)
				y := make([]float32, len(xv))
				for i, v := range xv {
					y[i] = float32(f(float64(v)))
				}
				return tensor.From(x.Shape, y), nil
			}), nil
		})
	}
	unary("Relu", relu)
	unary("Gelu", gelu)
	unary("Sigmoid", sigmoid)
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func relu(x float64) float64 { return max(x, 0) }

func gelu(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// TestFusedLinear: quantserve.Linear computes act(A·W + bias) + residual
// for each combination the rewrite makes, with the weight on the float
// or int8 kernels: fused on the product's rows when the bias is a row and
// the residual the product's shape, through the graph's own operators
// otherwise. The MatMul is reported as the graph's MatMul; the weight,
// and a fused bias, are held.
func TestFusedLinear(t *testing.T) {
	const m, k, n = 5, 96, 100 // k·n past MinQuantizedWeights
	r := rand.New(rand.NewPCG(11, 11))
	x, w := randFloats(r, m, k), randFloats(r, k, n)
	bias, wideBias := randFloats(r, n), randFloats(r, m, n)
	res, rowRes := randFloats(r, m, n), randFloats(r, n)
	for _, c := range []struct {
		name      string
		act       string
		bias, res *tensor.Tensor
		constW    bool
		fused     bool // the bias is held: the fused path
	}{
		{"bias", "", bias, nil, true, true},
		{"bias gelu", "Gelu", bias, nil, true, true},
		{"bias relu residual", "Relu", bias, res, true, true},
		{"bias residual", "", bias, res, true, true},
		{"gelu", "Gelu", nil, nil, true, false},
		{"relu residual", "Relu", nil, res, true, false},
		{"residual", "", nil, res, true, false},
		{"bias, a broadcast residual", "", bias, rowRes, true, true},
		{"gelu, a broadcast residual", "Gelu", bias, rowRes, true, true},
		{"a wide bias", "Relu", wideBias, res, true, false},
		{"bias silu residual", "SiLU", bias, res, true, true},
		{"silu", "SiLU", nil, nil, true, false},
		{"silu, a weight known at run time", "SiLU", bias, res, false, false},
		{"a weight known at run time", "Gelu", bias, res, false, false},
	} {
		for _, quantize := range []bool{false, true} {
			in := []*tensor.Tensor{x, w, c.bias, c.res}
			for len(in) > 2 && in[len(in)-1] == nil {
				in = in[:len(in)-1]
			}
			consts := make([]*tensor.Tensor, len(in))
			if c.constW {
				consts[1] = w
			}
			if len(in) > 2 && c.bias != nil {
				consts[2] = c.bias
			}
			var absent []int
			if len(in) > 2 && c.bias == nil {
				absent = []int{2}
			}
			s := spec{domain: ops.RewriteDomain, op: "Linear", opset: 1, inputs: len(in), consts: consts, absent: absent, quantize: quantize, scheme: quant.PerChannel,
				attrs: []*onnxpb.Attribute{{Name: "activation", Type: onnxpb.AttrString, S: []byte(c.act)}, attrInt("opset", 20)}}
			op, host := mustCompile(t, s)
			var held []int
			if c.constW {
				held = append(held, 1)
			}
			if c.fused {
				held = append(held, 2)
			}
			if !slices.Equal(host.held, held) || (WeightOf(op) != nil) != c.constW {
				t.Fatalf("%s: held %v, want %v", c.name, host.held, held)
			}
			layer := "MatMul 96×100 float32"
			if quantize {
				layer = "MatMul 96×100 int8 per_channel"
			}
			if c.constW && (len(host.parts) == 0 || !slices.Equal(host.parts[0].layers, []string{layer}) || len(host.layers) != 0) {
				t.Fatalf("%s: layers %q of the MatMul, %q of the node; want the MatMul's %q", c.name, host.parts[0].layers, host.layers, layer)
			}
			// the product as the MatMul computes it, then the rest by
			// definition
			mm, _ := mustCompile(t, spec{op: "MatMul", opset: 20, inputs: 2, consts: consts[:2], quantize: quantize, scheme: quant.PerChannel})
			y0 := run1(t, mm, nil, x, w).Data.([]float32)
			want := make([]float64, len(y0))
			for i, v := range y0 {
				u := float64(v)
				if c.bias != nil {
					u += c.bias.Float64s()[i%len(c.bias.Float64s())]
				}
				switch c.act {
				case "Relu":
					u = relu(u)
				case "Gelu":
					u = gelu(u)
				case "SiLU":
					u *= sigmoid(u)
				}
				if c.res != nil {
					u += c.res.Float64s()[i%c.res.Len()]
				}
				want[i] = u
			}
			run := slices.Clone(in)
			for _, i := range held {
				run[i] = nil // the compiler feeds nothing for a held input
			}
			y := run1(t, op, nil, run...)
			if !slices.Equal(y.Shape, []int{m, n}) {
				t.Fatalf("%s: shape %v", c.name, y.Shape)
			}
			for i, v := range y.Data.([]float32) {
				if d := math.Abs(float64(v) - want[i]); d > 1e-5*(1+math.Abs(want[i])) {
					t.Fatalf("%s (quantize %v): y[%d] = %v, want %v", c.name, quantize, i, v, want[i])
				}
			}
		}
	}
}

// TestFusedLinearRefusals: an activation the rewrite does not make is
// refused at load; inputs the parts cannot take are the request's error.
func TestFusedLinearRefusals(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	w := randFloats(r, 4, 3)
	attrs := func(act string) []*onnxpb.Attribute {
		return []*onnxpb.Attribute{{Name: "activation", Type: onnxpb.AttrString, S: []byte(act)}, attrInt("opset", 20)}
	}
	if _, _, err := compile(t, spec{domain: ops.RewriteDomain, op: "Linear", opset: 1, inputs: 3, consts: []*tensor.Tensor{nil, w}, attrs: attrs("Tanh")}); err == nil {
		t.Error("a Tanh activation was taken")
	}
	if _, _, err := compile(t, spec{domain: ops.RewriteDomain, op: "Linear", opset: 1, inputs: 2, absent: []int{1}, attrs: attrs("Relu")}); err == nil {
		t.Error("an absent weight was taken")
	}
	op, _ := mustCompile(t, spec{domain: ops.RewriteDomain, op: "Linear", opset: 1, inputs: 4, consts: []*tensor.Tensor{nil, w, randFloats(r, 3)}, attrs: attrs("")})
	for _, c := range []struct {
		name string
		in   []*tensor.Tensor
	}{
		{"inner dimensions", []*tensor.Tensor{randFloats(r, 2, 5), nil, nil, randFloats(r, 2, 3)}},
		{"a residual that does not broadcast", []*tensor.Tensor{randFloats(r, 2, 4), nil, nil, randFloats(r, 3, 3)}},
	} {
		if _, err := run(op, nil, c.in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", c.name, err)
		}
	}
}

// TestFusedLinearEpilogueAcrossCores: the fused epilogue (bias, Gelu,
// residual) of a product with enough rows to split it across cores gives
// on two the bits it gives on one, which follow the definition.
func TestFusedLinearEpilogueAcrossCores(t *testing.T) {
	const m, k, n = 64, 96, 100 // m·n values of Gelu: past a split's work
	r := rand.New(rand.NewPCG(13, 13))
	x, w, bias, res := randFloats(r, m, k), randFloats(r, k, n), randFloats(r, n), randFloats(r, m, n)
	for _, quantize := range []bool{false, true} {
		s := spec{domain: ops.RewriteDomain, op: "Linear", opset: 1, inputs: 4, consts: []*tensor.Tensor{nil, w, bias, nil}, quantize: quantize, scheme: quant.PerChannel,
			attrs: []*onnxpb.Attribute{{Name: "activation", Type: onnxpb.AttrString, S: []byte("Gelu")}, attrInt("opset", 20)}}
		op, _ := mustCompile(t, s)
		y := opstest.SplitRun(t, "Linear with Gelu", op, x, nil, nil, res)[0].Data.([]float32)
		mm, _ := mustCompile(t, spec{op: "MatMul", opset: 20, inputs: 2, consts: []*tensor.Tensor{nil, w}, quantize: quantize, scheme: quant.PerChannel})
		y0 := run1(t, mm, nil, x, w).Data.([]float32)
		for i, v := range y0 {
			want := gelu(float64(v)+float64(bias.Data.([]float32)[i%n])) + float64(res.Data.([]float32)[i])
			if d := math.Abs(float64(y[i]) - want); d > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("quantize %v: y[%d] = %v, want %v", quantize, i, y[i], want)
			}
		}
	}
}

// TestFusedLinearFinishBits: a Linear of a bias and no activation adds
// its bias and residual in the product's finish, as each row tile is
// written, with the bits of the pass it replaces: float32((y + bias) +
// residual) on the MatMul's own y, on every table, float and int8
// weights, a last panel of columns past N and row tiles cut short.
func TestFusedLinearFinishBits(t *testing.T) {
	const m, k, n = 37, 96, 100
	r := rand.New(rand.NewPCG(12, 12))
	x, w := randFloats(r, m, k), randFloats(r, k, n)
	bias, res := randFloats(r, n), randFloats(r, m, n)
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 1)
		for _, quantize := range []bool{false, true} {
			for _, withRes := range []bool{false, true} {
				in := []*tensor.Tensor{x, w, bias}
				if withRes {
					in = append(in, res)
				}
				consts := make([]*tensor.Tensor, len(in))
				consts[1], consts[2] = w, bias
				op, _ := mustCompile(t, spec{domain: ops.RewriteDomain, op: "Linear", opset: 1, inputs: len(in), consts: consts, engine: e, quantize: quantize, scheme: quant.PerChannel,
					attrs: []*onnxpb.Attribute{{Name: "activation", Type: onnxpb.AttrString, S: []byte("")}, attrInt("opset", 20)}})
				mm, _ := mustCompile(t, spec{op: "MatMul", opset: 20, inputs: 2, consts: consts[:2], engine: e, quantize: quantize, scheme: quant.PerChannel})
				y0 := run1(t, mm, e, x, w).Data.([]float32)
				run := slices.Clone(in)
				run[1], run[2] = nil, nil // held
				y := run1(t, op, e, run...).Data.([]float32)
				bd, rd := bias.Data.([]float32), res.Data.([]float32)
				for i, v := range y0 {
					want := v + bd[i%n]
					if withRes {
						want += rd[i]
					}
					if math.Float32bits(y[i]) != math.Float32bits(want) {
						t.Fatalf("%s quantize %v residual %v: y[%d] = %v, (y + bias) + residual %v", tb.Name, quantize, withRes, i, y[i], want)
					}
				}
			}
		}
		e.Close()
	}
}
