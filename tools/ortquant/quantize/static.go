package quantize

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Static is onnxruntime.quantization.quantize_static with QuantFormat.QDQ,
// per_channel=True and its other defaults (weights QInt8 symmetric,
// activations QUInt8 asymmetric, reduce_range False, the MinMax
// calibrator), on the model as quant_pre_process leaves it (see
// prepare: opset 13, constants as initializers, BatchNormalization folded
// into the Conv before it). The calibration runs the float model through
// quantserve on each of inputs and keeps every value's minimum and
// maximum over all of them.
//
// Which tensors get a QuantizeLinear -> DequantizeLinear pair follows the
// QDQ quantizer's operator classes:
//
//	Conv, Gemm, MatMul   the activation inputs and the output; constant
//	                     weights as INT8 per output channel behind a
//	                     DequantizeLinear (Conv axis 0, MatMul axis 1, Gemm
//	                     axis 0 with transB), the bias as INT32 with scale
//	                     x_scale·w_scale and zero point 0
//	Relu, Clip           removed when their input is quantized and read by
//	                     them alone: the producer writes their output, whose
//	                     calibrated range (starting at 0, or Clip's bounds)
//	                     the pair's saturation applies
//	MaxPool, Reshape,    the output quantized with its input's scale and zero
//	AveragePool          point, when the input is quantized
//	Add, Mul, Concat,    every float input and the output, each with its own
//	GlobalAveragePool,   range (Softmax's output range is [0, 1]); constant
//	Softmax              inputs as INT8 symmetric per-tensor initializers
//
// Every other operator (Sum, Div, HardSigmoid, Shape, ...) runs in float
// on dequantized inputs. Each quantized tensor has one pair, read by all
// of its consumers; a graph output keeps its name on the DequantizeLinear.
// An activation's scale and zero point are compute_scale_zp's for
// [min(rmin, 0), max(rmax, 0)] and [0, 255]: scale = float32(float64(rmax
// - rmin) / 255), zero point = roundEven(-rmin / scale) (scale 1 and zero
// point 0 when the range is below float32's smallest normal).
func Static(data []byte, inputs []map[string]*tensor.Tensor) ([]byte, *StaticStats, error) {
	if len(inputs) == 0 {
		return nil, nil, fmt.Errorf("quantize: static quantization needs calibration inputs")
	}
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil {
		return nil, nil, err
	}
	opset, err := prepare(pb)
	if err != nil {
		return nil, nil, err
	}
	ranges, ranks, err := calibrate(onnxpb.Marshal(pb), inputs)
	if err != nil {
		return nil, nil, err
	}
	if opset < 13 {
		// Softmax below opset 13 flattens its input to 2-D at axis (1 by
		// default); from 13 it runs along axis (-1 by default): the same
		// for a 2-D input
		for _, n := range pb.Graph.Nodes {
			if n.OpType != "Softmax" || len(n.Inputs) == 0 {
				continue
			}
			r := ranks[n.Inputs[0]]
			axis := int64(1)
			if a := attrOf(n, "axis"); a != nil {
				axis = a.I
			}
			if axis < 0 {
				axis += int64(r)
			}
			if r != 2 || axis != 1 {
				return nil, nil, fmt.Errorf("quantize: Softmax %q of a rank-%d input at axis %d: opset %d's meaning differs from 13's", n.Name, r, axis, opset)
			}
			n.Attributes = nil // axis 1 of 2 is 13's default
		}
	}
	q := &qdqWriter{g: pb.Graph, ranges: ranges, params: map[string]actParams{}, stats: &StaticStats{}}
	if err := q.plan(); err != nil {
		return nil, nil, err
	}
	if err := q.write(); err != nil {
		return nil, nil, err
	}
	return onnxpb.Marshal(pb), q.stats, nil
}

// StaticStats says what Static quantized.
type StaticStats struct {
	Activations int // tensors with a QuantizeLinear -> DequantizeLinear pair
	Weights     int // constant weights stored as INT8 (per channel)
	Biases      int // biases stored as INT32
	Removed     int // Relu and Clip nodes the pairs' saturation replaces
}

// valueRange is a calibrated range.
type valueRange struct{ lo, hi float32 }

