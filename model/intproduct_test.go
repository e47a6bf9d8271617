package model

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// intCase is a one-node integer product whose B (and B's zero point) are
// either initializers (the int8 kernels' path) or graph inputs fed at run
// time (the general path, the reference here).
type intCase struct {
	name   string
	nodes  []*onnxpb.Node
	consts map[string]*tensor.Tensor // B and its zero point
	feeds  map[string]*tensor.Tensor // the request's inputs
	output string
	outDT  onnxpb.DataType
}

func (c *intCase) model(asConst bool) []byte {
	out := c.outDT
	if out == 0 {
		out = onnxpb.Int32
	}
	g := &onnxpb.Graph{Nodes: c.nodes, Outputs: []*onnxpb.ValueInfo{{Name: c.output, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: out}}}}
	vi := func(name string, t *tensor.Tensor) *onnxpb.ValueInfo {
		dt := DataTypeToONNX(t.DType)
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: dt}}
	}
	for _, name := range sortedKeys(c.feeds) {
		g.Inputs = append(g.Inputs, vi(name, c.feeds[name]))
	}
	for _, name := range sortedKeys(c.consts) {
		if asConst {
			g.Initializers = append(g.Initializers, TensorToONNX(name, c.consts[name]))
		} else {
			g.Inputs = append(g.Inputs, vi(name, c.consts[name]))
		}
	}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 13}}, Graph: g})
}

