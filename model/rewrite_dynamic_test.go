package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// dynamicProduct is one MatMul as ONNX Runtime's quantize_dynamic writes
// it, for the tests: the weight, its zero point (nil: absent), its scale
// and bias (nil: none), and which operand comes first in each Mul.
type dynamicProduct struct {
	w, wz, ws, bias      *tensor.Tensor
	swapScale, swapOut   bool
	biasFirst, castTwice bool   // castTwice: another node reads the Cast's output
	act                  string // "", or the activation after the bias: Gelu, GeluTanh, Relu or SiLU (Sigmoid and Mul)
	res                  []int  // the residual's shape (nil: none), an input "r<j>"
	lateRes              bool   // the residual is computed after the DynamicQuantizeLinear
}

// dynamicGraph writes x [2, 7, k] -> DynamicQuantizeLinear -> one chain per
// product, output "y<j>"; with keepXQ the quantized x is an output too.
func dynamicGraph(k int, prods []dynamicProduct, keepXQ bool) onnxbuild.Graph {
	g := onnxbuild.Graph{
		Opset:  20,
		Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 2, 7, k)},
		Inits:  map[string]*tensor.Tensor{},
		Nodes:  []onnxbuild.Node{{Op: "DynamicQuantizeLinear", Inputs: []string{"x"}, Outputs: []string{"xq", "xs", "xz"}}},
	}
	if keepXQ {
		g.Outputs = append(g.Outputs, onnxbuild.V("xq", tensor.Uint8, 2, 7, k))
	}
	node := func(op string, out string, in ...string) {
		g.Nodes = append(g.Nodes, onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}})
	}
	for j, p := range prods {
		v := func(s string) string { return fmt.Sprintf("%s%d", s, j) }
		g.Inits[v("w")], g.Inits[v("ws")] = p.w, p.ws
		in := []string{"xq", v("w"), "xz"}
		if p.wz != nil {
			g.Inits[v("wz")] = p.wz
			in = append(in, v("wz"))
		}
		node("MatMulInteger", v("mi"), in...)
		g.Nodes = append(g.Nodes, onnxbuild.Node{Op: "Cast", Inputs: []string{v("mi")}, Outputs: []string{v("cast")},
			Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("to", int64(onnxpb.Float))}})
		if p.swapScale {
			node("Mul", v("s"), v("ws"), "xs")
		} else {
			node("Mul", v("s"), "xs", v("ws"))
		}
		out := v("y")
		if p.bias != nil {
			out = v("scaled")
		}
		if p.swapOut {
			node("Mul", out, v("s"), v("cast"))
		} else {
			node("Mul", out, v("cast"), v("s"))
		}
		n := p.w.Shape[1]
		last := func() string { return g.Nodes[len(g.Nodes)-1].Outputs[0] }
		if p.bias != nil {
			g.Inits[v("b")] = p.bias
			if p.biasFirst {
				node("Add", v("y"), v("b"), out)
			} else {
				node("Add", v("y"), out, v("b"))
			}
		}
		if p.act != "" || p.res != nil {
			g.Nodes[len(g.Nodes)-1].Outputs[0] = v("pre")
		}
		switch p.act {
		case "Gelu", "Relu":
			node(p.act, v("y"), last())
		case "GeluTanh":
			g.Nodes = append(g.Nodes, onnxbuild.Node{Op: "Gelu", Inputs: []string{last()}, Outputs: []string{v("y")},
				Attrs: []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte("tanh")}}})
		case "SiLU":
			pre := last()
			node("Sigmoid", v("sig"), pre)
			node("Mul", v("y"), pre, v("sig"))
		}
		if p.act != "" && p.res != nil {
			g.Nodes[len(g.Nodes)-1].Outputs[0] = v("act")
		}
		if p.res != nil {
			g.Inputs = append(g.Inputs, onnxbuild.V(v("r"), tensor.Float32, p.res...))
			res := v("r")
			if p.lateRes {
				node("Neg", v("rneg"), res)
				res = v("rneg")
			}
			node("Add", v("y"), res, last())
		}
		g.Outputs = append(g.Outputs, onnxbuild.V(v("y"), tensor.Float32, 2, 7, n))
		if p.castTwice {
			node("Neg", v("neg"), v("cast"))
			g.Outputs = append(g.Outputs, onnxbuild.V(v("neg"), tensor.Float32, 2, 7, n))
		}
	}
	return g
}