// calibrate runs the model on each input set, keeping every value, and
// returns each FLOAT value's range over all runs, and every value's rank.
func calibrate(data []byte, inputs []map[string]*tensor.Tensor) (map[string]valueRange, map[string]int, error) {
	m, err := model.LoadWith(data, model.Options{Unrewritten: true})
	if err != nil {
		return nil, nil, fmt.Errorf("quantize: calibration: %w", err)
	}
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, vi := range pb.Graph.Inputs {
		names = append(names, vi.Name)
	}
	for _, n := range pb.Graph.Nodes {
		names = append(names, n.Outputs...)
	}
	ranges, ranks := map[string]valueRange{}, map[string]int{}
	for _, in := range inputs {
		vals, err := m.Trace(context.Background(), in)
		if err != nil {
			return nil, nil, fmt.Errorf("quantize: calibration run: %w", err)
		}
		for _, name := range names {
			s, ok := m.Slot(name)
			if !ok || s >= len(vals) || vals[s] == nil {
				continue
			}
			ranks[name] = vals[s].Rank()
			v, ok := vals[s].Data.([]float32)
			if !ok || len(v) == 0 {
				continue
			}
			r, seen := ranges[name]
			if !seen {
				r = valueRange{v[0], v[0]}
			}
			for _, x := range v {
				r.lo, r.hi = min(r.lo, x), max(r.hi, x)
			}
			ranges[name] = r
		}
	}
	return ranges, ranks, nil
}

// ActivationParams returns compute_scale_zp's scale and zero point for an
// activation of range [lo, hi] quantized to UINT8 (QUInt8, asymmetric, no
// range reduction).
func ActivationParams(lo, hi float32) (float32, uint8) {
	lo, hi = min(lo, 0), max(hi, 0)
	scale64 := float64(hi-lo) / 255
	if scale64 < 0x1p-126 {
		return 1, 0
	}
	zp := math.RoundToEven(0 - float64(lo)/scale64)
	return float32(scale64), uint8(min(max(zp, 0), 255))
}

// actParams names the scale and zero point of a quantized activation.
type actParams struct {
	scale, zp string
}

// qdqWriter plans and writes the pairs of one graph.
type qdqWriter struct {
	g      *onnxpb.Graph
	ranges map[string]valueRange
	inits  map[string]*onnxpb.Tensor
	order  []string             // activations to quantize, in the order chosen
	quant  map[string]bool      // activations to quantize
	same   map[string]string    // output -> the input whose parameters it shares
	params map[string]actParams // written parameters
	wq     map[string]string    // weight -> its DequantizeLinear output
	wdq    []*onnxpb.Node       // weight DequantizeLinears, placed before first use
	bias   map[string][2]string // bias -> (x, w) whose scales it takes
	wAxis  map[string]int       // weight -> its channel axis (-1 per tensor)
	stats  *StaticStats
}

func (q *qdqWriter) isFloat(name string) bool {
	if p := q.inits[name]; p != nil {
		return p.DataType == onnxpb.Float
	}
	_, ok := q.ranges[name]
	return ok
}

func (q *qdqWriter) activation(name string) {
	if name == "" || q.quant[name] || q.inits[name] != nil || !q.isFloat(name) {
		return
	}
	q.quant[name] = true
	q.order = append(q.order, name)
}

func (q *qdqWriter) weight(name string, axis int) {
	if p := q.inits[name]; p != nil && p.DataType == onnxpb.Float && !p.External {
		if _, ok := q.wAxis[name]; !ok {
			q.wAxis[name] = axis
		}
	}
}

