// Package quantize rewrites float ONNX models into the int8 forms ONNX
// Runtime's quantization tool writes, so that both runtimes can be timed
// on the files their users would have: Dynamic (quantize_dynamic, for
// transformers) and Static (quantize_static's QDQ form with per-channel
// weights and calibrated activations, for CNNs; see static.go).
//
// Dynamic is onnxruntime.quantization.quantize_dynamic with its defaults
// (weight_type QInt8, per_channel False, reduce_range False, activations
// QUInt8, MatMulConstBOnly): every MatMul whose second input is a FLOAT
// initializer of rank 2 becomes
//
//	x_quantized, x_scale, x_zero_point = DynamicQuantizeLinear(x)     (one per activation)
//	y_output_quantized = MatMulInteger(x_quantized, W_quantized, x_zero_point, W_zero_point)
//	y_output_quantized_cast_output = Cast(y_output_quantized, to = FLOAT)
//	<name>_quant_scales_mul:0 = Mul(x_scale, W_scale)
//	y = Mul(y_output_quantized_cast_output, <name>_quant_scales_mul:0)
//
// with W quantized per tensor and symmetrically as quant_utils does it:
// rmin = min(W, 0), rmax = max(W, 0), absmax = max(|rmin|, |rmax|),
// scale = float32(float64(2·absmax) / 254) (1 when below float32's
// smallest normal), zero point 0, W_quantized = clip(roundEven(W /
// scale), -128, 127) with the division in float32. Other operators (ONNX
// Runtime also quantizes Gather, Conv and its fused contrib operators)
// are left as they are.
package quantize

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Dynamic returns the model data with its MatMuls by constant weights
// dynamically quantized as quantize_dynamic writes them, and how many it
// quantized.
func Dynamic(data []byte) ([]byte, int, error) {
	pb, err := onnxpb.UnmarshalModel(data)
	if err != nil {
		return nil, 0, err
	}
	if pb.Graph == nil {
		return nil, 0, fmt.Errorf("quantize: the model has no graph")
	}
	for _, o := range pb.OpsetImport {
		if (o.Domain == "" || o.Domain == "ai.onnx") && o.Version < 11 {
			return nil, 0, fmt.Errorf("quantize: opset %d: DynamicQuantizeLinear needs 11", o.Version)
		}
	}
	g := pb.Graph
	inits := map[string]*onnxpb.Tensor{}
	for _, p := range g.Initializers {
		inits[p.Name] = p
	}
	taken := map[string]bool{}
	for _, n := range g.Nodes {
		for _, v := range append(append([]string{}, n.Inputs...), n.Outputs...) {
			taken[v] = true
		}
	}
	for _, p := range g.Initializers {
		taken[p.Name] = true
	}
	fresh := func(name string) string {
		for i := 1; taken[name]; i++ {
			name = fmt.Sprintf("%s_%d", name, i)
		}
		taken[name] = true
		return name
	}
	type qvalue struct{ q, scale, zp string }
	acts, weights := map[string]qvalue{}, map[string]qvalue{}
	var nodes []*onnxpb.Node
	count := 0
	for _, n := range g.Nodes {
		w := inits[inputAt(n, 1)]
		if n.OpType != "MatMul" || n.Domain != "" && n.Domain != "ai.onnx" || len(n.Inputs) != 2 || len(n.Outputs) != 1 ||
			w == nil || w.External || w.DataType != onnxpb.Float || len(w.Dims) != 2 || n.Inputs[0] == "" {
			nodes = append(nodes, n)
			continue
		}
		x := n.Inputs[0]
		xa, ok := acts[x]
		if !ok {
			xa = qvalue{fresh(x + "_quantized"), fresh(x + "_scale"), fresh(x + "_zero_point")}
			acts[x] = xa
			nodes = append(nodes, &onnxpb.Node{Name: fresh(x + "_QuantizeLinear"), OpType: "DynamicQuantizeLinear",
				Inputs: []string{x}, Outputs: []string{xa.q, xa.scale, xa.zp}})
		}
		wq, ok := weights[w.Name]
		if !ok {
			t, err := model.TensorFromONNX(w)
			if err != nil {
				return nil, 0, fmt.Errorf("quantize: %s: %v", w.Name, err)
			}
			q, scale := SymmetricInt8(t.Data.([]float32))
			wq = qvalue{fresh(w.Name + "_quantized"), fresh(w.Name + "_scale"), fresh(w.Name + "_zero_point")}
			weights[w.Name] = wq
			g.Initializers = append(g.Initializers,
				model.TensorToONNX(wq.q, tensor.From(t.Shape, q)),
				model.TensorToONNX(wq.scale, tensor.Scalar(scale)),
				model.TensorToONNX(wq.zp, tensor.Scalar(int8(0))))
		}
		y := n.Outputs[0]
		base := n.Name + "_quant"
		if n.Name == "" {
			base = ""
		}
		mi := fresh(y + "_output_quantized")
		cast := fresh(mi + "_cast_output")
		scalesName := base + "_scales_mul"
		if base == "" {
			scalesName = xa.scale + "_" + wq.scale + "_mul"
		}
		scales := fresh(scalesName + ":0")
		nodes = append(nodes,
			&onnxpb.Node{Name: base, OpType: "MatMulInteger", Inputs: []string{xa.q, wq.q, xa.zp, wq.zp}, Outputs: []string{mi}},
			&onnxpb.Node{Name: mi + "_cast", OpType: "Cast", Inputs: []string{mi}, Outputs: []string{cast},
				Attributes: []*onnxpb.Attribute{{Name: "to", Type: onnxpb.AttrInt, I: int64(onnxpb.Float)}}},
			&onnxpb.Node{Name: scalesName, OpType: "Mul", Inputs: []string{xa.scale, wq.scale}, Outputs: []string{scales}},
			&onnxpb.Node{Name: outName(base), OpType: "Mul", Inputs: []string{cast, scales}, Outputs: []string{y}})
		count++
	}
	g.Nodes = nodes
	// drop the float weights nothing reads any more
	read := map[string]bool{}
	for _, n := range g.Nodes {
		for _, v := range n.Inputs {
			read[v] = true
		}
	}
	for _, o := range g.Outputs {
		read[o.Name] = true
	}
	kept := g.Initializers[:0]
	for _, p := range g.Initializers {
		if read[p.Name] {
			kept = append(kept, p)
		}
	}
	g.Initializers = kept
	return onnxpb.Marshal(pb), count, nil
}

func inputAt(n *onnxpb.Node, i int) string {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return ""
}

func outName(base string) string {
	if base == "" {
		return ""
	}
	return base + "_output_scale_mul"
}

// SymmetricInt8 quantizes w as quant_utils.quantize_data does for a
// QInt8 weight with symmetric ranges and no range reduction, returning
// the int8 values and the scale (the zero point is 0).
func SymmetricInt8(w []float32) ([]int8, float32) {
	var rmin, rmax float32
	for _, v := range w {
		rmin, rmax = min(rmin, v), max(rmax, v)
	}
	absmax := max(float32(math.Abs(float64(rmin))), float32(math.Abs(float64(rmax))))
	// dr = rmax - rmin in float32, then float64; qmax - qmin = 254
	scale64 := float64(absmax-(-absmax)) / 254
	scale := float32(scale64)
	if scale64 < 0x1p-126 { // numpy.finfo(float32).tiny
		scale = 1
	}
	q := make([]int8, len(w))
	for i, v := range w {
		q[i] = int8(min(max(math.RoundToEven(float64(v/scale)), -128), 127))
	}
	return q, scale
}