// dynamicReference computes product p of x as the ONNX specification
// writes each node, independently of the operators: DynamicQuantizeLinear
// in float64 from float32 division, the product in int64 wrapped to int32,
// then float32 Cast, Mul and Add.
func dynamicReference(x []float32, k int, p dynamicProduct) []float32 {
	var lo, hi float32
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	scale := (hi - lo) / 255
	zp := 0.0
	q := make([]int64, len(x))
	if scale != 0 {
		zp = min(max(math.RoundToEven(float64(-lo/scale)), 0), 255)
		for i, v := range x {
			q[i] = int64(min(max(math.RoundToEven(float64(v/scale))+zp, 0), 255))
		}
	}
	w, _ := p.w.Int64s()
	n := p.w.Shape[1]
	var wz []int64
	if p.wz != nil {
		wz, _ = p.wz.Int64s()
	}
	ws := p.ws.Data.([]float32)
	m := len(x) / k
	y := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var acc int64
			for l := range k {
				b := w[l*n+j]
				if len(wz) == 1 {
					b -= wz[0]
				} else if len(wz) > 1 {
					b -= wz[j]
				}
				acc += (q[i*k+l] - int64(zp)) * b
			}
			s := scale * ws[min(j, len(ws)-1)]
			v := float32(float32(int32(acc)) * s)
			if p.bias != nil {
				v = float32(v + p.bias.Data.([]float32)[j])
			}
			y[i*n+j] = v
		}
	}
	return y
}

func int8s(r *rand.Rand, lo, hi int, shape ...int) *tensor.Tensor {
	v := make([]int8, numel(shape))
	for i := range v {
		v[i] = int8(lo + r.IntN(hi-lo+1))
	}
	return tensor.From(shape, v)
}

func uint8s(r *rand.Rand, shape ...int) *tensor.Tensor {
	v := make([]uint8, numel(shape))
	for i := range v {
		v[i] = uint8(r.IntN(256))
	}
	return tensor.From(shape, v)
}

func positive(r *rand.Rand, shape ...int) *tensor.Tensor {
	t := randFloats(r, 0.1, shape...)
	for i, v := range t.Data.([]float32) {
		t.Data.([]float32)[i] = float32(math.Abs(float64(v)))
	}
	return t
}