// plan decides, node by node in graph order, which tensors are quantized
// and how.
func (q *qdqWriter) plan() error {
	q.inits = map[string]*onnxpb.Tensor{}
	for _, p := range q.g.Initializers {
		q.inits[p.Name] = p
	}
	q.quant, q.same, q.wq, q.bias, q.wAxis = map[string]bool{}, map[string]string{}, map[string]string{}, map[string][2]string{}, map[string]int{}
	readers := map[string]int{}
	for _, n := range q.g.Nodes {
		for _, in := range n.Inputs {
			readers[in]++
		}
	}
	graphIO := map[string]bool{}
	for _, vi := range append(slices.Clone(q.g.Inputs), q.g.Outputs...) {
		graphIO[vi.Name] = true
	}
	// adjust_tensor_ranges: a Relu's or Clip's sole input takes its
	// output's range; Softmax's output is [0, 1]
	for _, n := range q.g.Nodes {
		switch {
		case (n.OpType == "Relu" || n.OpType == "Clip") && len(n.Inputs) > 0 && readers[n.Inputs[0]] == 1:
			if r, ok := q.ranges[n.Outputs[0]]; ok {
				if _, ok := q.ranges[n.Inputs[0]]; ok {
					q.ranges[n.Inputs[0]] = r
				}
			}
		case n.OpType == "Softmax":
			if _, ok := q.ranges[n.Outputs[0]]; ok {
				q.ranges[n.Outputs[0]] = valueRange{0, 1}
			}
		}
	}
	dead := map[*onnxpb.Node]bool{}
	prod := map[string]*onnxpb.Node{}
	for _, n := range q.g.Nodes {
		for _, o := range n.Outputs {
			prod[o] = n
		}
	}
	for _, n := range q.g.Nodes {
		in := func(i int) string {
			if i < len(n.Inputs) {
				return n.Inputs[i]
			}
			return ""
		}
		switch n.OpType {
		case "Conv":
			q.activation(in(0))
			q.activation(n.Outputs[0])
			if q.inits[in(1)] != nil {
				q.weight(in(1), 0)
				if b := in(2); b != "" && q.inits[b] != nil && q.quant[in(0)] {
					q.bias[b] = [2]string{in(0), in(1)}
				}
			}
		case "Gemm":
			transB := attrOf(n, "transB") != nil && attrOf(n, "transB").I != 0
			plain := (attrOf(n, "alpha") == nil || attrOf(n, "alpha").F == 1) && (attrOf(n, "beta") == nil || attrOf(n, "beta").F == 1) &&
				(attrOf(n, "transA") == nil || attrOf(n, "transA").I == 0)
			q.activation(in(0))
			q.activation(n.Outputs[0])
			if plain && q.inits[in(1)] != nil {
				axis := 1
				if transB {
					axis = 0
				}
				q.weight(in(1), axis)
				if b := in(2); b != "" && q.inits[b] != nil && len(q.inits[b].Dims) == 1 && q.quant[in(0)] {
					q.bias[b] = [2]string{in(0), in(1)}
				}
			}
		case "MatMul":
			for _, x := range n.Inputs {
				if p := q.inits[x]; p != nil && len(p.Dims) == 2 {
					q.weight(x, 1)
				} else {
					q.activation(x)
				}
			}
			q.activation(n.Outputs[0])
		case "Relu", "Clip":
			x, y := in(0), n.Outputs[0]
			if !q.quant[x] {
				continue
			}
			if _, ok := q.ranges[y]; ok && readers[x] == 1 && !graphIO[x] {
				// the producer writes y; x is no longer a tensor
				p := prod[x]
				for i, o := range p.Outputs {
					if o == x {
						p.Outputs[i] = y
					}
				}
				prod[y] = p
				delete(q.quant, x)
				q.order = slices.DeleteFunc(q.order, func(s string) bool { return s == x })
				dead[n] = true
				q.stats.Removed++
			} else {
				q.activation(x)
			}
			q.activation(y)
		case "MaxPool", "Reshape", "AveragePool":
			if x, y := in(0), n.Outputs[0]; q.quant[x] && q.isFloat(y) && !q.quant[y] {
				q.same[y] = x
				q.quant[y] = true
				q.order = append(q.order, y)
			}
		case "Add", "Mul", "Concat", "GlobalAveragePool", "Softmax":
			for _, x := range n.Inputs {
				if q.inits[x] != nil {
					q.weight(x, -1)
				} else {
					q.activation(x)
				}
			}
			q.activation(n.Outputs[0])
		}
	}
	q.g.Nodes = slices.DeleteFunc(q.g.Nodes, func(n *onnxpb.Node) bool { return dead[n] })
	return nil
}

