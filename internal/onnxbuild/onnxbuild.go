// Package onnxbuild writes small ONNX models for tests: a graph described
// in a few lines, encoded with onnx/onnxpb.
package onnxbuild

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// IO declares a graph input or output; a negative dimension is dynamic.
type IO struct {
	Name  string
	DType tensor.DataType
	Shape []int
}

// Node is one graph node.
type Node struct {
	Op      string
	Inputs  []string
	Outputs []string
	Attrs   []*onnxpb.Attribute
	Domain  string // the operator's domain: "" for ai.onnx
}

// Graph is a whole model.
type Graph struct {
	Opset   int64
	Inputs  []IO
	Outputs []IO
	Nodes   []Node
	Inits   map[string]*tensor.Tensor
	// Domains are the opsets the model imports for domains other than
	// ai.onnx (e.g. "com.microsoft": 1), for nodes of those domains.
	Domains map[string]int64
}

// nodeSuffix names node i after its operator: a letter for the first 26
// (what tests refer to), then its index.
func nodeSuffix(i int) string {
	if i < 26 {
		return string(rune('a' + i))
	}
	return strconv.Itoa(i)
}

// Bytes encodes g as a model.onnx file.
func (g Graph) Bytes() []byte {
	opset := g.Opset
	if opset == 0 {
		opset = 13
	}
	pg := &onnxpb.Graph{Name: "test"}
	for i, n := range g.Nodes {
		pg.Nodes = append(pg.Nodes, &onnxpb.Node{OpType: n.Op, Domain: n.Domain, Name: n.Op + "_" + nodeSuffix(i), Inputs: n.Inputs, Outputs: n.Outputs, Attributes: n.Attrs})
	}
	for name, t := range g.Inits {
		pg.Initializers = append(pg.Initializers, model.TensorToONNX(name, t))
	}
	for _, io := range g.Inputs {
		pg.Inputs = append(pg.Inputs, valueInfo(io))
	}
	for _, io := range g.Outputs {
		pg.Outputs = append(pg.Outputs, valueInfo(io))
	}
	imports := []onnxpb.OpsetID{{Version: opset}}
	for _, d := range slices.Sorted(maps.Keys(g.Domains)) {
		imports = append(imports, onnxpb.OpsetID{Domain: d, Version: g.Domains[d]})
	}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: imports, Graph: pg})
}

func valueInfo(io IO) *onnxpb.ValueInfo {
	t := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: model.DataTypeToONNX(io.DType), HasShape: io.Shape != nil}
	for _, d := range io.Shape {
		if d < 0 {
			t.Shape = append(t.Shape, onnxpb.Dim{Param: "N"})
		} else {
			t.Shape = append(t.Shape, onnxpb.Dim{Value: int64(d), HasValue: true})
		}
	}
	return &onnxpb.ValueInfo{Name: io.Name, Type: t}
}