// TestDynamicRewrite: ONNX Runtime's dynamically quantized products
// (per-tensor and per-column weights, either operand order, with and
// without a bias, three of them sharing one quantized input) fuse into
// one quantserve.DynamicLinear whose outputs are the unfused graph's and
// the specification's bit for bit, on every kernel table at one and two
// threads; what others read stays.
func TestDynamicRewrite(t *testing.T) {
	const k = 40
	r := rand.New(rand.NewPCG(3, 4))
	prods := []dynamicProduct{
		{w: int8s(r, -127, 127, k, 24), wz: tensor.Scalar(int8(0)), ws: tensor.Scalar(float32(0.013)), bias: randFloats(r, 1, 24)},
		{w: uint8s(r, k, 16), wz: uint8s(r, 16), ws: positive(r, 16), swapScale: true, swapOut: true},
		{w: int8s(r, -128, 127, k, 8), ws: tensor.From([]int{1}, []float32{0.02}), bias: randFloats(r, 1, 8), biasFirst: true},
	}
	inputs := map[string]*tensor.Tensor{
		"signed":   randFloats(r, 1, 2, 7, k),
		"positive": positive(r, 2, 7, k),
		"zeros":    tensor.From([]int{2, 7, k}, make([]float32, 2*7*k)),
		"halves":   tensor.From([]int{2, 7, k}, make([]float32, 2*7*k)),
	}
	// values whose quotient by the scale falls on .5: ties to even
	for i := range inputs["halves"].Data.([]float32) {
		inputs["halves"].Data.([]float32)[i] = float32(i%11) - 5 + 0.5
	}
	inputs["halves"].Data.([]float32)[0] = 127.5 // scale 1, zero point 128
	inputs["halves"].Data.([]float32)[1] = -127.5
	withRes := []dynamicProduct{
		{w: prods[0].w, wz: prods[0].wz, ws: prods[0].ws, bias: prods[0].bias, act: "Gelu", res: []int{2, 7, 24}},
		{w: prods[1].w, wz: prods[1].wz, ws: prods[1].ws, res: []int{16}},
		{w: prods[2].w, ws: prods[2].ws, bias: prods[2].bias, res: []int{2, 7, 8}, lateRes: true},
		{w: prods[2].w, ws: prods[2].ws, act: "Gelu"},
	}
	// the other activations, after a bias and before a residual
	acts := []dynamicProduct{
		{w: prods[0].w, wz: prods[0].wz, ws: prods[0].ws, bias: prods[0].bias, act: "SiLU", res: []int{2, 7, 24}},
		{w: prods[1].w, wz: prods[1].wz, ws: prods[1].ws, act: "SiLU"},
		{w: prods[2].w, ws: prods[2].ws, bias: prods[2].bias, act: "GeluTanh"},
		{w: prods[2].w, ws: prods[2].ws, act: "Relu", res: []int{2, 7, 8}},
	}
	for _, c := range []struct {
		name   string
		prods  []dynamicProduct
		keepXQ bool
		steps  []string
	}{
		{"qkv", prods, false, []string{"DynamicLinear"}},
		{"gelu residual", withRes, false, []string{"DynamicLinear", "Neg", "Add"}},
		{"silu, tanh gelu, relu", acts, false, []string{"DynamicLinear"}},
		{"xq read", prods[:1], true, []string{"DynamicQuantizeLinear", "DynamicLinear"}},
		{"cast read", []dynamicProduct{prods[0], {w: prods[1].w, wz: prods[1].wz, ws: prods[1].ws, castTwice: true}},
			false, []string{"DynamicQuantizeLinear", "DynamicLinear", "MatMulInteger", "Cast", "Mul", "Mul", "Neg"}},
	} {
		data := dynamicGraph(k, c.prods, c.keepXQ).Bytes()
		for _, tb := range dispatch.Available() {
			for _, threads := range []int{1, 2} {
				e := gemm.New(tb, threads)
				name := fmt.Sprintf("%s/%s/%d", c.name, tb.Name, threads)
				fused, err := model.LoadWith(data, model.Options{Exec: e})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var ops []string
				for _, s := range fused.Steps() {
					ops = append(ops, s.Op)
				}
				if !slices.Equal(ops, c.steps) {
					t.Errorf("%s: steps %v, want %v", name, ops, c.steps)
				}
				plain, err := model.LoadWith(data, model.Options{Exec: e, Unrewritten: true})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for in, x := range inputs {
					feed := map[string]*tensor.Tensor{"x": x}
					for j, p := range c.prods {
						if p.res != nil {
							feed[fmt.Sprintf("r%d", j)] = randFloats(rand.New(rand.NewPCG(uint64(j), 1)), 1, p.res...)
						}
					}
					got, err := fused.Run(context.Background(), feed, nil)
					if err != nil {
						t.Fatalf("%s %s: %v", name, in, err)
					}
					want, err := plain.Run(context.Background(), feed, nil)
					if err != nil {
						t.Fatalf("%s %s: %v", name, in, err)
					}
					for j, p := range c.prods {
						out := fmt.Sprintf("y%d", j)
						ref := dynamicReference(x.Data.([]float32), k, p)
						if p.act != "" || p.res != nil {
							ref = nil // the activation's kernel and the residual: the unfused graph is the reference
						}
						if !slices.Equal(shapeOf(got[out]), []int{2, 7, p.w.Shape[1]}) {
							t.Fatalf("%s %s: %s shape %v", name, in, out, got[out].Shape)
						}
						sameBits(t, name+" "+in+" "+out+" fused/unfused", got[out].Data.([]float32), want[out].Data.([]float32))
						if ref != nil {
							sameBits(t, name+" "+in+" "+out+" fused/spec", got[out].Data.([]float32), ref)
						}
					}
				}
				e.Close()
			}
		}
	}
}

// TestDynamicRewriteNonFinite: with NaN or ±Inf in x the fused node still
// gives what the unfused graph gives.
func TestDynamicRewriteNonFinite(t *testing.T) {
	const k = 16
	r := rand.New(rand.NewPCG(5, 6))
	prods := []dynamicProduct{{w: int8s(r, -127, 127, k, 8), wz: tensor.Scalar(int8(0)), ws: tensor.Scalar(float32(0.01)), bias: randFloats(r, 1, 8)}}
	data := dynamicGraph(k, prods, false).Bytes()
	fused, err := model.LoadWith(data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := model.LoadWith(data, model.Options{Unrewritten: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		x := randFloats(r, 1, 2, 7, k)
		x.Data.([]float32)[17] = bad
		feed := map[string]*tensor.Tensor{"x": x}
		got, err := fused.Run(context.Background(), feed, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Run(context.Background(), feed, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, fmt.Sprint(bad), got["y0"].Data.([]float32), want["y0"].Data.([]float32))
	}
	// a wrong inner dimension is the request's error, not a panic
	if _, err := fused.Run(context.Background(), map[string]*tensor.Tensor{"x": randFloats(r, 1, 2, 7, k+1)}, nil); err == nil {
		t.Error("x of the wrong width ran")
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func shapeOf(t *tensor.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}

// sameBits fails unless a and b hold the same float32 values bit for bit
// (any NaN matching any NaN).
func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, want %d", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, a[i], b[i])
		}
	}
}
