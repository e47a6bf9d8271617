package main

import (
	"maps"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// The cases of the operators of BERT-like encoders and transformer
// decoders: EmbedLayerNormalization and MultiHeadAttention.

// ids adds an INT32 input of shape shape holding v (nil: seeded values
// in [0, n)).
func (b *builder) ids(name string, shape []int, n int, v ...int32) string {
	if v == nil {
		v = make([]int32, numel(shape))
		for i := range v {
			v[i] = int32(b.r.IntN(n))
		}
	}
	return b.input(name, tensor.From(shape, v))
}

func embedLayerNormCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase
	const op = "EmbedLayerNormalization"
	const i32 = tensor.Int32

	// BERT's form: segments, a mask (a 2 is not counted), every output.
	b := newCase("embed_layer_norm_"+s, dt, 50)
	const batch, seq, hidden = 2, 5, 37
	b.node(op, []string{b.ids("input_ids", []int{batch, seq}, 23), b.ids("segment_ids", []int{batch, seq}, 2),
		b.in("word_embedding", []int{23, hidden}, 1, 0), b.in("position_embedding", []int{8, hidden}, 0.5, 0),
		b.in("segment_embedding", []int{2, hidden}, 0.5, 0), b.in("gamma", []int{hidden}, 0.1, 1), b.in("beta", []int{hidden}, 0.1, 0),
		b.ids("mask", []int{batch, seq}, 0, 1, 1, 1, 0, 0, 1, 1, 2, 1, 1)},
		[]string{b.out("output", dt, batch, seq, hidden), b.out("mask_index", i32, batch), b.out("embedding_sum", dt, batch, seq, hidden)},
		onnxbuild.FloatAttr("epsilon", 1e-5))
	cs = append(cs, b.done())

	// DistilBERT's form: no segments, position_ids shared by the batch,
	// epsilon's default, no mask_index output.
	b = newCase("embed_layer_norm_distil_"+s, dt, 51)
	b.node(op, []string{b.ids("input_ids", []int{3, 4}, 17), "",
		b.in("word_embedding", []int{17, 29}, 1, 0), b.in("position_embedding", []int{6, 29}, 0.5, 0), "",
		b.in("gamma", []int{29}, 0.1, 1), b.in("beta", []int{29}, 0.1, 0), "",
		b.ids("position_ids", []int{1, 4}, 0, 5, 0, 3, 1)},
		[]string{b.out("output", dt, 3, 4, 29)}, onnxbuild.IntAttr("mask_index_type", 0))
	cs = append(cs, b.done())

	// position_ids per batch item; segment_embedding without segment_ids
	// (its row 0 is added); mask_index without a mask.
	b = newCase("embed_layer_norm_position_ids_"+s, dt, 52)
	b.node(op, []string{b.ids("input_ids", []int{2, 3}, 9), "",
		b.in("word_embedding", []int{9, 16}, 1, 0), b.in("position_embedding", []int{5, 16}, 0.5, 0),
		b.in("segment_embedding", []int{3, 16}, 0.5, 0), b.in("gamma", []int{16}, 0.1, 1), b.in("beta", []int{16}, 0.1, 0), "",
		b.ids("position_ids", []int{2, 3}, 0, 4, 2, 0, 1, 1, 3)},
		[]string{b.out("output", dt, 2, 3, 16), b.out("mask_index", i32, 2), b.out("embedding_sum", dt, 2, 3, 16)})
	cs = append(cs, b.done())
	return cs
}

// mhaOut declares MultiHeadAttention's output and, with present, its
// present_key and present_value.
func (b *builder) mhaOut(present bool, batch, seq, total, heads, hd, hv int) []string {
	outs := []string{b.out("output", b.dt, batch, seq, heads*hv)}
	if present {
		outs = append(outs, b.out("present_key", b.dt, batch, heads, total, hd), b.out("present_value", b.dt, batch, heads, total, hv))
	}
	return outs
}

