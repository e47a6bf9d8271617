// Package attention holds the attention operators of transformer and
// hybrid sequence models: ai.onnx Attention (opsets 23 and 24 on), scaled
// dot-product attention over grouped key/value heads with masks, a
// key/value cache and a softcap; ai.onnx.preview FlexAttention, whose
// scores pass through score_mod and prob_mod subgraphs; RotaryEmbedding
// (opset 23); the recurrent sequence mixers of opset 27, LinearAttention
// and CausalConvWithState; and quantserve's own Attention, which the graph
// compiler's attention rewrite puts in place of multi-head attention
// spelled with plain operators.
//
// FP32, FP16 and BF16 compute in float32: both products of an attention
// head run on the float kernels of the run's engine
// (gemm.Engine.MatMulStrided), reading the inputs and writing the output
// in place by row strides, and the softmax on the engine's table's row
// kernel. FP64 computes in float64 with plain loops, which are also the
// float32 path's reference in tests. Trace recomputes an Attention node's
// forward pass in float64 for a backward pass.
package attention