func sortedKeys(m map[string]*tensor.Tensor) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func intCases(r *rand.Rand) []*intCase {
	const m, k, n = 7, 45, 37
	u8 := func(size int) []uint8 {
		x := make([]uint8, size)
		for i := range x {
			x[i] = []uint8{0, 255, 128, 129, uint8(r.IntN(256))}[r.IntN(5)]
		}
		return x
	}
	s8 := func(size int) []int8 {
		x := make([]int8, size)
		for i := range x {
			x[i] = []int8{-128, 127, -127, int8(r.IntN(256) - 128)}[r.IntN(4)]
		}
		return x
	}
	f32 := func(size int) []float32 {
		x := make([]float32, size)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	mmi := func(in ...string) []*onnxpb.Node {
		return []*onnxpb.Node{{OpType: "MatMulInteger", Name: "mmi", Inputs: in, Outputs: []string{"y"}}}
	}
	return []*intCase{{
		name:   "MatMulInteger u8 × s8 (with -128), no zero points",
		nodes:  mmi("a", "b"),
		consts: map[string]*tensor.Tensor{"b": tensor.From([]int{k, n}, s8(k*n))},
		feeds:  map[string]*tensor.Tensor{"a": tensor.From([]int{m, k}, u8(m*k))},
		output: "y",
	}, {
		name:   "MatMulInteger u8 × u8, zero points: a per tensor, b per column",
		nodes:  mmi("a", "b", "az", "bz"),
		consts: map[string]*tensor.Tensor{"b": tensor.From([]int{k, n}, u8(k*n)), "bz": tensor.From([]int{n}, u8(n))},
		feeds:  map[string]*tensor.Tensor{"a": tensor.From([]int{2, m, k}, u8(2*m*k)), "az": tensor.Scalar(uint8(131))},
		output: "y",
	}, {
		name:   "MatMulInteger s8 × s8, zero points: a per row, b per tensor",
		nodes:  mmi("a", "b", "az", "bz"),
		consts: map[string]*tensor.Tensor{"b": tensor.From([]int{k, n}, s8(k*n)), "bz": tensor.Scalar(int8(-3))},
		feeds:  map[string]*tensor.Tensor{"a": tensor.From([]int{m, k}, s8(m*k)), "az": tensor.From([]int{m}, s8(m))},
		output: "y",
	}, {
		name: "QLinearMatMul u8 × s8",
		nodes: []*onnxpb.Node{{OpType: "QLinearMatMul", Name: "qlm",
			Inputs: []string{"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, Outputs: []string{"y"}}},
		consts: map[string]*tensor.Tensor{"b": tensor.From([]int{k, n}, s8(k*n)), "bz": tensor.Scalar(int8(5))},
		feeds: map[string]*tensor.Tensor{"a": tensor.From([]int{m, k}, u8(m*k)), "as": tensor.Scalar(float32(0.02)), "az": tensor.Scalar(uint8(120)),
			"bs": tensor.Scalar(float32(0.01)), "ys": tensor.Scalar(float32(3)), "yz": tensor.Scalar(uint8(128))},
		output: "y",
		outDT:  onnxpb.Uint8,
	}, {
		name: "DynamicQuantizeLinear → MatMulInteger (ONNX Runtime's dynamic quantization)",
		nodes: []*onnxpb.Node{
			{OpType: "DynamicQuantizeLinear", Name: "dql", Inputs: []string{"x"}, Outputs: []string{"xq", "xs", "xz"}},
			{OpType: "MatMulInteger", Name: "mmi", Inputs: []string{"xq", "b", "xz"}, Outputs: []string{"y"}},
		},
		consts: map[string]*tensor.Tensor{"b": tensor.From([]int{k, n}, s8(k*n))},
		feeds:  map[string]*tensor.Tensor{"x": tensor.From([]int{m, k}, f32(m*k))},
		output: "y",
	}}
}

// TestIntegerProductsOnKernels runs MatMulInteger, QLinearMatMul and the
// DynamicQuantizeLinear → MatMulInteger pattern with constant weights on
// the int8 kernels of every table, and demands the exact results of the
// general path (B fed at run time, widened to int32).
func TestIntegerProductsOnKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	for _, c := range intCases(r) {
		feeds := c.feeds
		general, err := Load(c.model(false))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		all := map[string]*tensor.Tensor{}
		for k, v := range feeds {
			all[k] = v
		}
		for k, v := range c.consts {
			all[k] = v
		}
		want, err := general.Run(context.Background(), all, nil)
		if err != nil {
			t.Fatalf("%s (general path): %v", c.name, err)
		}
		for _, tb := range dispatch.Available() {
			exec := gemm.New(tb, 2)
			t.Cleanup(exec.Close)
			m, err := LoadWith(c.model(true), Options{Exec: exec})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !slices.ContainsFunc(m.Layers, func(l Layer) bool { return strings.Contains(l.Kernels, "integer product") }) {
				t.Fatalf("%s: not on the int8 kernels: layers %+v", c.name, m.Layers)
			}
			got, err := m.Run(context.Background(), feeds, nil)
			if err != nil {
				t.Fatalf("%s on %v: %v", c.name, tb, err)
			}
			w, g := want[c.output], got[c.output]
			if !slices.Equal(w.Shape, g.Shape) || w.DType != g.DType {
				t.Fatalf("%s on %v: %v%v, want %v%v", c.name, tb, g.DType, g.Shape, w.DType, w.Shape)
			}
			wv, _ := w.Int64s()
			gv, _ := g.Int64s()
			if !slices.Equal(wv, gv) {
				t.Fatalf("%s on %v: results differ from the general path", c.name, tb)
			}
		}
	}
}

// TestWideQDQWeights: QDQ weights stored as UINT8 with per-column zero
// points (values less zero points reach ±255) stay on the int8 kernels,
// give the same bits on every table, and match the dequantized product.
func TestWideQDQWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	const m, k, n = 5, 64, 40
	q := make([]uint8, k*n)
	for i := range q {
		q[i] = uint8(r.IntN(256))
	}
	zp := make([]uint8, n)
	scales := make([]float32, n)
	for j := range zp {
		zp[j] = []uint8{0, 128, 255, uint8(r.IntN(256))}[j%4]
		scales[j] = float32(0.001 + r.Float64()*0.01)
	}
	g := &onnxpb.Graph{
		Inputs: []*onnxpb.ValueInfo{{Name: "x", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
		Initializers: []*onnxpb.Tensor{
			TensorToONNX("w_q", tensor.From([]int{k, n}, q)),
			TensorToONNX("w_scale", tensor.From([]int{n}, scales)),
			TensorToONNX("w_zp", tensor.From([]int{n}, zp)),
		},
		Nodes: []*onnxpb.Node{
			{OpType: "DequantizeLinear", Name: "dq", Inputs: []string{"w_q", "w_scale", "w_zp"}, Outputs: []string{"w"},
				Attributes: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: 1}}},
			{OpType: "MatMul", Name: "mm", Inputs: []string{"x", "w"}, Outputs: []string{"y"}},
		},
		Outputs: []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
	}
	data := onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 13}}, Graph: g})
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	var want []float32
	for _, tb := range dispatch.Available() {
		exec := gemm.New(tb, 1)
		t.Cleanup(exec.Close)
		mdl, err := LoadWith(data, Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel})
		if err != nil {
			t.Fatal(err)
		}
		if len(mdl.Layers) != 1 || mdl.Layers[0].Kernels != "int8 per_channel (QDQ weights)" {
			t.Fatalf("%v: layers %+v", tb, mdl.Layers)
		}
		out, err := mdl.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{m, k}, x)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := out["y"].Data.([]float32)
		if want == nil {
			want = y
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var ref, mag float64
					for p := 0; p < k; p++ {
						w := float64(int(q[p*n+j])-int(zp[j])) * float64(scales[j])
						ref += float64(x[i*k+p]) * w
						mag += math.Abs(float64(x[i*k+p]) * w)
					}
					if d := math.Abs(float64(y[i*n+j]) - ref); d > mag/60 {
						t.Fatalf("y[%d,%d] = %v, dequantized product %v", i, j, y[i*n+j], ref)
					}
				}
			}
			continue
		}
		for i := range want {
			if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: y[%d] = %v, %v gives %v", tb, i, y[i], dispatch.Available()[0], want[i])
			}
		}
	}
}