// write inserts the pairs and the weights' DequantizeLinears.
func (q *qdqWriter) write() error {
	outputs := map[string]bool{}
	for _, o := range q.g.Outputs {
		outputs[o.Name] = true
	}
	// parameters of the activations, in order (same-as-input ones after
	// their inputs)
	for _, t := range q.order {
		if src, ok := q.same[t]; ok {
			q.params[t] = q.params[src]
			continue
		}
		r, ok := q.ranges[t]
		if !ok {
			return fmt.Errorf("quantize: %q was not calibrated", t)
		}
		scale, zp := ActivationParams(r.lo, r.hi)
		p := actParams{t + "_scale", t + "_zero_point"}
		q.addInit(model.TensorToONNX(p.scale, tensor.Scalar(scale)))
		q.addInit(model.TensorToONNX(p.zp, tensor.Scalar(zp)))
		q.params[t] = p
	}
	// weights and biases
	weightScale := map[string][]float32{}
	names := make([]string, 0, len(q.wAxis))
	for w := range q.wAxis {
		names = append(names, w)
	}
	slices.Sort(names)
	for _, w := range names {
		t, err := model.TensorFromONNX(q.inits[w])
		if err != nil {
			return fmt.Errorf("quantize: %s: %v", w, err)
		}
		axis := q.wAxis[w]
		vals := t.Data.([]float32)
		var qs []int8
		var scales []float32
		if axis < 0 || t.Rank() == 0 {
			var s float32
			qs, s = SymmetricInt8(vals)
			scales = []float32{s}
		} else {
			qs, scales = perChannel(vals, t.Shape, axis)
		}
		weightScale[w] = scales
		qn, sn, zn := w+"_quantized", w+"_scale", w+"_zero_point"
		q.addInit(model.TensorToONNX(qn, tensor.From(t.Shape, qs)))
		node := &onnxpb.Node{Name: w + "_DequantizeLinear", OpType: "DequantizeLinear", Inputs: []string{qn, sn, zn}, Outputs: []string{w + "_DequantizeLinear_Output"}}
		if axis < 0 || t.Rank() == 0 {
			q.addInit(model.TensorToONNX(sn, tensor.Scalar(scales[0])))
			q.addInit(model.TensorToONNX(zn, tensor.Scalar(int8(0))))
		} else {
			q.addInit(model.TensorToONNX(sn, tensor.From([]int{len(scales)}, scales)))
			q.addInit(model.TensorToONNX(zn, tensor.From([]int{len(scales)}, make([]int8, len(scales)))))
			node.Attributes = []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: int64(axis)}}
		}
		q.wq[w] = node.Outputs[0]
		q.wdq = append(q.wdq, node)
		q.stats.Weights++
	}
	biases := make([]string, 0, len(q.bias))
	for b := range q.bias {
		biases = append(biases, b)
	}
	slices.Sort(biases)
	for _, b := range biases {
		xw := q.bias[b]
		ws, ok := weightScale[xw[1]]
		xs := q.scaleOf(xw[0])
		t, err := model.TensorFromONNX(q.inits[b])
		if !ok || err != nil || t.DType != tensor.Float32 || xs == 0 {
			continue
		}
		vals := t.Data.([]float32)
		if len(ws) != 1 && len(ws) != len(vals) {
			continue
		}
		qb := make([]int32, len(vals))
		bs := make([]float32, len(vals))
		for i, v := range vals {
			s := ws[0]
			if len(ws) > 1 {
				s = ws[i]
			}
			bs[i] = xs * s
			r := math.RoundToEven(float64(v / bs[i]))
			qb[i] = int32(min(max(r, math.MinInt32), math.MaxInt32))
		}
		qn, sn, zn := b+"_quantized", b+"_scale", b+"_zero_point"
		q.addInit(model.TensorToONNX(qn, tensor.From(t.Shape, qb)))
		q.addInit(model.TensorToONNX(sn, tensor.From([]int{len(bs)}, bs)))
		q.addInit(model.TensorToONNX(zn, tensor.From([]int{len(bs)}, make([]int32, len(bs)))))
		node := &onnxpb.Node{Name: b + "_DequantizeLinear", OpType: "DequantizeLinear", Inputs: []string{qn, sn, zn}, Outputs: []string{b + "_DequantizeLinear_Output"},
			Attributes: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: 0}}}
		q.wq[b] = node.Outputs[0]
		q.wdq = append(q.wdq, node)
		q.stats.Biases++
	}
	// the nodes: each reads the dequantized forms; each quantized value is
	// followed by its pair
	dqOut := map[string]string{}
	pair := func(t string) []*onnxpb.Node {
		p := q.params[t]
		qin, dout := t, t+"_DequantizeLinear_Output"
		if outputs[t] {
			qin, dout = t+"_QuantizeLinear_Input", t
		}
		dqOut[t] = dout
		q.stats.Activations++
		return []*onnxpb.Node{
			{Name: t + "_QuantizeLinear", OpType: "QuantizeLinear", Inputs: []string{qin, p.scale, p.zp}, Outputs: []string{t + "_QuantizeLinear_Output"}},
			{Name: t + "_DequantizeLinear", OpType: "DequantizeLinear", Inputs: []string{t + "_QuantizeLinear_Output", p.scale, p.zp}, Outputs: []string{dout}},
		}
	}
	var nodes []*onnxpb.Node
	for _, vi := range q.g.Inputs {
		if q.quant[vi.Name] {
			nodes = append(nodes, pair(vi.Name)...)
		}
	}
	placed := map[*onnxpb.Node]bool{}
	wdqOf := map[string]*onnxpb.Node{}
	for _, d := range q.wdq {
		wdqOf[d.Outputs[0]] = d
	}
	for _, n := range q.g.Nodes {
		c := *n
		c.Inputs = slices.Clone(n.Inputs)
		c.Outputs = slices.Clone(n.Outputs)
		for i, in := range c.Inputs {
			if d, ok := dqOut[in]; ok {
				c.Inputs[i] = d
			} else if w, ok := q.wq[in]; ok {
				c.Inputs[i] = w
				if d := wdqOf[w]; !placed[d] {
					placed[d] = true
					nodes = append(nodes, d)
				}
			}
		}
		for i, o := range c.Outputs {
			if q.quant[o] && outputs[o] {
				c.Outputs[i] = o + "_QuantizeLinear_Input"
			}
		}
		nodes = append(nodes, &c)
		for _, o := range n.Outputs {
			if q.quant[o] {
				nodes = append(nodes, pair(o)...)
			}
		}
	}
	q.g.Nodes = nodes
	// drop the float weights nothing reads any more
	read := map[string]bool{}
	for _, n := range q.g.Nodes {
		for _, v := range n.Inputs {
			read[v] = true
		}
	}
	for _, o := range q.g.Outputs {
		read[o.Name] = true
	}
	q.g.Initializers = slices.DeleteFunc(q.g.Initializers, func(p *onnxpb.Tensor) bool { return !read[p.Name] })
	q.g.Inputs = slices.DeleteFunc(q.g.Inputs, func(vi *onnxpb.ValueInfo) bool { return q.inits[vi.Name] != nil && !read[vi.Name] })
	return nil
}