func multiHeadAttentionCases(dt tensor.DataType) []refCase {
	s := dtName(dt)
	var cs []refCase
	const op = "MultiHeadAttention"
	heads := func(n int64) *onnxpb.Attribute { return onnxbuild.IntAttr("num_heads", n) }

	// Query, key and value of their own, values' heads wider than the
	// keys', the bias, a padding mask [batch, total] (values above 1
	// attend), attention_bias over the heads, present_key and
	// present_value.
	b := newCase("mha_"+s, dt, 60)
	b.node(op, []string{b.in("query", []int{2, 3, 12}, 1, 0), b.in("key", []int{2, 5, 12}, 1, 0), b.in("value", []int{2, 5, 15}, 1, 0),
		b.in("bias", []int{2*12 + 15}, 0.3, 0), b.ids("key_padding_mask", []int{2, 5}, 0, 1, 1, 0, 1, 0, 0, 2, 1, 1, 0),
		b.in("attention_bias", []int{1, 3, 3, 5}, 1, 0)},
		b.mhaOut(true, 2, 3, 5, 3, 4, 5), heads(3))
	cs = append(cs, b.done())

	// Decoding a block of tokens after a past: causal, key lengths over
	// the past and the run, mask_filter_value and scale.
	b = newCase("mha_past_causal_"+s, dt, 61)
	b.node(op, []string{b.in("query", []int{2, 4, 16}, 1, 0), b.in("key", []int{2, 4, 16}, 1, 0), b.in("value", []int{2, 4, 16}, 1, 0),
		b.in("bias", []int{48}, 0.3, 0), b.ids("key_padding_mask", []int{2}, 0, 7, 5), "",
		b.in("past_key", []int{2, 2, 3, 8}, 1, 0), b.in("past_value", []int{2, 2, 3, 8}, 1, 0)},
		b.mhaOut(true, 2, 4, 7, 2, 8, 8), heads(2), onnxbuild.IntAttr("unidirectional", 1),
		onnxbuild.FloatAttr("mask_filter_value", -1000), onnxbuild.FloatAttr("scale", 0.2))
	cs = append(cs, b.done())

	// One token after a long past.
	b = newCase("mha_decode_"+s, dt, 62)
	b.node(op, []string{b.in("query", []int{3, 1, 24}, 1, 0), b.in("key", []int{3, 1, 24}, 1, 0), b.in("value", []int{3, 1, 24}, 1, 0),
		b.in("bias", []int{72}, 0.3, 0), "", "", b.in("past_key", []int{3, 4, 9, 6}, 1, 0), b.in("past_value", []int{3, 4, 9, 6}, 1, 0)},
		b.mhaOut(true, 3, 1, 10, 4, 6, 6), heads(4), onnxbuild.IntAttr("unidirectional", 1))
	cs = append(cs, b.done())

	// Cross attention over cached keys and values [batch, heads,
	// kv_sequence, head_size] (the bias's key and value parts unused), a
	// mask per query, attention_bias per batch item.
	b = newCase("mha_cross_"+s, dt, 63)
	b.node(op, []string{b.in("query", []int{2, 3, 10}, 1, 0), b.in("key", []int{2, 2, 6, 5}, 1, 0), b.in("value", []int{2, 2, 6, 5}, 1, 0),
		b.in("bias", []int{30}, 0.3, 0),
		b.ids("key_padding_mask", []int{2, 3, 6}, 0, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1,
			1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0),
		b.in("attention_bias", []int{2, 1, 3, 6}, 1, 0)},
		b.mhaOut(true, 2, 3, 6, 2, 5, 5), heads(2))
	cs = append(cs, b.done())

	// Key lengths followed by start positions [3·batch + 2];
	// attention_bias per batch item and head; no bias.
	b = newCase("mha_mask_start_"+s, dt, 64)
	b.node(op, []string{b.in("query", []int{2, 4, 8}, 1, 0), b.in("key", []int{2, 3, 8}, 1, 0), b.in("value", []int{2, 3, 6}, 1, 0),
		"", b.ids("key_padding_mask", []int{8}, 0, 2, 3, 0, 4, 8, 0, 3, 6), b.in("attention_bias", []int{2, 2, 4, 3}, 1, 0)},
		b.mhaOut(false, 2, 4, 3, 2, 4, 3), heads(2))
	cs = append(cs, b.done())

	cs = append(cs, packedQKVCase(dt), packedKVCase(dt))
	return cs
}

