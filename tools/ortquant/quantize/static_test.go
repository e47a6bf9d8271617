package quantize

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestActivationParams: compute_scale_zp for UINT8 on ranges that
// straddle, start at, and end at zero, and on an empty range.
func TestActivationParams(t *testing.T) {
	for _, c := range []struct {
		lo, hi float32
		scale  float32
		zp     uint8
	}{
		{-1, 3, float32(4.0 / 255), 64}, // -(-1)/(4/255) = 63.75
		{0.5, 2, float32(2.0 / 255), 0}, // the range takes in 0
		{-2, -1, float32(2.0 / 255), 255},
		{-1, 1.5, float32(2.5 / 255), 102}, // 102 exactly
		{0, 0, 1, 0},
	} {
		s, z := ActivationParams(c.lo, c.hi)
		if s != c.scale || z != c.zp {
			t.Errorf("[%v, %v]: scale %v zero point %d, want %v %d", c.lo, c.hi, s, z, c.scale, c.zp)
		}
	}
}

// smallCNN is a float network at opset 9 with what the QDQ quantizer
// treats differently: Conv + BatchNormalization + Relu, a Clip with
// attribute bounds, MaxPool, an Add of two branches, GlobalAveragePool,
// Gemm and Softmax.
func smallCNN() onnxbuild.Graph {
	r := rand.New(rand.NewPCG(1, 9))
	normal := func(scale float64, shape ...int) *tensor.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return tensor.From(shape, v)
	}
	pos := func(n int) *tensor.Tensor {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(0.5 + r.Float64())
		}
		return tensor.From([]int{n}, v)
	}
	pads := onnxbuild.IntsAttr("pads", 1, 1, 1, 1)
	return onnxbuild.Graph{
		Opset:   9,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 3, 12, 12)},
		Outputs: []onnxbuild.IO{onnxbuild.V("p", tensor.Float32, -1, 5)},
		Nodes: []onnxbuild.Node{
			{Op: "Conv", Inputs: []string{"x", "w1"}, Outputs: []string{"c1"}, Attrs: []*onnxpb.Attribute{pads}},
			{Op: "BatchNormalization", Inputs: []string{"c1", "g1", "b1", "m1", "v1"}, Outputs: []string{"n1"}},
			{Op: "Relu", Inputs: []string{"n1"}, Outputs: []string{"a1"}},
			{Op: "MaxPool", Inputs: []string{"a1"}, Outputs: []string{"p1"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("kernel_shape", 2, 2), onnxbuild.IntsAttr("strides", 2, 2)}},
			{Op: "Conv", Inputs: []string{"p1", "w2", "cb2"}, Outputs: []string{"c2"}, Attrs: []*onnxpb.Attribute{pads}},
			{Op: "Clip", Inputs: []string{"c2"}, Outputs: []string{"a2"}, Attrs: []*onnxpb.Attribute{onnxbuild.FloatAttr("min", 0), onnxbuild.FloatAttr("max", 6)}},
			{Op: "Add", Inputs: []string{"a2", "p1"}, Outputs: []string{"s"}},
			{Op: "GlobalAveragePool", Inputs: []string{"s"}, Outputs: []string{"g"}},
			{Op: "Flatten", Inputs: []string{"g"}, Outputs: []string{"f"}},
			{Op: "Gemm", Inputs: []string{"f", "fw", "fb"}, Outputs: []string{"l"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("transB", 1)}},
			{Op: "Softmax", Inputs: []string{"l"}, Outputs: []string{"p"}},
		},
		Inits: map[string]*tensor.Tensor{
			"w1": normal(0.3, 8, 3, 3, 3), "g1": pos(8), "b1": normal(0.1, 8), "m1": normal(0.1, 8), "v1": pos(8),
			"w2": normal(0.15, 8, 8, 3, 3), "cb2": normal(0.1, 8),
			"fw": normal(0.5, 5, 8), "fb": normal(0.1, 5),
		},
	}
}

func cnnInputs(n int, seed uint64) []map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []map[string]*tensor.Tensor
	for range n {
		x := make([]float32, 2*3*12*12)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out = append(out, map[string]*tensor.Tensor{"x": tensor.From([]int{2, 3, 12, 12}, x)})
	}
	return out
}

