package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// Convolutional networks through the graph compiler: the layers a
// convolution reports and the weights it frees, batches of images through
// a chain of convolutions, and the convolution rewrites (package ops/conv
// tests the operators themselves).

// convSpec describes one convolution node for tests.
type convSpec struct {
	op        string // Conv (default) or ConvTranspose
	opset     int64
	x, w      []int
	bias      bool
	constW    bool // the weight is an initializer (held by the kernels)
	attrs     []*onnxpb.Attribute
	dtype     tensor.DataType
	batchDyn  bool // the batch dimension is dynamic
	xInitSeed uint64
}

func convInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func convInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func convStr(name, v string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
}

func convRandom(r *rand.Rand, shape []int) []float32 {
	n := prodInts(shape)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// convModelBytes writes a one-node model: inputs x (and w, b when not
// constant), output y.
func convModelBytes(s convSpec, w, b *tensor.Tensor) []byte {
	op := s.op
	if op == "" {
		op = "Conv"
	}
	opset := s.opset
	if opset == 0 {
		opset = 22
	}
	dt := s.dtype
	if dt == 0 {
		dt = tensor.Float32
	}
	vi := func(name string, shape []int) *onnxpb.ValueInfo {
		t := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(dt), HasShape: shape != nil}
		for i, d := range shape {
			if i == 0 && s.batchDyn && name == "x" {
				t.Shape = append(t.Shape, onnxpb.Dim{Param: "N"})
				continue
			}
			t.Shape = append(t.Shape, onnxpb.Dim{Value: int64(d), HasValue: true})
		}
		return &onnxpb.ValueInfo{Name: name, Type: t}
	}
	g := &onnxpb.Graph{Name: "conv"}
	g.Inputs = append(g.Inputs, vi("x", s.x))
	inputs := []string{"x", "w"}
	if s.constW {
		g.Initializers = append(g.Initializers, TensorToONNX("w", w))
	} else {
		g.Inputs = append(g.Inputs, vi("w", w.Shape))
	}
	if b != nil {
		inputs = append(inputs, "b")
		if s.constW {
			g.Initializers = append(g.Initializers, TensorToONNX("b", b))
		} else {
			g.Inputs = append(g.Inputs, vi("b", b.Shape))
		}
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "conv", Inputs: inputs, Outputs: []string{"y"}, Attributes: s.attrs}}
	g.Outputs = []*onnxpb.ValueInfo{vi("y", nil)}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g})
}

