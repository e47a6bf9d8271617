package main

import (
	"maps"
	"slices"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// The cases of the products of ONNX Runtime-optimized transformers:
// FusedMatMul and the BERT-style Attention with its merged weights.

// inFloat returns rc with ONNX Runtime's stand-in when rc is a FLOAT16
// case of an operator its CPU provider implements for FLOAT only
// (FusedMatMul, Attention): the FLOAT16 inputs of the nodes (graph inputs
// and initializers) Cast to FLOAT, the nodes run on them, each graph
// output Cast back to FLOAT16 once, as quantserve rounds it. The nodes
// are nodes when given (a definition ONNX Runtime computes as the
// operator is defined), else rc's own.
func inFloat(rc refCase, dt tensor.DataType, nodes ...onnxbuild.Node) refCase {
	if nodes == nil {
		if dt != tensor.Float16 {
			return rc
		}
		nodes = rc.graph.Nodes
	}
	ort := rc.graph
	ort.Nodes = nil
	if dt != tensor.Float16 {
		ort.Nodes = nodes
		rc.ort = &ort
		return rc
	}
	half := map[string]bool{}
	for _, io := range rc.graph.Inputs {
		half[io.Name] = io.DType == tensor.Float16
	}
	for name, t := range rc.graph.Inits {
		half[name] = t.DType == tensor.Float16
	}
	out := map[string]bool{}
	for _, io := range rc.graph.Outputs {
		out[io.Name] = true
	}
	cast := func(in, out string, to int64) onnxbuild.Node {
		return onnxbuild.Node{Op: "Cast", Inputs: []string{in}, Outputs: []string{out}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("to", to)}}
	}
	cast32 := map[string]bool{}
	var post []onnxbuild.Node
	for _, n := range nodes {
		n.Inputs, n.Outputs = slices.Clone(n.Inputs), slices.Clone(n.Outputs)
		for i, name := range n.Inputs {
			if half[name] {
				if !cast32[name] {
					ort.Nodes = append(ort.Nodes, cast(name, name+".f32", 1))
					cast32[name] = true
				}
				n.Inputs[i] = name + ".f32"
			}
		}
		for i, name := range n.Outputs {
			if out[name] {
				post = append(post, cast(name+".f32", name, 10))
			}
			if name != "" {
				n.Outputs[i] = name + ".f32"
			}
		}
		for i, name := range n.Inputs {
			if !half[name] && !out[name] && slices.ContainsFunc(nodes, func(m onnxbuild.Node) bool { return slices.Contains(m.Outputs, name) }) {
				n.Inputs[i] = name + ".f32" // another node's output, computed in float
			}
		}
		ort.Nodes = append(ort.Nodes, n)
	}
	ort.Nodes = append(ort.Nodes, post...)
	rc.ort = &ort
	return rc
}

func fusedMatMulCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase
	const op = "FusedMatMul"
	attr := onnxbuild.IntAttr
	alpha := func(a float32) *onnxpb.Attribute { return onnxbuild.FloatAttr("alpha", a) }

	// Batch dimensions broadcast, alpha.
	b := newCase("fused_matmul_"+s, dt, 80)
	b.node(op, []string{b.in("A", []int{2, 3, 4, 6}, 1, 0), b.in("B", []int{3, 6, 5}, 1, 0)},
		[]string{b.out("Y", dt, 2, 3, 4, 5)}, alpha(0.5))
	cs = append(cs, inFloat(b.done(), dt))

	// transA and transB, B's batch of 1 broadcast.
	b = newCase("fused_matmul_trans_"+s, dt, 81)
	b.node(op, []string{b.in("A", []int{2, 7, 5}, 1, 0), b.in("B", []int{1, 3, 7}, 1, 0)},
		[]string{b.out("Y", dt, 2, 5, 3)}, attr("transA", 1), attr("transB", 1), alpha(-1.25))
	cs = append(cs, inFloat(b.done(), dt))

	// transBatchA then transA: A [K, b0, b1, M]; transBatchB: B [K, b0,
	// 1, N].
	b = newCase("fused_matmul_trans_batch_"+s, dt, 82)
	b.node(op, []string{b.in("A", []int{6, 2, 3, 4}, 1, 0), b.in("B", []int{6, 2, 1, 5}, 1, 0)},
		[]string{b.out("Y", dt, 2, 3, 4, 5)}, attr("transBatchA", 1), attr("transA", 1), attr("transBatchB", 1))
	cs = append(cs, inFloat(b.done(), dt))

	// transBatchA: A [M, b, K]; transBatchB then transB: B [N, b, K].
	b = newCase("fused_matmul_trans_batch_b_"+s, dt, 83)
	b.node(op, []string{b.in("A", []int{3, 2, 4}, 1, 0), b.in("B", []int{5, 2, 4}, 1, 0)},
		[]string{b.out("Y", dt, 2, 3, 5)}, attr("transBatchA", 1), attr("transBatchB", 1), attr("transB", 1), alpha(3))
	cs = append(cs, inFloat(b.done(), dt))

	// A 1-D A (transA leaves it as it is) times a batch of transposed B.
	b = newCase("fused_matmul_vector_"+s, dt, 84)
	b.node(op, []string{b.in("A", []int{7}, 1, 0), b.in("B", []int{2, 5, 7}, 1, 0)},
		[]string{b.out("Y", dt, 2, 5)}, attr("transA", 1), attr("transB", 1))
	cs = append(cs, inFloat(b.done(), dt))

	// A transposed batch times a 1-D B (transB leaves it as it is). ONNX
	// Runtime's CPU kernel reads A untransposed there (its
	// MatMulComputeHelper takes M and K from the transposed dimensions
	// but leaves A's strides as they are), and its optimizer fuses a
	// Transpose before a MatMul into that kernel, so the reference is the
	// definition without a Transpose: alpha·MatMul(B, A), B a row.
	b = newCase("fused_matmul_vector_b_"+s, dt, 85)
	b.node(op, []string{b.in("A", []int{3, 4, 7}, 1, 0), b.in("B", []int{4}, 1, 0)},
		[]string{b.out("Y", dt, 3, 7)}, attr("transA", 1), attr("transB", 1), alpha(0.25))
	rc := inFloat(b.done(), dt,
		onnxbuild.Node{Op: "MatMul", Inputs: []string{"B", "A"}, Outputs: []string{"BA"}},
		onnxbuild.Node{Op: "Mul", Inputs: []string{"BA", "alpha"}, Outputs: []string{"Y"}})
	rc.ort.Inits = maps.Clone(rc.graph.Inits)
	rc.ort.Inits["alpha"] = tensor.Scalar(float32(0.25))
	cs = append(cs, rc)

	// A constant weight, transposed (a Linear's; 96×80 values, enough for
	// the int8 kernels), alpha.
	b = newCase("fused_matmul_weight_"+s, dt, 86)
	b.node(op, []string{b.in("A", []int{2, 5, 96}, 1, 0), b.init("W", []int{80, 96}, 0.1, 0)},
		[]string{b.out("Y", dt, 2, 5, 80)}, attr("transB", 1), alpha(0.75))
	cs = append(cs, inFloat(b.done(), dt))

	// A small constant weight (float kernels) and transA.
	b = newCase("fused_matmul_weight_small_"+s, dt, 87)
	b.node(op, []string{b.in("A", []int{6, 3}, 1, 0), b.init("W", []int{6, 5}, 1, 0)},
		[]string{b.out("Y", dt, 3, 5)}, attr("transA", 1), alpha(2))
	cs = append(cs, inFloat(b.done(), dt))
	return cs
}

func attentionCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase
	const op = "Attention"
	heads := func(n int64) *onnxpb.Attribute { return onnxbuild.IntAttr("num_heads", n) }

	// BERT's form: constant weights and bias, key lengths.
	b := newCase("attention_"+s, dt, 90)
	b.node(op, []string{b.in("input", []int{2, 5, 24}, 1, 0), b.init("weights", []int{24, 72}, 0.2, 0),
		b.init("bias", []int{72}, 0.3, 0), b.ids("mask_index", []int{2}, 0, 5, 3)},
		[]string{b.out("output", dt, 2, 5, 24)}, heads(3))
	cs = append(cs, inFloat(b.done(), dt))

	// GPT-2's form: causal after a past, present, a padding mask over
	// past and run; weights and bias read at run time.
	b = newCase("attention_gpt2_"+s, dt, 91)
	b.node(op, []string{b.in("input", []int{2, 4, 16}, 1, 0), b.in("weights", []int{16, 48}, 0.25, 0),
		b.in("bias", []int{48}, 0.3, 0), b.ids("mask_index", []int{2, 7}, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0),
		b.in("past", []int{2, 2, 2, 3, 8}, 1, 0)},
		[]string{b.out("output", dt, 2, 4, 16), b.out("present", dt, 2, 2, 2, 7, 8)}, heads(2), onnxbuild.IntAttr("unidirectional", 1))
	cs = append(cs, inFloat(b.done(), dt))

	// One token after a long past: key lengths over past and run.
	b = newCase("attention_decode_"+s, dt, 92)
	b.node(op, []string{b.in("input", []int{3, 1, 12}, 1, 0), b.init("weights", []int{12, 36}, 0.3, 0),
		b.init("bias", []int{36}, 0.3, 0), b.ids("mask_index", []int{3}, 0, 7, 5, 6),
		b.in("past", []int{2, 3, 4, 6, 3}, 1, 0)},
		[]string{b.out("output", dt, 3, 1, 12), b.out("present", dt, 2, 3, 4, 7, 3)}, heads(4), onnxbuild.IntAttr("unidirectional", 1))
	cs = append(cs, inFloat(b.done(), dt))

	// qkv_hidden_sizes with values' heads wider than the keys', a mask
	// per query, attention_bias over the heads, scale and
	// mask_filter_value.
	b = newCase("attention_qkv_sizes_"+s, dt, 93)
	b.node(op, []string{b.in("input", []int{2, 4, 10}, 1, 0), b.init("weights", []int{10, 42}, 0.3, 0),
		b.init("bias", []int{42}, 0.3, 0),
		b.ids("mask_index", []int{2, 4, 4}, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1,
			1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0),
		"", b.in("attention_bias", []int{1, 3, 4, 4}, 1, 0)},
		[]string{b.out("output", dt, 2, 4, 18)}, heads(3), onnxbuild.IntsAttr("qkv_hidden_sizes", 12, 12, 18),
		onnxbuild.FloatAttr("scale", 0.3), onnxbuild.FloatAttr("mask_filter_value", -500))
	cs = append(cs, inFloat(b.done(), dt))

	// Key lengths followed by start positions [2·batch], causal without
	// a past, attention_bias per batch item.
	b = newCase("attention_mask_start_"+s, dt, 94)
	b.node(op, []string{b.in("input", []int{2, 6, 8}, 1, 0), b.init("weights", []int{8, 24}, 0.35, 0),
		b.init("bias", []int{24}, 0.3, 0), b.ids("mask_index", []int{4}, 0, 5, 6, 1, 2), "",
		b.in("attention_bias", []int{2, 1, 6, 6}, 1, 0)},
		[]string{b.out("output", dt, 2, 6, 8)}, heads(2), onnxbuild.IntAttr("unidirectional", 1))
	cs = append(cs, inFloat(b.done(), dt))

	// A mask [batch, 1], which masks nothing, and present without a past.
	b = newCase("attention_dummy_mask_"+s, dt, 95)
	b.node(op, []string{b.in("input", []int{2, 3, 9}, 1, 0), b.init("weights", []int{9, 27}, 0.3, 0),
		b.init("bias", []int{27}, 0.3, 0), b.ids("mask_index", []int{2, 1}, 0, 0, 1)},
		[]string{b.out("output", dt, 2, 3, 9), b.out("present", dt, 2, 2, 3, 3, 3)}, heads(3))
	cs = append(cs, inFloat(b.done(), dt))

	// Key lengths in a [3·batch + 2] mask_index, of which ONNX Runtime's
	// CPU kernel reads the first batch values only.
	b = newCase("attention_mask_lengths_"+s, dt, 97)
	b.node(op, []string{b.in("input", []int{2, 4, 6}, 1, 0), b.init("weights", []int{6, 18}, 0.4, 0),
		b.init("bias", []int{18}, 0.3, 0), b.ids("mask_index", []int{8}, 0, 3, 4, 1, 0, 0, 3, 7, 4)},
		[]string{b.out("output", dt, 2, 4, 6)}, heads(2))
	cs = append(cs, inFloat(b.done(), dt))

	if dt == tensor.Float32 {
		// Weights of 64×192 values, enough for the int8 kernels; a
		// padding mask.
		b = newCase("attention_wide_f32", dt, 96)
		b.node(op, []string{b.in("input", []int{2, 9, 64}, 1, 0), b.init("weights", []int{64, 192}, 0.125, 0),
			b.init("bias", []int{192}, 0.3, 0),
			b.ids("mask_index", []int{2, 9}, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0)},
			[]string{b.out("output", dt, 2, 9, 64)}, heads(4))
		cs = append(cs, b.done())
	}
	return cs
}

