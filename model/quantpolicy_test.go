package model_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// policyGraph is a model whose products reach, one each, the operators the
// quantization policy tells apart. onnxbuild names node i Op_<'a'+i>.
func policyGraph(seed uint64) onnxbuild.Graph {
	r := rand.New(rand.NewPCG(seed, 7))
	pos := func(shape ...int) *tensor.Tensor { // positive: a product of positives is one, and has a Log
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = 0.01 + r.Float32()
		}
		return tensor.From(shape, v)
	}
	const k, n = 128, 64 // 8,192 weights: over the size int8 pays at
	scalar := func(v float32) *onnxpb.Attribute {
		return &onnxpb.Attribute{Name: "value", Type: onnxpb.AttrTensor, T: model.TensorToONNX("", tensor.From([]int{}, []float32{v}))}
	}
	out := func(names ...string) []onnxbuild.IO {
		var ios []onnxbuild.IO
		for _, s := range names {
			ios = append(ios, onnxbuild.V(s, tensor.Float32, -1, n))
		}
		return ios
	}
	return onnxbuild.Graph{
		Opset:   17,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, k), onnxbuild.V("d", tensor.Float32, -1, n)},
		Outputs: out("log", "relu", "scaled", "div", "square", "root", "norm"),
		Inits: map[string]*tensor.Tensor{
			"w1": pos(k, n), "w2": pos(k, n), "w3": pos(k, n), "w4": pos(k, n), "w5": pos(k, n), "w6": pos(k, n), "w7": pos(k, n),
			"bias": pos(n), "sqrt2": tensor.From([]int{}, []float32{1.4142135}), "eps": tensor.From([]int{}, []float32{1e-5}),
		},
		Nodes: []onnxbuild.Node{
			{Op: "MatMul", Inputs: []string{"x", "w1"}, Outputs: []string{"p1"}},                 // a: -> Add -> Log: float
			{Op: "Add", Inputs: []string{"p1", "bias"}, Outputs: []string{"p1b"}},                // b
			{Op: "Log", Inputs: []string{"p1b"}, Outputs: []string{"log"}},                       // c
			{Op: "MatMul", Inputs: []string{"x", "w2"}, Outputs: []string{"p2"}},                 // d: -> Relu: int8
			{Op: "Relu", Inputs: []string{"p2"}, Outputs: []string{"relu"}},                      // e
			{Op: "MatMul", Inputs: []string{"x", "w3"}, Outputs: []string{"p3"}},                 // f: -> Div by a constant (x/√2) -> Neg: int8
			{Op: "Div", Inputs: []string{"p3", "sqrt2"}, Outputs: []string{"p3s"}},               // g
			{Op: "Neg", Inputs: []string{"p3s"}, Outputs: []string{"scaled"}},                    // h
			{Op: "MatMul", Inputs: []string{"x", "w4"}, Outputs: []string{"p4"}},                 // i: -> Div by an input: float
			{Op: "Div", Inputs: []string{"p4", "d"}, Outputs: []string{"div"}},                   // j
			{Op: "Constant", Outputs: []string{"two"}, Attrs: []*onnxpb.Attribute{scalar(2)}},    // k
			{Op: "MatMul", Inputs: []string{"x", "w5"}, Outputs: []string{"p5"}},                 // l: -> Pow 2: int8
			{Op: "Pow", Inputs: []string{"p5", "two"}, Outputs: []string{"square"}},              // m
			{Op: "Constant", Outputs: []string{"half"}, Attrs: []*onnxpb.Attribute{scalar(0.5)}}, // n
			{Op: "MatMul", Inputs: []string{"x", "w6"}, Outputs: []string{"p6"}},                 // o: -> Pow 0.5: float
			{Op: "Pow", Inputs: []string{"p6", "half"}, Outputs: []string{"root"}},               // p
			// q..x: a LayerNormalization written out, Sqrt and Div and all: int8
			{Op: "MatMul", Inputs: []string{"x", "w7"}, Outputs: []string{"p7"}},                                                              // q
			{Op: "ReduceMean", Inputs: []string{"p7"}, Outputs: []string{"mu"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("axes", -1)}},   // r
			{Op: "Sub", Inputs: []string{"p7", "mu"}, Outputs: []string{"xc"}},                                                                // s
			{Op: "Pow", Inputs: []string{"xc", "two"}, Outputs: []string{"xc2"}},                                                              // t
			{Op: "ReduceMean", Inputs: []string{"xc2"}, Outputs: []string{"var"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("axes", -1)}}, // u
			{Op: "Add", Inputs: []string{"var", "eps"}, Outputs: []string{"vare"}},                                                            // v
			{Op: "Sqrt", Inputs: []string{"vare"}, Outputs: []string{"sd"}},                                                                   // w
			{Op: "Div", Inputs: []string{"xc", "sd"}, Outputs: []string{"norm"}},                                                              // x
		},
	}
}

