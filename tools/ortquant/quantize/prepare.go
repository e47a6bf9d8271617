package quantize

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// What ONNX Runtime's users run before quantize_static: the model at
// opset 13 (per-channel QDQ needs it; onnx.version_converter does it),
// its constants as initializers and each BatchNormalization after a Conv
// folded into the Conv's weights (quant_pre_process, ONNX Runtime's basic
// graph optimizations).

// qdqOpset is the opset the static QDQ files import.
const qdqOpset = 13

// sameSince13 are the op types whose ONNX semantics (as the models use
// them) did not change between opset 9 and 13; Clip, Slice and Softmax
// are converted or checked, anything else is refused.
var sameSince13 = map[string]bool{
	"Conv": true, "BatchNormalization": true, "Relu": true, "MaxPool": true, "AveragePool": true,
	"GlobalAveragePool": true, "Add": true, "Sum": true, "Mul": true, "Div": true, "Sub": true, "Gemm": true,
	"MatMul": true, "Reshape": true, "Flatten": true, "Concat": true, "Constant": true, "ConstantOfShape": true,
	"HardSigmoid": true, "Sigmoid": true, "Shape": true, "Cast": true, "Transpose": true, "Identity": true,
	"LeakyRelu": true, "Clip": true, "Slice": true, "Softmax": true, "Tanh": true,
}