// bertAttentionBlockCase lays out a BERT layer as ONNX Runtime's
// optimizer leaves it with the merged-weights Attention, weights as
// initializers: EmbedLayerNormalization (its mask_index the key lengths
// of) Attention, SkipLayerNormalization of the attention and the
// embeddings, the feed-forward FusedMatMul (its weight transposed, 4096
// values: the int8 kernels' under quantization), BiasGelu, FusedMatMul
// back to the hidden size, SkipLayerNormalization.
func bertAttentionBlockCase() refCase {
	b := newCase("block_bert_attention_f32", tensor.Float32, 98)
	const batch, seq, hidden, heads, ff = 2, 7, 32, 4, 128
	f := tensor.Float32
	b.node("EmbedLayerNormalization", []string{b.ids("input_ids", []int{batch, seq}, 40), b.ids("segment_ids", []int{batch, seq}, 2),
		b.init("word_embedding", []int{40, hidden}, 1, 0), b.init("position_embedding", []int{seq, hidden}, 0.5, 0),
		b.init("segment_embedding", []int{2, hidden}, 0.5, 0), b.init("ln0.gamma", []int{hidden}, 0.1, 1), b.init("ln0.beta", []int{hidden}, 0.1, 0),
		b.ids("mask", []int{batch, seq}, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1)},
		[]string{"emb", "mask_index"}, onnxbuild.FloatAttr("epsilon", 1e-12))
	b.node("Attention", []string{"emb", b.init("attn.weights", []int{hidden, 3 * hidden}, 0.18, 0), b.init("attn.bias", []int{3 * hidden}, 0.3, 0), "mask_index"},
		[]string{"attn"}, onnxbuild.IntAttr("num_heads", heads))
	b.node("SkipLayerNormalization", []string{"attn", "emb", b.init("ln1.gamma", []int{hidden}, 0.1, 1),
		b.init("ln1.beta", []int{hidden}, 0.1, 0), b.init("ln1.bias", []int{hidden}, 0.1, 0)},
		[]string{"ln1"}, onnxbuild.FloatAttr("epsilon", 1e-12))
	b.node("FusedMatMul", []string{"ln1", b.init("ff1.weight", []int{ff, hidden}, 0.18, 0)}, []string{"ff1"},
		onnxbuild.IntAttr("transB", 1))
	b.node("BiasGelu", []string{"ff1", b.init("ff1.bias", []int{ff}, 0.3, 0)}, []string{"act"})
	b.node("FusedMatMul", []string{"act", b.init("ff2.weight", []int{ff, hidden}, 0.09, 0)}, []string{"ff2"},
		onnxbuild.FloatAttr("alpha", 0.5))
	b.node("SkipLayerNormalization", []string{"ff2", "ln1", b.init("ln2.gamma", []int{hidden}, 0.1, 1),
		b.init("ln2.beta", []int{hidden}, 0.1, 0)},
		[]string{b.out("output", f, batch, seq, hidden)}, onnxbuild.FloatAttr("epsilon", 1e-12))
	return b.done()
}
