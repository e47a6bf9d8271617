package model_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"weak"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// retainedHeap loads data with opts and returns the heap the loaded model
// keeps (HeapAlloc after a collection, the model alive, less HeapAlloc
// before the load; data, the caller's, is alive in both).
func retainedHeap(t *testing.T, data []byte, opts model.Options) uint64 {
	t.Helper()
	// Memory the process frees during a load (a finished test's
	// goroutines, pools the collector empties) lowers a reading, never
	// raises it: the largest of three readings is the nearest.
	var most uint64
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m, err := model.LoadWith(data, opts)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(m)
		runtime.KeepAlive(data) // the caller's: in both readings
		if after.HeapAlloc > before.HeapAlloc {
			most = max(most, after.HeapAlloc-before.HeapAlloc)
		}
	}
	return most
}

// convNet builds a CNN of layers 3×3 convolutions of c channels, each
// followed by a BatchNormalization and a Relu (the graph the convolution
// rewrites fuse), then a global average pool and a c×1000 Gemm: float32
// weights as initializers.
func convNet(c, layers int, seed uint64) onnxbuild.Graph {
	r := rand.New(rand.NewPCG(seed, seed))
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
	g := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, c, 14, 14)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1, 1000)},
		Inits:   map[string]*tensor.Tensor{},
	}
	x := "x"
	for i := range layers {
		p := fmt.Sprintf("l%d.", i)
		g.Inits[p+"w"] = normal(1/float64(3*c), c, c, 3, 3)
		g.Inits[p+"b"] = normal(0.1, c)
		g.Inits[p+"scale"] = normal(0.1, c)
		g.Inits[p+"bias"] = normal(0.1, c)
		g.Inits[p+"mean"] = normal(0.1, c)
		v := normal(0.1, c)
		for j, f := range v.Data.([]float32) {
			v.Data.([]float32)[j] = 1 + f*f
		}
		g.Inits[p+"var"] = v
		g.Nodes = append(g.Nodes,
			onnxbuild.Node{Op: "Conv", Inputs: []string{x, p + "w", p + "b"}, Outputs: []string{p + "conv"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("pads", 1, 1, 1, 1)}},
			onnxbuild.Node{Op: "BatchNormalization", Inputs: []string{p + "conv", p + "scale", p + "bias", p + "mean", p + "var"}, Outputs: []string{p + "bn"}},
			onnxbuild.Node{Op: "Relu", Inputs: []string{p + "bn"}, Outputs: []string{p + "relu"}})
		x = p + "relu"
	}
	g.Inits["fc.w"] = normal(1/float64(c), 1000, c)
	g.Inits["fc.b"] = normal(0.1, 1000)
	g.Nodes = append(g.Nodes,
		onnxbuild.Node{Op: "GlobalAveragePool", Inputs: []string{x}, Outputs: []string{"pool"}},
		onnxbuild.Node{Op: "Flatten", Inputs: []string{"pool"}, Outputs: []string{"flat"}},
		onnxbuild.Node{Op: "Gemm", Inputs: []string{"flat", "fc.w", "fc.b"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("transB", 1)}})
	return g
}

// TestInt8ModelsKeepInt8Weights: a model loaded with int8 weights keeps
// the weights as int8 only, so it holds at most half the heap the same
// model holds in float32 (the weights are a quarter of the size; no
// float32 copy of them, folded or not, stays reachable). It checks a
// CNN built here, and ResNet-50 from ../shared/models when present.
func TestInt8ModelsKeepInt8Weights(t *testing.T) {
	if dispatch.AutodiffBuilt {
		t.Skip("builds with autodiff keep float32 weights for backward passes")
	}
	check := func(t *testing.T, data []byte) {
		f32 := retainedHeap(t, data, model.Options{})
		i8 := retainedHeap(t, data, model.Options{Quantize: true, Scheme: quant.PerChannel})
		t.Logf("retained heap after load: float32 %.1f MiB, int8 %.1f MiB (%.2f×)", float64(f32)/(1<<20), float64(i8)/(1<<20), float64(i8)/float64(max(f32, 1)))
		if f32 == 0 || float64(i8) > 0.5*float64(f32) {
			t.Errorf("the int8 model keeps %d bytes, more than half the float32 model's %d", i8, f32)
		}
	}
	t.Run("cnn", func(t *testing.T) {
		data := convNet(128, 12, 22).Bytes()
		m, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel})
		if err != nil {
			t.Fatal(err)
		}
		int8Layers := 0
		for _, l := range m.Layers {
			if l.Kernels == "int8 per_channel" {
				int8Layers++
			}
		}
		if int8Layers != 13 {
			t.Fatalf("%d of the layers run on int8, want 13: %+v", int8Layers, m.Layers)
		}
		check(t, data)
	})
	t.Run("resnet50", func(t *testing.T) {
		if testing.Short() {
			t.Skip("a full ImageNet architecture: runs without -short")
		}
		dir := shareddata.Dir(t, "models")
		data, err := os.ReadFile(filepath.Join(dir, "onnx_light_resnet50", "model.onnx"))
		if err != nil {
			t.Skipf("ResNet-50 not in %s: %v", dir, err)
		}
		check(t, data)
	})
}