// unpacked returns rc with ONNX Runtime's stand-in, whose CPU kernel
// takes no packed query, key or value: the packed input (input 0 or 1 of
// the MultiHeadAttention node) split along its axis 3 into parts
// [batch, sequence, heads, 1, head_size], each reshaped to [batch,
// sequence, hidden], then the node on the parts.
func unpacked(rc refCase, input, parts int) refCase {
	ort := rc.graph
	ort.Inits = maps.Clone(rc.graph.Inits)
	ort.Inits["hidden_shape"] = tensor.From([]int{3}, []int64{0, 0, -1})
	mha := rc.graph.Nodes[0]
	packed := mha.Inputs[input]
	var split, names []string
	for p := range parts {
		name := packed + "_" + string(rune('a'+p))
		split = append(split, name+"_5d")
		names = append(names, name)
	}
	ort.Nodes = []onnxbuild.Node{{Op: "Split", Inputs: []string{packed}, Outputs: split, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", 3)}}}
	for p := range parts {
		ort.Nodes = append(ort.Nodes, onnxbuild.Node{Op: "Reshape", Inputs: []string{split[p], "hidden_shape"}, Outputs: []string{names[p]}})
	}
	in := append(append(append([]string(nil), mha.Inputs[:input]...), names...), mha.Inputs[input+parts:]...)
	mha.Inputs = in
	ort.Nodes = append(ort.Nodes, mha)
	rc.ort = &ort
	return rc
}

// packedQKVCase: query [batch, sequence, heads, 3, head_size] with the
// bias and key lengths.
func packedQKVCase(dt tensor.DataType) refCase {
	b := newCase("mha_packed_qkv_"+dtName(dt), dt, 65)
	b.node("MultiHeadAttention", []string{b.in("query", []int{2, 5, 3, 3, 4}, 1, 0), "", "", b.in("bias", []int{36}, 0.3, 0),
		b.ids("key_padding_mask", []int{2}, 0, 3, 5)},
		b.mhaOut(true, 2, 5, 5, 3, 4, 4), onnxbuild.IntAttr("num_heads", 3))
	return unpacked(b.done(), 0, 3)
}

// packedKVCase: key [batch, kv_sequence, heads, 2, head_size], no value,
// attention_bias per batch item.
func packedKVCase(dt tensor.DataType) refCase {
	b := newCase("mha_packed_kv_"+dtName(dt), dt, 66)
	b.node("MultiHeadAttention", []string{b.in("query", []int{2, 3, 16}, 1, 0), b.in("key", []int{2, 7, 2, 2, 8}, 1, 0), "", "", "",
		b.in("attention_bias", []int{2, 1, 3, 7}, 1, 0)},
		b.mhaOut(false, 2, 3, 7, 2, 8, 8), onnxbuild.IntAttr("num_heads", 2))
	return unpacked(b.done(), 1, 2)
}

// bertBlockCase lays out an ONNX Runtime-optimized BERT layer, weights as
// initializers: EmbedLayerNormalization (its mask_index the key lengths
// of) MultiHeadAttention over the embeddings, SkipLayerNormalization of
// the attention and the embeddings, BiasGelu of that.
func bertBlockCase() refCase {
	b := newCase("block_bert_f32", tensor.Float32, 70)
	const batch, seq, hidden, heads = 2, 6, 24, 4
	f := tensor.Float32
	b.node("EmbedLayerNormalization", []string{b.ids("input_ids", []int{batch, seq}, 30), b.ids("segment_ids", []int{batch, seq}, 2),
		b.init("word_embedding", []int{30, hidden}, 1, 0), b.init("position_embedding", []int{seq, hidden}, 0.5, 0),
		b.init("segment_embedding", []int{2, hidden}, 0.5, 0), b.init("ln0.gamma", []int{hidden}, 0.1, 1), b.init("ln0.beta", []int{hidden}, 0.1, 0),
		b.ids("mask", []int{batch, seq}, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1)},
		[]string{"emb", "mask_index"}, onnxbuild.FloatAttr("epsilon", 1e-12))
	b.node("MultiHeadAttention", []string{"emb", "emb", "emb", b.init("attn.bias", []int{3 * hidden}, 0.3, 0), "mask_index"},
		[]string{"attn"}, onnxbuild.IntAttr("num_heads", heads))
	b.node("SkipLayerNormalization", []string{"attn", "emb", b.init("ln1.gamma", []int{hidden}, 0.1, 1),
		b.init("ln1.beta", []int{hidden}, 0.1, 0), b.init("ln1.bias", []int{hidden}, 0.1, 0)},
		[]string{"ln1"}, onnxbuild.FloatAttr("epsilon", 1e-12))
	b.node("BiasGelu", []string{"ln1", b.init("ff.bias", []int{hidden}, 0.3, 0)}, []string{b.out("gelu", f, batch, seq, hidden)})
	b.out("mask_index", tensor.Int32, batch)
	return b.done()
}