func convLoad(t *testing.T, s convSpec, w, b *tensor.Tensor, opts Options) *Model {
	t.Helper()
	m, err := LoadWith(convModelBytes(s, w, b), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func convRun1(m *Model, in map[string]*tensor.Tensor) (*tensor.Tensor, error) {
	out, err := m.Run(context.Background(), in, nil)
	if err != nil {
		return nil, err
	}
	return out["y"], nil
}

// TestConvLayers checks what each convolution records about how it runs.
func TestConvLayers(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		op     string
		x, w   []int
		attrs  []*onnxpb.Attribute
		opts   Options
		layer  Layer
		layers int
	}{
		{"Conv", []int{1, 16, 8, 8}, []int{64, 16, 3, 3}, nil, Options{Quantize: true, Scheme: quant.PerChannel}, Layer{Op: "Conv", K: 144, N: 64, Kernels: "int8 per_channel"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{64, 16, 3, 3}, nil, Options{Quantize: true, Scheme: quant.PerBlock}, Layer{Op: "Conv", K: 144, N: 64, Kernels: "int8 per_block"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{32, 16, 3, 3}, nil, Options{Quantize: true, Scheme: quant.PerChannel}, Layer{Op: "Conv", K: 144, N: 32, Kernels: "float32 (small weight)"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{32, 16, 3, 3}, nil, Options{}, Layer{Op: "Conv", K: 144, N: 32, Kernels: "float32"}, 1},
		{"Conv", []int{1, 3, 8, 8}, []int{64, 3, 7, 7}, nil, Options{Quantize: true}, Layer{Op: "Conv", K: 147, N: 64, Kernels: "int8 per_tensor (per-image activations)"}, 1},
		{"Conv", []int{1, 3, 8, 8}, []int{64, 3, 7, 7}, nil, Options{Quantize: true, Scheme: quant.PerBlock}, Layer{Op: "Conv", K: 147, N: 64, Kernels: "float32 (input layer: 3 input channels)"}, 1},
		{"Conv", []int{1, 8, 8, 8}, []int{8, 8, 1, 1}, nil, Options{Quantize: true}, Layer{Op: "Conv", K: 8, N: 8, Kernels: "float32 (small weight)"}, 1},
		{"Conv", []int{1, 16, 8, 8}, []int{16, 1, 3, 3}, []*onnxpb.Attribute{convInt("group", 16)}, Options{Quantize: true}, Layer{Op: "Conv", K: 9, N: 1, Kernels: "depthwise float32, 16 groups"}, 1},
		{"Conv", []int{1, 64, 8, 8}, []int{64, 32, 3, 3}, []*onnxpb.Attribute{convInt("group", 2)}, Options{Quantize: true}, Layer{Op: "Conv", K: 288, N: 32, Kernels: "int8 per_tensor, 2 groups"}, 1},
		{"ConvTranspose", []int{1, 32, 8, 8}, []int{32, 16, 4, 4}, nil, Options{Quantize: true, Scheme: quant.PerChannel}, Layer{Op: "ConvTranspose", K: 32, N: 256, Kernels: "int8 per_channel"}, 1},
	} {
		w := tensor.From(c.w, convRandom(r, c.w))
		m := convLoad(t, convSpec{op: c.op, x: c.x, constW: true, attrs: c.attrs}, w, nil, c.opts)
		c.layer.Node = "conv"
		if len(m.Layers) != c.layers || m.Layers[0] != c.layer {
			t.Errorf("%s %v %v: layers %+v, want %+v", c.op, c.w, c.opts, m.Layers, c.layer)
		}
		for _, cs := range m.constants {
			if cs.t.Len() == w.Len() && !dispatch.AutodiffBuilt {
				t.Errorf("%s %v: the float weight is still held beside the kernels' copy", c.op, c.w)
			}
		}
	}
}

// convPoint is one output of a 2-D, one-group, undilated convolution by
// its definition: its value and Σ|x·w|.
func convPoint(x []float32, xs []int, w []float32, ws []int, bias []float32, strides, pads []int, b, m, oy, ox int) (float64, float64) {
	c, h, wd := xs[1], xs[2], xs[3]
	kh, kw := ws[2], ws[3]
	s := float64(bias[m])
	var mag float64
	for ci := 0; ci < c; ci++ {
		for ky := 0; ky < kh; ky++ {
			iy := oy*strides[0] - pads[0] + ky
			if iy < 0 || iy >= h {
				continue
			}
			for kx := 0; kx < kw; kx++ {
				ix := ox*strides[1] - pads[1] + kx
				if ix < 0 || ix >= wd {
					continue
				}
				xv := x[((b*c+ci)*h+iy)*wd+ix]
				wv := w[((m*c+ci)*kh+ky)*kw+kx]
				s += float64(xv) * float64(wv)
				mag += convAbs(xv) * convAbs(wv)
			}
		}
	}
	return s, mag
}

func convAbs(v float32) float64 { return math.Abs(float64(v)) }

// TestConvReluConvChain runs Conv→Relu→Conv over 224×224 images at batch 1
// and 8: outputs sampled across the image match the definition (float32),
// every image of the batch gives the bits it gives alone (in int8, the
// input layer quantizes each image on its own range: image 5 spans four
// times the others'), and int8 stays within 2% of the output range of
// float32.
func TestConvReluConvChain(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	const c1 = 64 // the first layer's channels: enough weights for int8
	w1s, w2s := []int{c1, 3, 7, 7}, []int{64, c1, 3, 3}
	w1, w2 := tensor.From(w1s, convRandom(r, w1s)), tensor.From(w2s, convRandom(r, w2s))
	b1, b2 := tensor.From([]int{c1}, convRandom(r, []int{c1})), tensor.From([]int{64}, convRandom(r, []int{64}))
	vi := func(name string, shape ...int) *onnxpb.ValueInfo {
		t := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float, HasShape: true}
		for i, d := range shape {
			if i == 0 {
				t.Shape = append(t.Shape, onnxpb.Dim{Param: "N"})
			} else {
				t.Shape = append(t.Shape, onnxpb.Dim{Value: int64(d), HasValue: true})
			}
		}
		return &onnxpb.ValueInfo{Name: name, Type: t}
	}
	const side, mid, out = 224, 112, 56 // each convolution has stride 2
	g := &onnxpb.Graph{
		Name:    "chain",
		Inputs:  []*onnxpb.ValueInfo{vi("x", -1, 3, side, side)},
		Outputs: []*onnxpb.ValueInfo{vi("y", -1, 64, out, out)},
		Initializers: []*onnxpb.Tensor{
			TensorToONNX("w1", w1), TensorToONNX("b1", b1), TensorToONNX("w2", w2), TensorToONNX("b2", b2),
		},
		Nodes: []*onnxpb.Node{
			{OpType: "Conv", Name: "conv1", Inputs: []string{"x", "w1", "b1"}, Outputs: []string{"h"}, Attributes: []*onnxpb.Attribute{convInts("pads", 3, 3, 3, 3), convInts("strides", 2, 2)}},
			{OpType: "Relu", Name: "relu", Inputs: []string{"h"}, Outputs: []string{"hr"}},
			{OpType: "Conv", Name: "conv2", Inputs: []string{"hr", "w2", "b2"}, Outputs: []string{"y"}, Attributes: []*onnxpb.Attribute{convInts("pads", 1, 1, 1, 1), convInts("strides", 2, 2)}},
		},
	}
	data := onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 17}}, Graph: g})
	const batch = 8
	xs := []int{batch, 3, side, side}
	xv := convRandom(r, xs)
	image := 3 * side * side
	for i := 5 * image; i < 6*image; i++ {
		xv[i] *= 4
	}
	outImage := 64 * out * out
	// relu(conv1) at one position, every channel, by the definition
	hr := func(b, y, x int) []float32 {
		v := make([]float32, c1)
		if y < 0 || y >= mid || x < 0 || x >= mid {
			return v // conv2's padding
		}
		for c := range v {
			s, _ := convPoint(xv, xs, w1.Data.([]float32), w1s, b1.Data.([]float32), []int{2, 2}, []int{3, 3}, b, c, y, x)
			v[c] = float32(max(s, 0))
		}
		return v
	}
	var float8 []float32
	for _, q := range []bool{false, true} {
		m, err := LoadWith(data, Options{Quantize: q, Scheme: quant.PerChannel})
		if err != nil {
			t.Fatal(err)
		}
		if q && (m.Layers[0].Kernels != "int8 per_channel (per-image activations)" || m.Layers[1].Kernels != "int8 per_channel") {
			t.Fatalf("layers %+v", m.Layers)
		}
		all, err := convRun1(m, map[string]*tensor.Tensor{"x": tensor.From(xs, xv)})
		if err != nil {
			t.Fatal(err)
		}
		if !equalShape(all.Shape, []int{batch, 64, out, out}) {
			t.Fatalf("batch output %v", all.Shape)
		}
		yv := all.Data.([]float32)
		for _, i := range []int{0, 5} {
			one, err := convRun1(m, map[string]*tensor.Tensor{"x": tensor.From([]int{1, 3, side, side}, xv[i*image:(i+1)*image])})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(one.Data.([]float32), yv[i*outImage:(i+1)*outImage]) {
				t.Errorf("int8=%v: image %d of the batch differs from the image alone", q, i)
			}
		}
		if !q { // sampled outputs of images 0 and 7 against the definition
			for _, b := range []int{0, batch - 1} {
				for o := 0; o < out*out; o += 37 {
					oy, ox := o/out, o%out
					m := (o / 37) % 64
					want, mag := float64(b2.Data.([]float32)[m]), 0.0
					for ky := 0; ky < 3; ky++ {
						for kx := 0; kx < 3; kx++ {
							h := hr(b, oy*2-1+ky, ox*2-1+kx)
							for c, v := range h {
								wv := w2.Data.([]float32)[((m*c1+c)*3+ky)*3+kx]
								want += float64(v) * float64(wv)
								mag += convAbs(v) * convAbs(wv)
							}
						}
					}
					got := yv[((b*64+m)*out+oy)*out+ox]
					if d := math.Abs(float64(got) - want); d > 1e-5*(mag+1)*2 {
						t.Fatalf("image %d y[%d][%d][%d] = %v, want %v", b, m, oy, ox, got, want)
					}
				}
			}
			float8 = yv
			continue
		}
		lo, hi := slices.Min(float8), slices.Max(float8)
		for j, v := range yv {
			if math.Abs(float64(v-float8[j])) > 0.02*float64(hi-lo) {
				t.Fatalf("int8 y[%d] = %v, float32 %v: beyond 2%% of the range [%v, %v]", j, v, float8[j], lo, hi)
			}
		}
	}
}