// TestStaticCNN: the QDQ file of a small CNN has quantize_static's
// structure (opset 13, BatchNormalization folded, Relu and Clip removed,
// one pair per quantized activation, the input's parameters those of its
// calibrated range, INT8 weights per output channel, INT32 biases at
// x_scale·w_scale), and quantserve runs it close to the float model.
func TestStaticCNN(t *testing.T) {
	float := smallCNN().Bytes()
	calib := cnnInputs(4, 3)
	q, st, err := Static(float, calib)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := onnxpb.UnmarshalModel(q)
	if err != nil {
		t.Fatal(err)
	}
	if pb.OpsetImport[0].Version != 13 {
		t.Errorf("opset %v", pb.OpsetImport)
	}
	ops := map[string]int{}
	prod := map[string]*onnxpb.Node{}
	for _, n := range pb.Graph.Nodes {
		ops[n.OpType]++
		for _, o := range n.Outputs {
			prod[o] = n
		}
	}
	inits := map[string]*tensor.Tensor{}
	for _, p := range pb.Graph.Initializers {
		if inits[p.Name], err = model.TensorFromONNX(p); err != nil {
			t.Fatal(err)
		}
	}
	// quantized: x, c1 (as a1), p1 (a1's parameters), c2 (as a2), s, g,
	// f (Gemm's input: Flatten is not quantized), l, p
	if ops["BatchNormalization"] != 0 || ops["Relu"] != 0 || ops["Clip"] != 0 || ops["QuantizeLinear"] != 9 || st.Removed != 2 || st.Biases != 3 {
		t.Fatalf("ops %v, stats %+v", ops, st)
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, in := range calib {
		for _, v := range in["x"].Data.([]float32) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	ws, wz := ActivationParams(lo, hi)
	if s, z := inits["x_scale"].Data.([]float32)[0], inits["x_zero_point"].Data.([]uint8)[0]; s != ws || z != wz {
		t.Errorf("x: scale %v zero point %d, want %v %d", s, z, ws, wz)
	}
	if inits["p1_scale"] != nil || prod["p1_QuantizeLinear_Output"].Inputs[1] != "a1_scale" {
		t.Errorf("MaxPool's output does not share its input's parameters")
	}
	for _, n := range pb.Graph.Nodes {
		if n.OpType != "Conv" && n.OpType != "Gemm" {
			continue
		}
		dq := prod[n.Inputs[1]]
		w := inits[dq.Inputs[0]]
		scales := inits[dq.Inputs[1]].Data.([]float32)
		if w.DType != tensor.Int8 || len(scales) != w.Shape[0] || dq.Attributes[0].I != 0 {
			t.Fatalf("%s: weight %v%v, %d scales", n.Name, w.DType, w.Shape, len(scales))
		}
		bdq := prod[n.Inputs[2]]
		b, bs := inits[bdq.Inputs[0]], inits[bdq.Inputs[1]].Data.([]float32)
		xs := inits[prod[prod[n.Inputs[0]].Inputs[0]].Inputs[1]].Data.([]float32)[0]
		if b.DType != tensor.Int32 {
			t.Fatalf("%s: bias %v", n.Name, b.DType)
		}
		for i := range bs {
			if bs[i] != xs*scales[i] {
				t.Errorf("%s: bias scale %d = %v, want %v·%v", n.Name, i, bs[i], xs, scales[i])
			}
		}
	}
	// quantserve on the QDQ file, against the float model, on inputs it
	// was not calibrated on
	ref, err := model.Load(float)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
		m, err := model.LoadWith(q, opts)
		if err != nil {
			t.Fatal(err)
		}
		var maxErr float64
		for _, in := range cnnInputs(3, 11) {
			a, err := m.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ref.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range b["p"].Data.([]float32) {
				maxErr = max(maxErr, math.Abs(float64(a["p"].Data.([]float32)[i]-v)))
			}
		}
		t.Logf("quantize=%v: max |p - float p| %.4f", opts.Quantize, maxErr)
		if maxErr > 0.05 {
			t.Errorf("quantize=%v: max |error| %.4f against the float model", opts.Quantize, maxErr)
		}
	}
}

// TestStaticSharedModels: the CNNs of ../shared/models quantized with
// quantize_static's choices, calibrated on their own test inputs, run by
// quantserve (products in float32 and on the int8 kernels): the same top
// class as the float model on every reference input, probabilities
// within a few quantization steps.
func TestStaticSharedModels(t *testing.T) {
	for _, c := range []struct {
		dir    string
		maxErr float64
	}{
		{"onnx_light_resnet50", 2.0 / 255},
		{"paddleocr_cls_mobile_v2", 0.2},
	} {
		dir := filepath.Join("..", "..", "..", "..", "shared", "models", c.dir)
		data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Skipf("../shared/models is missing: %v", err)
		}
		inputs, err := TestDataInputs(data, dir)
		if err != nil || len(inputs) == 0 {
			t.Fatalf("%s: test inputs: %v", c.dir, err)
		}
		q, st, err := Static(data, inputs)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", c.dir, st)
		ref, err := model.Load(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
			m, err := model.LoadWith(q, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, in := range inputs {
				a, err := m.Run(context.Background(), in, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := ref.Run(context.Background(), in, nil)
				if err != nil {
					t.Fatal(err)
				}
				for name, want := range b {
					got, w := a[name].Data.([]float32), want.Data.([]float32)
					classes := want.Shape[len(want.Shape)-1]
					var maxErr float64
					for row := 0; row < len(w)/classes; row++ {
						g, f := got[row*classes:(row+1)*classes], w[row*classes:(row+1)*classes]
						if top(f) != top(g) && f[top(f)] > f[top(g)]+float32(c.maxErr) {
							t.Errorf("%s quantize=%v set %d row %d: top class %d, float %d", c.dir, opts.Quantize, i, row, top(g), top(f))
						}
						for j := range f {
							maxErr = max(maxErr, math.Abs(float64(g[j]-f[j])))
						}
					}
					t.Logf("%s quantize=%v set %d: max |error| %.4f", c.dir, opts.Quantize, i, maxErr)
					if maxErr > c.maxErr {
						t.Errorf("%s quantize=%v set %d: max |error| %.4f, want <= %.4f", c.dir, opts.Quantize, i, maxErr, c.maxErr)
					}
				}
			}
		}
	}
}

// top returns the index of v's largest value (the first of ties).
func top(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