// prepare moves pb's graph to opset 13 with its constants as
// initializers and its Conv+BatchNormalization pairs folded, and returns
// the opset it had.
func prepare(pb *onnxpb.Model) (int64, error) {
	if pb.Graph == nil {
		return 0, fmt.Errorf("quantize: the model has no graph")
	}
	opset := int64(0)
	for i, o := range pb.OpsetImport {
		if o.Domain == "" || o.Domain == "ai.onnx" {
			opset = o.Version
			if o.Version < qdqOpset {
				pb.OpsetImport[i].Version = qdqOpset
			}
		}
	}
	if opset == 0 {
		return 0, fmt.Errorf("quantize: the model imports no ai.onnx opset")
	}
	if pb.IRVersion < 7 {
		pb.IRVersion = 7
	}
	g := pb.Graph
	inits := map[string]*onnxpb.Tensor{}
	for _, p := range g.Initializers {
		inits[p.Name] = p
	}
	var nodes []*onnxpb.Node
	for _, n := range g.Nodes {
		if n.Domain != "" && n.Domain != "ai.onnx" {
			return 0, fmt.Errorf("quantize: node %q: domain %q is not supported", n.Name, n.Domain)
		}
		if opset < qdqOpset && !sameSince13[n.OpType] {
			return 0, fmt.Errorf("quantize: node %q: %s at opset %d cannot be moved to opset %d here", n.Name, n.OpType, opset, qdqOpset)
		}
		switch {
		case n.OpType == "Constant" && len(n.Outputs) == 1:
			a := attrOf(n, "value")
			if a == nil || a.T == nil {
				return 0, fmt.Errorf("quantize: Constant %q: only the value attribute is supported", n.Name)
			}
			t := *a.T
			t.Name = n.Outputs[0]
			g.Initializers = append(g.Initializers, &t)
			inits[t.Name] = &t
			continue
		case n.OpType == "ConstantOfShape" && len(n.Inputs) == 1 && inits[n.Inputs[0]] != nil:
			st, err := model.TensorFromONNX(inits[n.Inputs[0]])
			if err != nil {
				return 0, err
			}
			dims, err := st.Int64s()
			if err != nil {
				return 0, err
			}
			shape := make([]int, len(dims))
			size := 1
			for i, d := range dims {
				shape[i], size = int(d), size*int(d)
			}
			var v float32
			if a := attrOf(n, "value"); a != nil && a.T != nil {
				vt, err := model.TensorFromONNX(a.T)
				if err != nil {
					return 0, err
				}
				if vt.DType != tensor.Float32 {
					nodes = append(nodes, n)
					continue
				}
				v = vt.Data.([]float32)[0]
			}
			data := make([]float32, size)
			for i := range data {
				data[i] = v
			}
			p := model.TensorToONNX(n.Outputs[0], tensor.From(shape, data))
			g.Initializers = append(g.Initializers, p)
			inits[p.Name] = p
			continue
		case n.OpType == "Clip" && opset < 11:
			c := *n
			c.Attributes = nil
			lo, hi := float32(math.Inf(-1)), float32(math.Inf(1))
			if a := attrOf(n, "min"); a != nil {
				lo = a.F
			}
			if a := attrOf(n, "max"); a != nil {
				hi = a.F
			}
			for _, b := range []struct {
				suffix string
				v      float32
			}{{"_min", lo}, {"_max", hi}} {
				p := model.TensorToONNX(n.Outputs[0]+b.suffix, tensor.Scalar(b.v))
				g.Initializers = append(g.Initializers, p)
				inits[p.Name] = p
				c.Inputs = append(c.Inputs, p.Name)
			}
			n = &c
		case n.OpType == "Slice" && opset < 10:
			c := *n
			c.Attributes = nil
			for _, name := range []string{"starts", "ends", "axes"} {
				a := attrOf(n, name)
				if a == nil {
					continue
				}
				p := model.TensorToONNX(n.Outputs[0]+"_"+name, tensor.From([]int{len(a.Ints)}, slices.Clone(a.Ints)))
				g.Initializers = append(g.Initializers, p)
				inits[p.Name] = p
				c.Inputs = append(c.Inputs, p.Name)
			}
			n = &c
		}
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
	// graph inputs that name constants (old exporters list every weight)
	// are constants
	g.Inputs = slices.DeleteFunc(g.Inputs, func(vi *onnxpb.ValueInfo) bool { return inits[vi.Name] != nil })
	return opset, foldBatchNorms(g, inits)
}

// foldBatchNorms folds each BatchNormalization whose input is a Conv's
// output read by it alone into the Conv (ONNX Runtime's ConvBNFusion, in
// float32): s = scale/sqrt(var+eps), W' = W·s per output channel, B' =
// (B - mean)·s + bias.
func foldBatchNorms(g *onnxpb.Graph, inits map[string]*onnxpb.Tensor) error {
	readers := map[string]int{}
	prod := map[string]*onnxpb.Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			readers[in]++
		}
		for _, o := range n.Outputs {
			prod[o] = n
		}
	}
	for _, o := range g.Outputs {
		readers[o.Name]++
	}
	floats := func(name string) ([]float32, []int, bool) {
		p := inits[name]
		if p == nil {
			return nil, nil, false
		}
		t, err := model.TensorFromONNX(p)
		if err != nil || t.DType != tensor.Float32 {
			return nil, nil, false
		}
		return t.Data.([]float32), t.Shape, true
	}
	dead := map[*onnxpb.Node]bool{}
	for _, bn := range g.Nodes {
		if bn.OpType != "BatchNormalization" || len(bn.Inputs) != 5 || len(bn.Outputs) != 1 {
			continue
		}
		c := prod[bn.Inputs[0]]
		if c == nil || c.OpType != "Conv" || readers[bn.Inputs[0]] != 1 || len(c.Inputs) < 2 {
			continue
		}
		w, wshape, ok1 := floats(c.Inputs[1])
		scale, _, ok2 := floats(bn.Inputs[1])
		bias, _, ok3 := floats(bn.Inputs[2])
		mean, _, ok4 := floats(bn.Inputs[3])
		vr, _, ok5 := floats(bn.Inputs[4])
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || len(wshape) < 2 || readers[c.Inputs[1]] != 1 {
			continue
		}
		m := wshape[0]
		if len(scale) != m || len(bias) != m || len(mean) != m || len(vr) != m {
			continue
		}
		b := make([]float32, m)
		if len(c.Inputs) == 3 && c.Inputs[2] != "" {
			cb, _, ok := floats(c.Inputs[2])
			if !ok || len(cb) != m || readers[c.Inputs[2]] != 1 {
				continue
			}
			copy(b, cb)
		}
		eps := float32(1e-5)
		if a := attrOf(bn, "epsilon"); a != nil {
			eps = a.F
		}
		per := len(w) / m
		nw := make([]float32, len(w))
		for o := 0; o < m; o++ {
			s := scale[o] / float32(math.Sqrt(float64(vr[o]+eps)))
			for i := o * per; i < (o+1)*per; i++ {
				nw[i] = w[i] * s
			}
			b[o] = (b[o]-mean[o])*s + bias[o]
		}
		wp := model.TensorToONNX(c.Inputs[1], tensor.From(wshape, nw))
		bname := c.Inputs[1] + "_bn_bias"
		if len(c.Inputs) == 3 && c.Inputs[2] != "" {
			bname = c.Inputs[2]
		}
		bp := model.TensorToONNX(bname, tensor.From([]int{m}, b))
		inits[wp.Name], inits[bp.Name] = wp, bp
		nc := *c
		nc.Inputs = []string{c.Inputs[0], c.Inputs[1], bname}
		nc.Outputs = []string{bn.Outputs[0]}
		*c = nc
		dead[bn] = true
	}
	g.Nodes = slices.DeleteFunc(g.Nodes, func(n *onnxpb.Node) bool { return dead[n] })
	g.Initializers = g.Initializers[:0]
	read := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			read[in] = true
		}
	}
	for _, o := range g.Outputs {
		read[o.Name] = true
	}
	names := make([]string, 0, len(inits))
	for name := range inits {
		if read[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		g.Initializers = append(g.Initializers, inits[name])
	}
	// graph inputs that name initializers (IR < 4 listed them) stay
	// inputs; the tool leaves them as they are
	return nil
}

func attrOf(n *onnxpb.Node, name string) *onnxpb.Attribute {
	for _, a := range n.Attributes {
		if a.Name == name {
			return a
		}
	}
	return nil
}