// fusedTestGraph builds graphs for the convolution rewrites.
type fusedTestGraph struct {
	r     *rand.Rand
	g     *onnxpb.Graph
	count int
}

func (b *fusedTestGraph) init(name string, shape []int, v []float32) string {
	if v == nil {
		v = convRandom(b.r, shape)
	}
	b.g.Initializers = append(b.g.Initializers, TensorToONNX(name, tensor.From(shape, v)))
	return name
}

func (b *fusedTestGraph) node(op string, in []string, attrs ...*onnxpb.Attribute) string {
	b.count++
	out := op + "_" + string(rune('a'+b.count%26)) + strings.Repeat("x", b.count/26)
	b.g.Nodes = append(b.g.Nodes, &onnxpb.Node{OpType: op, Name: out, Inputs: in, Outputs: []string{out}, Attributes: attrs})
	return out
}

// conv adds a Conv of m output channels over c input channels, with bias.
func (b *fusedTestGraph) conv(x string, c, m, k, stride, group int) string {
	n := b.count + 1
	ws := []int{m, c / group, k, k}
	wv := convRandom(b.r, ws)
	for i := range wv {
		wv[i] /= float32(math.Sqrt(float64(c / group * k * k)))
	}
	w := b.init("w"+string(rune('a'+n)), ws, wv)
	bias := b.init("b"+string(rune('a'+n)), []int{m}, nil)
	p := int64(k / 2)
	return b.node("Conv", []string{x, w, bias}, convInts("pads", p, p, p, p), convInts("strides", int64(stride), int64(stride)), convInt("group", int64(group)))
}