// policyWant is how each product of policyGraph runs in int8: its kernels,
// and the output it alone makes.
var policyWant = []struct {
	node, kernels, output string
}{
	{"MatMul_a", "float32 (feeds Log)", "log"},
	{"MatMul_d", "int8 per_channel", "relu"},
	{"MatMul_f", "int8 per_channel", "scaled"},
	{"MatMul_i", "float32 (feeds Div)", "div"},
	{"MatMul_l", "int8 per_channel", "square"},
	{"MatMul_o", "float32 (feeds Pow)", "root"},
	{"MatMul_q", "int8 per_channel", "norm"},
}

func policyInputs(seed uint64) map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 11))
	x, d := make([]float32, 3*128), make([]float32, 3*64)
	for i := range x {
		x[i] = r.Float32()
	}
	for i := range d {
		d[i] = 0.5 + r.Float32()
	}
	return map[string]*tensor.Tensor{"x": tensor.From([]int{3, 128}, x), "d": tensor.From([]int{3, 64}, d)}
}

// TestQuantizationPolicy: a product whose result reaches Log, a Div by a
// computed value or a fractional Pow before any normalization stays
// float32 and says why; one that reaches Relu, a Div by a constant, a
// square or a LayerNormalization written out runs on the int8 kernels.
// The layers say so, and the outputs show it: a float32 layer's output is
// the float32 model's, bit for bit; an int8 layer's is not.
func TestQuantizationPolicy(t *testing.T) {
	data := policyGraph(1).Bytes()
	f32, err := model.LoadWith(data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i8, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	if got := model.Int8Layers(f32.Layers); got != 0 {
		t.Errorf("float32 model: %d int8 layers, want 0: %+v", got, f32.Layers)
	}
	in := policyInputs(2)
	want, err := f32.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := i8.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	int8s := 0
	for _, w := range policyWant {
		i := slices.IndexFunc(i8.Layers, func(l model.Layer) bool { return l.Node == w.node })
		if i < 0 {
			t.Errorf("%s: no layer in %+v", w.node, i8.Layers)
			continue
		}
		l := i8.Layers[i]
		int8 := strings.HasPrefix(w.kernels, "int8")
		if l.Kernels != w.kernels || l.Int8() != int8 {
			t.Errorf("%s: kernels %q (int8 %v), want %q", w.node, l.Kernels, l.Int8(), w.kernels)
		}
		if int8 {
			int8s++
		}
		same := slices.Equal(got[w.output].Data.([]float32), want[w.output].Data.([]float32))
		if same == int8 {
			t.Errorf("%s: output %q equal to the float32 model's: %v; the layer runs int8: %v", w.node, w.output, same, int8)
		}
	}
	if n := model.Int8Layers(i8.Layers); n != int8s || len(i8.Layers) != len(policyWant) {
		t.Errorf("%d of %d layers int8, want %d of %d", n, len(i8.Layers), int8s, len(policyWant))
	}
}

// TestQuantizeExclude: the nodes Options.QuantizeExclude names stay
// float32 and say so; a name that is no node of the model fails the load,
// and so does a recurrent node's, whose products are not excluded one by
// one.
func TestQuantizeExclude(t *testing.T) {
	data := policyGraph(1).Bytes()
	m, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel, QuantizeExclude: []string{"MatMul_d", "MatMul_a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range m.Layers {
		want := ""
		switch l.Node {
		case "MatMul_d", "MatMul_a":
			want = "float32 (quantize_exclude)"
		case "MatMul_f":
			want = "int8 per_channel"
		default:
			continue
		}
		if l.Kernels != want {
			t.Errorf("%s: kernels %q, want %q", l.Node, l.Kernels, want)
		}
	}
	// An LSTM's input projections (64 inputs to 4 gates of 32: 8,192
	// weights) go int8 unless the node is excluded.
	lstm := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("X", tensor.Float32, -1, -1, 64)},
		Outputs: []onnxbuild.IO{onnxbuild.V("Y", tensor.Float32)},
		Inits:   map[string]*tensor.Tensor{"W": tensor.From([]int{1, 128, 64}, make([]float32, 128*64)), "R": tensor.From([]int{1, 128, 32}, make([]float32, 128*32))},
		Nodes: []onnxbuild.Node{{Op: "LSTM", Inputs: []string{"X", "W", "R"}, Outputs: []string{"Y"},
			Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("hidden_size", 32)}}},
	}.Bytes()
	for _, c := range []struct {
		exclude []string
		int8    bool
	}{{nil, true}, {[]string{"LSTM_a"}, false}} {
		m, err := model.LoadWith(lstm, model.Options{Quantize: true, QuantizeExclude: c.exclude})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Layers) != 1 || m.Layers[0].Int8() != c.int8 || !c.int8 && !strings.HasPrefix(m.Layers[0].Kernels, "float32 (quantize_exclude)") {
			t.Errorf("LSTM excluding %v: layers %+v, want int8 %v", c.exclude, m.Layers, c.int8)
		}
	}
	for _, opts := range []model.Options{{Quantize: true, QuantizeExclude: []string{"MatMul_zz"}}, {QuantizeExclude: []string{"matmul_d"}}} {
		_, err := model.LoadWith(data, opts)
		if err == nil || !strings.Contains(err.Error(), "quantize_exclude") || !strings.Contains(err.Error(), opts.QuantizeExclude[0]) {
			t.Errorf("exclude %v: err %v, want one naming the node", opts.QuantizeExclude, err)
		}
	}
}

