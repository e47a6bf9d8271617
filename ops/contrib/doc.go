// Package contrib holds the com.microsoft operators that ONNX Runtime's
// transformer optimizer writes into the models it exports: the GELU family
// (Gelu, its tanh approximation FastGelu, BiasGelu, QuickGelu), BiasAdd,
// the fused residual-and-normalization SkipLayerNormalization and its RMS
// form SkipSimplifiedLayerNormalization, RotaryEmbedding, BERT's embedding
// layer EmbedLayerNormalization, MultiHeadAttention and the
// merged-weights Attention of BERT and GPT-2 (their scaled dot-product
// core in sdpa.go), and FusedMatMul, a MatMul with its transposes and
// scale. Each is registered for opset 1 of the com.microsoft domain and
// follows ONNX Runtime's definition of it (docs/ContribOperators.md and
// its CPU kernels): the same inputs, optional inputs and outputs,
// attributes and defaults. They take FLOAT and FLOAT16 tensors; FLOAT16
// values are computed in float32 (or float64) and rounded once at the
// end.
//
// The float32 paths run on the engine's kernels where one exists: the
// exact (erf) GELU of Gelu and BiasGelu, the bias-and-residual sum of
// BiasAdd and the skip normalizations, and the attentions' products and
// softmax. The constant FLOAT weights of FusedMatMul and Attention are
// held by a matmul.Linear, on the int8 kernels when the model is loaded
// with quantization, as ai.onnx MatMul's are.
package contrib