// bn adds an inference BatchNormalization over c channels.
func (b *fusedTestGraph) bn(x string, c int) string {
	n := b.count + 1
	name := func(s string) string { return s + string(rune('a'+n)) }
	v := convRandom(b.r, []int{c})
	for i := range v {
		v[i] = v[i]*v[i] + 0.5
	}
	return b.node("BatchNormalization", []string{x, b.init(name("scale"), []int{c}, nil), b.init(name("shift"), []int{c}, nil),
		b.init(name("mean"), []int{c}, nil), b.init(name("var"), []int{c}, v)})
}

// floatInfo returns a float32 value's info of the given shape, a
// negative dimension the symbolic batch N.
func floatInfo(name string, shape ...int64) *onnxpb.ValueInfo {
	ty := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float, HasShape: true}
	for _, d := range shape {
		if d < 0 {
			ty.Shape = append(ty.Shape, onnxpb.Dim{Param: "N"})
		} else {
			ty.Shape = append(ty.Shape, onnxpb.Dim{Value: d, HasValue: true})
		}
	}
	return &onnxpb.ValueInfo{Name: name, Type: ty}
}

// runAsWritten runs the model in data without its rewrites on in and
// returns its output y.
func runAsWritten(t *testing.T, data []byte, in map[string]*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	plain, err := LoadWith(data, Options{Unrewritten: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := convRun1(plain, in)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// checkRuns runs m on in rounds times (recycled buffers on the later
// rounds) and checks its output y has want's shape and lies within tol
// of it.
func checkRuns(t *testing.T, m *Model, in map[string]*tensor.Tensor, want *tensor.Tensor, tol float64, rounds int, what string) {
	t.Helper()
	wv := want.Data.([]float32)
	for round := 0; round < rounds; round++ {
		got, err := convRun1(m, in)
		if err != nil {
			t.Fatal(err)
		}
		if !equalShape(got.Shape, want.Shape) {
			t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
		}
		for i, v := range got.Data.([]float32) {
			if math.Abs(float64(v-wv[i])) > tol {
				t.Fatalf("%s round %d: y[%d] = %v, as written %v", what, round, i, v, wv[i])
			}
		}
	}
}

func (b *fusedTestGraph) scalar(name string, v float32) string {
	return b.init(name, []int{}, []float32{v})
}

// TestFusedConvRewrites runs networks of convolutional blocks (ResNet's
// and MobileNet's: BatchNormalization, residuals, the activations the
// rewrites fuse, channels-last chains, grouped and depthwise convolutions,
// a residual that broadcasts, squeeze and excitation) rewritten and as written, on float32 and
// int8 weights, and checks the rewritten model computes the same outputs,
// fuses what it should, and keeps every value of a trace intact.
func TestFusedConvRewrites(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 23))
	b := &fusedTestGraph{r: r, g: &onnxpb.Graph{Name: "blocks"}}
	vi := floatInfo
	b.g.Inputs = []*onnxpb.ValueInfo{vi("x", -1, 3, 20, 24), vi("shift", 1, 16, 1, 1)}
	// ResNet: conv-BN-Relu, then a bottleneck with a residual.
	h1 := b.node("Relu", []string{b.bn(b.conv("x", 3, 16, 3, 1, 1), 16)})
	h2 := b.node("Relu", []string{b.node("Add", []string{b.bn(b.conv(h1, 16, 16, 1, 1, 1), 16), h1})})
	h3 := b.node("Relu", []string{b.node("Sum", []string{h2, b.bn(b.conv(h2, 16, 16, 3, 1, 1), 16)})})
	// Clip and a broadcast residual from an input.
	h4 := b.node("Clip", []string{b.conv(h3, 16, 16, 3, 2, 1), b.scalar("zero", 0), b.scalar("six", 6)})
	h5 := b.node("Relu", []string{b.node("Add", []string{b.conv(h4, 16, 16, 1, 1, 1), "shift"})})
	// MobileNet: HardSwish, depthwise with HardSwish spelled out, grouped,
	// LeakyRelu, HardSigmoid.
	h6 := b.node("HardSwish", []string{b.bn(b.conv(h5, 16, 16, 1, 1, 1), 16)})
	d := b.bn(b.conv(h6, 16, 16, 3, 1, 16), 16)
	h7 := b.node("Div", []string{b.node("Mul", []string{d, b.node("Clip", []string{b.node("Add", []string{d, b.scalar("three", 3)}), b.scalar("lo", 0), b.scalar("hi", 6)})}), b.scalar("d6", 6)})
	// Squeeze and excitation, the scale first.
	se := b.node("HardSigmoid", []string{b.conv(b.node("Relu", []string{b.conv(b.node("GlobalAveragePool", []string{h7}), 16, 4, 1, 1, 1)}), 4, 16, 1, 1, 1)})
	h8 := b.node("LeakyRelu", []string{b.conv(b.node("Mul", []string{se, h7}), 16, 32, 3, 1, 4)}, &onnxpb.Attribute{Name: "alpha", Type: onnxpb.AttrFloat, F: 0.1})
	h9 := b.node("HardSigmoid", []string{b.conv(h8, 32, 8, 1, 1, 1)})
	b.g.Nodes[len(b.g.Nodes)-1].Outputs[0] = "y"
	_ = h9
	b.g.Outputs = []*onnxpb.ValueInfo{vi("y", -1, 8, 10, 12)}
	data := onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 17}}, Graph: b.g})

	in := map[string]*tensor.Tensor{
		"x":     tensor.From([]int{2, 3, 20, 24}, convRandom(r, []int{2, 3, 20, 24})),
		"shift": tensor.From([]int{1, 16, 1, 1}, convRandom(r, []int{1, 16, 1, 1})),
	}
	want := runAsWritten(t, data, in)
	wv := want.Data.([]float32)
	lo, hi := slices.Min(wv), slices.Max(wv)
	for _, q := range []bool{false, true} {
		m, err := LoadWith(data, Options{Quantize: q, Scheme: quant.PerChannel})
		if err != nil {
			t.Fatal(err)
		}
		var fused [][]string
		var pooled []bool
		nhwcOut := 0
		for _, st := range m.Steps() {
			if st.Op == "GlobalAveragePool" {
				continue
			}
			if st.Op != fusedConvType {
				t.Errorf("int8=%v: step %s (%s) left unfused", q, st.Name, st.Op)
				continue
			}
			a := st.Params.(*conv.FusedConvAttrs)
			fused = append(fused, a.Fused)
			pooled = append(pooled, a.PooledOut)
			if a.NHWCOut {
				nhwcOut++
			}
		}
		wantFused := [][]string{
			{"BatchNormalization", "Relu"}, {"BatchNormalization", "Add", "Relu"}, {"BatchNormalization", "Sum", "Relu"},
			{"Clip"}, {"Add", "Relu"}, {"BatchNormalization", "HardSwish"}, {"BatchNormalization", "HardSwish"},
			{"Relu"}, {"HardSigmoid"}, {"Mul", "LeakyRelu"}, {"HardSigmoid"},
		}
		if !slices.EqualFunc(fused, wantFused, slices.Equal) {
			t.Errorf("int8=%v: fused %q, want %q", q, fused, wantFused)
		}
		// Channels-last h1..h4, h6 (which the depthwise convolution reads
		// channels-last) and the squeeze's hidden layer; h5 adds a
		// residual from the caller (NCHW), so it is written NCHW.
		if nhwcOut != 6 {
			t.Errorf("int8=%v: %d convolutions write channels-last, want 6", q, nhwcOut)
		}
		// The depthwise output, read by global pooling and the scaled
		// convolution, lives in a pooled buffer.
		if len(pooled) != len(wantFused) || !pooled[6] {
			t.Errorf("int8=%v: pooled outputs %v: the depthwise convolution's is not", q, pooled)
		}
		tol := 1e-4 * float64(hi-lo)
		if q {
			tol = 0.02 * float64(hi-lo)
		}
		checkRuns(t, m, in, want, tol, 3, fmt.Sprintf("int8=%v", q))
		vals, err := m.Trace(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[*float32]int{}
		for s, v := range vals {
			if v == nil {
				continue
			}
			if d, ok := v.Data.([]float32); ok && len(d) > 0 {
				if o, dup := seen[&d[0]]; dup && v != vals[o] {
					t.Fatalf("int8=%v: trace slots %d and %d share memory", q, o, s)
				}
				seen[&d[0]] = s
			}
		}
		ty := vals[m.OutputSlot(0)].Data.([]float32)
		got, _ := convRun1(m, in)
		if !slices.Equal(ty, got.Data.([]float32)) {
			t.Errorf("int8=%v: the trace's output differs from Run's", q)
		}
	}
}

// TestRewriteDomainRefused: a file cannot use the operators of the
// rewrites' own domain.
func TestRewriteDomainRefused(t *testing.T) {
	w := tensor.From([]int{1, 1, 1, 1}, []float32{2})
	g := &onnxpb.Graph{
		Name:         "private",
		Inputs:       []*onnxpb.ValueInfo{{Name: "x", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
		Outputs:      []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
		Initializers: []*onnxpb.Tensor{TensorToONNX("w", w)},
		Nodes:        []*onnxpb.Node{{OpType: fusedConvType, Domain: rewriteDomain, Inputs: []string{"x", "w"}, Outputs: []string{"y"}}},
	}
	data := onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 17}, {Domain: rewriteDomain, Version: 1}}, Graph: g})
	_, err := LoadWith(data, Options{})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), rewriteDomain) {
		t.Fatalf("load: %v, want an unsupported-domain error", err)
	}
}
