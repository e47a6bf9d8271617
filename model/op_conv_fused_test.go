package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestConvTransposeStrided checks the strided tile transpose on every
// table against its definition, with row strides wider than the tile and
// sentinels around and between dst's rows.
func TestConvTransposeStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	sentinel := float32(-7.25)
	for rows := 1; rows <= 19; rows++ {
		for cols := 1; cols <= 41; cols += 2 {
			lds, ldd := cols+3, rows+5
			src := convRandom(r, []int{rows * lds})
			srcCopy := slices.Clone(src)
			want := make([]float32, cols*ldd+16)
			for i := range want {
				want[i] = sentinel
			}
			for c := 0; c < cols; c++ {
				for i := 0; i < rows; i++ {
					want[8+c*ldd+i] = src[i*lds+c]
				}
			}
			for _, tb := range dispatch.Available() {
				got := make([]float32, cols*ldd+16)
				for i := range got {
					got[i] = sentinel
				}
				convTransposeStrided(tb, got[8:], ldd, src, lds, rows, cols)
				if !slices.Equal(got, want) {
					t.Fatalf("%v %d×%d: the transpose differs from its definition", tb, rows, cols)
				}
				if !slices.Equal(src, srcCopy) {
					t.Fatalf("%v %d×%d: src modified", tb, rows, cols)
				}
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
	vi := func(name string, shape ...int64) *onnxpb.ValueInfo {
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
	plain, err := LoadWith(data, Options{Unrewritten: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := convRun1(plain, in)
	if err != nil {
		t.Fatal(err)
	}
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
			a := st.Params.(*FusedConvAttrs)
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
		// Channels-last h1..h4 and the squeeze's hidden layer; h5 adds a
		// residual from the caller (NCHW), so it is written NCHW.
		if nhwcOut != 5 {
			t.Errorf("int8=%v: %d convolutions write channels-last, want 5", q, nhwcOut)
		}
		// The depthwise output, read by global pooling and the scaled
		// convolution, lives in a pooled buffer.
		if len(pooled) != len(wantFused) || !pooled[6] {
			t.Errorf("int8=%v: pooled outputs %v: the depthwise convolution's is not", q, pooled)
		}
		for round := 0; round < 3; round++ { // recycled buffers on the later rounds
			got, err := convRun1(m, in)
			if err != nil {
				t.Fatal(err)
			}
			if !equalShape(got.Shape, want.Shape) {
				t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
			}
			tol := 1e-4 * float64(hi-lo)
			if q {
				tol = 0.02 * float64(hi-lo)
			}
			for i, v := range got.Data.([]float32) {
				if math.Abs(float64(v-wv[i])) > tol {
					t.Fatalf("int8=%v round %d: y[%d] = %v, as written %v", q, round, i, v, wv[i])
				}
			}
		}
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