// TestModelKeepsNoFileBytes: a compiled model keeps nothing of the bytes
// it was loaded from, with or without int8 weights, graph attributes
// (If's branches) and their constants included: once the caller drops
// the file, it can be collected.
func TestModelKeepsNoFileBytes(t *testing.T) {
	if dispatch.AutodiffBuilt {
		t.Skip("builds with autodiff keep the decoded file, for the graph as written (Model.Unrewritten)")
	}
	branch := func(name string, v float32) *onnxpb.Attribute {
		c := tensor.From([]int{64, 64}, make([]float32, 64*64))
		for i := range c.Data.([]float32) {
			c.Data.([]float32)[i] = v
		}
		return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrGraph, G: &onnxpb.Graph{
			Name:  name,
			Nodes: []*onnxpb.Node{{OpType: "Constant", Outputs: []string{name + ".y"}, Attributes: []*onnxpb.Attribute{{Name: "value", Type: onnxpb.AttrTensor, T: model.TensorToONNX("c", c)}}}},
			Outputs: []*onnxpb.ValueInfo{{Name: name + ".y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: model.DataTypeToONNX(tensor.Float32),
				HasShape: true, Shape: []onnxpb.Dim{{Value: 64, HasValue: true}, {Value: 64, HasValue: true}}}}},
		}}
	}
	ifModel := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("cond", tensor.Bool)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 64, 64)},
		Nodes:   []onnxbuild.Node{{Op: "If", Inputs: []string{"cond"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{branch("then_branch", 1), branch("else_branch", 2)}}},
	}
	for _, tc := range []struct {
		name  string
		g     onnxbuild.Graph
		input map[string]*tensor.Tensor
	}{
		{"cnn", convNet(32, 2, 7), map[string]*tensor.Tensor{"x": tensor.From([]int{1, 32, 14, 14}, make([]float32, 32*14*14))}},
		{"mlp", onnxbuild.MLP([]int{256, 256, 10}, 3), map[string]*tensor.Tensor{"x": tensor.From([]int{1, 256}, make([]float32, 256))}},
		{"if", ifModel, map[string]*tensor.Tensor{"cond": tensor.From([]int{}, []bool{false})}},
	} {
		for _, quantize := range []bool{false, true} {
			file := tc.g.Bytes()
			data := make([]byte, len(file)) // an allocation of its own, whose start the weak pointer names
			copy(data, file)
			file = nil
			alive := weak.Make(&data[0])
			m, err := model.LoadWith(data, model.Options{Quantize: quantize, Scheme: quant.PerChannel})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			data = nil
			runtime.GC()
			if alive.Value() != nil {
				t.Errorf("%s (int8 %v): the compiled model keeps the file's bytes", tc.name, quantize)
			}
			if _, err := m.Run(context.Background(), tc.input, nil); err != nil {
				t.Fatalf("%s: run: %v", tc.name, err)
			}
		}
	}
}

// TestManyNodesLoadInBoundedMemory: a graph of 50,000 small nodes (a file
// of 35 bytes a node) loads allocating at most 2.5 KiB a node in all and
// keeping at most 512 bytes a node: a file of many nodes costs memory in
// proportion to its nodes, not to their count squared or to the number of
// rewrite rules.
func TestManyNodesLoadInBoundedMemory(t *testing.T) {
	const n = 50000
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 4)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 4)},
		Inits:   map[string]*tensor.Tensor{"c": tensor.From([]int{4}, []float32{1, 2, 3, 4})},
	}
	prev := "x"
	for i := range n {
		out := fmt.Sprintf("v%d", i)
		if i == n-1 {
			out = "y"
		}
		g.Nodes = append(g.Nodes, onnxbuild.Node{Op: "Add", Inputs: []string{prev, "c"}, Outputs: []string{out}})
		prev = out
	}
	data := g.Bytes()
	g = onnxbuild.Graph{}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := model.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d nodes, a file of %d bytes: %d bytes allocated loading (%d a node), %d kept (%d a node)", n, len(data), allocated, allocated/n, kept, kept/n)
	if allocated > n*2560 || kept > n*512 {
		t.Errorf("loading %d nodes allocated %d bytes and kept %d: want at most %d and %d", n, allocated, kept, n*2560, n*512)
	}
	runtime.KeepAlive(m)
}