// Identity is a one-node model passing an input of the given type and
// shape through as "y".
func Identity(dt tensor.DataType, shape []int) []byte {
	return Graph{
		Inputs:  []IO{V("x", dt, shape...)},
		Outputs: []IO{V("y", dt, shape...)},
		Nodes:   []Node{{Op: "Identity", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}.Bytes()
}

// IntAttr returns an INT attribute.
func IntAttr(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

// V declares a graph input or output.
func V(name string, dt tensor.DataType, shape ...int) IO {
	return IO{Name: name, DType: dt, Shape: shape}
}

// MLP builds a multilayer perceptron of Gemm layers: input "x" FP32
// [batch, sizes[0]], layer i a Gemm with a sizes[i]×sizes[i+1] weight
// (seeded normal values scaled by 1/√fan-in) and a bias, Relu between
// layers, output "y" FP32 [batch, sizes[len(sizes)-1]].
func MLP(sizes []int, seed uint64) Graph {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := Graph{
		Opset:   13,
		Inputs:  []IO{V("x", tensor.Float32, -1, sizes[0])},
		Outputs: []IO{V("y", tensor.Float32, -1, sizes[len(sizes)-1])},
		Inits:   map[string]*tensor.Tensor{},
	}
	x := "x"
	for i := 0; i+1 < len(sizes); i++ {
		k, n := sizes[i], sizes[i+1]
		w, b := make([]float32, k*n), make([]float32, n)
		scale := 1 / math.Sqrt(float64(k))
		for j := range w {
			w[j] = float32(r.NormFloat64() * scale)
		}
		for j := range b {
			b[j] = float32(r.NormFloat64() * 0.1)
		}
		wn, bn := fmt.Sprintf("w%d", i), fmt.Sprintf("b%d", i)
		g.Inits[wn], g.Inits[bn] = tensor.From([]int{k, n}, w), tensor.From([]int{n}, b)
		out := fmt.Sprintf("h%d", i)
		if i+2 == len(sizes) {
			out = "y"
		}
		g.Nodes = append(g.Nodes, Node{Op: "Gemm", Inputs: []string{x, wn, bn}, Outputs: []string{out}})
		x = out
		if out != "y" {
			g.Nodes = append(g.Nodes, Node{Op: "Relu", Inputs: []string{x}, Outputs: []string{x + ".relu"}})
			x += ".relu"
		}
	}
	return g
}

// IntsAttr returns an INTS attribute.
func IntsAttr(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

// FloatAttr returns a FLOAT attribute.
func FloatAttr(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

// StringAttr returns a STRING attribute.
func StringAttr(name, v string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
}

// builder appends nodes and seeded initializers to a Graph.
type builder struct {
	g *Graph
	r *rand.Rand
}

func newBuilder(g *Graph, seed uint64) *builder {
	g.Inits = map[string]*tensor.Tensor{}
	return &builder{g: g, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// normal adds an initializer of seeded normal values times scale.
func (b *builder) normal(name string, scale float64, shape ...int) string {
	v := make([]float32, numel(shape))
	for i := range v {
		v[i] = float32(b.r.NormFloat64() * scale)
	}
	b.g.Inits[name] = tensor.From(shape, v)
	return name
}

// uniform adds an initializer of seeded values uniform in [-bound, bound]
// (PyTorch's initialization of recurrent and linear layers).
func (b *builder) uniform(name string, bound float64, shape ...int) string {
	v := make([]float32, numel(shape))
	for i := range v {
		v[i] = float32((2*b.r.Float64() - 1) * bound)
	}
	b.g.Inits[name] = tensor.From(shape, v)
	return name
}

// floats adds an initializer holding v.
func (b *builder) floats(name string, shape []int, v []float32) string {
	b.g.Inits[name] = tensor.From(shape, v)
	return name
}

// ints adds a 1-D INT64 initializer.
func (b *builder) ints(name string, v ...int64) string {
	b.g.Inits[name] = tensor.From([]int{len(v)}, v)
	return name
}

// node appends a one-output node and returns its output.
func (b *builder) node(op string, in []string, out string, attrs ...*onnxpb.Attribute) string {
	b.g.Nodes = append(b.g.Nodes, Node{Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
	return out
}

// batchNorm appends an inference-mode BatchNormalization over c channels
// with seeded scale, bias and running statistics near a trained layer's.
func (b *builder) batchNorm(x, name string, c int) string {
	scale, bias, mean, vr := make([]float32, c), make([]float32, c), make([]float32, c), make([]float32, c)
	for i := range c {
		scale[i] = float32(1 + 0.1*b.r.NormFloat64())
		bias[i] = float32(0.1 * b.r.NormFloat64())
		mean[i] = float32(0.1 * b.r.NormFloat64())
		vr[i] = float32(1 + 0.2*math.Abs(b.r.NormFloat64()))
	}
	return b.node("BatchNormalization", []string{x,
		b.floats(name+".weight", []int{c}, scale), b.floats(name+".bias", []int{c}, bias),
		b.floats(name+".running_mean", []int{c}, mean), b.floats(name+".running_var", []int{c}, vr)},
		name, FloatAttr("epsilon", 1e-5))
}