func (q *qdqWriter) addInit(p *onnxpb.Tensor) {
	q.g.Initializers = append(q.g.Initializers, p)
	q.inits[p.Name] = p
}

// scaleOf returns the scale of quantized activation t, or 0.
func (q *qdqWriter) scaleOf(t string) float32 {
	p, ok := q.params[t]
	if !ok {
		return 0
	}
	st, err := model.TensorFromONNX(q.inits[p.scale])
	if err != nil {
		return 0
	}
	return st.Data.([]float32)[0]
}

// perChannel quantizes w (of shape shape) symmetrically to INT8 with one
// scale per index along axis, as quantize_weight_per_channel does.
func perChannel(w []float32, shape []int, axis int) ([]int8, []float32) {
	dim, inner := shape[axis], 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	outer := len(w) / (dim * inner)
	q := make([]int8, len(w))
	scales := make([]float32, dim)
	ch := make([]float32, 0, outer*inner)
	for c := 0; c < dim; c++ {
		ch = ch[:0]
		for o := 0; o < outer; o++ {
			base := (o*dim + c) * inner
			ch = append(ch, w[base:base+inner]...)
		}
		qc, s := SymmetricInt8(ch)
		scales[c] = s
		k := 0
		for o := 0; o < outer; o++ {
			base := (o*dim + c) * inner
			copy(q[base:base+inner], qc[k:k+inner])
			k += inner
		}
	}
	return q, scales
}