// TestQuantizationPolicyConv: a convolution whose result reaches Exp
// stays float32; the one beside it, through Relu, runs int8.
func TestQuantizationPolicyConv(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	w := func() *tensor.Tensor {
		v := make([]float32, 64*16*3*3)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.05)
		}
		return tensor.From([]int{64, 16, 3, 3}, v)
	}
	g := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, 16, 8, 8)},
		Outputs: []onnxbuild.IO{onnxbuild.V("e", tensor.Float32), onnxbuild.V("r", tensor.Float32)},
		Inits:   map[string]*tensor.Tensor{"w1": w(), "w2": w()},
		Nodes: []onnxbuild.Node{
			{Op: "Conv", Inputs: []string{"x", "w1"}, Outputs: []string{"c1"}},
			{Op: "Exp", Inputs: []string{"c1"}, Outputs: []string{"e"}},
			{Op: "Conv", Inputs: []string{"x", "w2"}, Outputs: []string{"c2"}},
			{Op: "Relu", Inputs: []string{"c2"}, Outputs: []string{"r"}},
		},
	}
	m, err := model.LoadWith(g.Bytes(), model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Conv_a": "float32 (feeds Exp)", "Conv_c": "int8 per_channel"}
	if len(m.Layers) != 2 {
		t.Fatalf("layers %+v, want 2", m.Layers)
	}
	for _, l := range m.Layers {
		if l.Kernels != want[l.Node] {
			t.Errorf("%s: kernels %q, want %q", l.Node, l.Kernels, want[l.Node])
		}
	}
}

// TestInt8LayersCount: the layers counted as int8 are the ones on the int8
// kernels, not every layer whose kernels say more than "float32": the
// PaddleOCR classifier runs 4 of its 54 layers in int8 (the rest are its
// input layer, depthwise and small convolutions), the onnxbuild MLP 1 of 2
// (the 128×10 head is too small to pay), and with quantization off none.
func TestInt8LayersCount(t *testing.T) {
	cases := []struct {
		name       string
		data       func(t *testing.T) []byte
		layers, i8 int
	}{
		{"paddleocr_cls_mobile_v2", func(t *testing.T) []byte {
			data, err := os.ReadFile(filepath.Join(shareddata.Dir(t, "models"), "paddleocr_cls_mobile_v2", "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			return data
		}, 54, 4},
		{"onnxbuild MLP 784-128-10", func(*testing.T) []byte { return onnxbuild.MLP([]int{784, 128, 10}, 1).Bytes() }, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.data(t)
			for _, q := range []bool{true, false} {
				m, err := model.LoadWith(data, model.Options{Quantize: q, Scheme: quant.PerChannel})
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				if q {
					want = c.i8
				}
				if len(m.Layers) != c.layers || model.Int8Layers(m.Layers) != want {
					t.Errorf("quantize %v: %d of %d layers int8, want %d of %d", q, model.Int8Layers(m.Layers), len(m.Layers), want, c.layers)
				}
				for _, l := range m.Layers {
					if l.Int8() != strings.HasPrefix(l.Kernels, "int8 ") || l.Int8() && !q {
						t.Errorf("quantize %v: layer %+v: Int8 %v", q, l, l.Int8())
					}
				}
			}
		})
	}
}
