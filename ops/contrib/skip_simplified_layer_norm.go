package contrib

import (
	"github.com/quantserve/quantserve/ops"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "SkipSimplifiedLayerNormalization", Since: 1, Fold: true}, buildSkipSimplifiedLayerNorm)
}

// buildSkipSimplifiedLayerNorm compiles SkipSimplifiedLayerNormalization,
// the residual sum and RMS normalization of Llama-style models: inputs
// input, skip, gamma and the optional bias (input 3; there is no beta),
// outputs output and the optional mean (0), inv_std_var and
// input_skip_bias_sum. See skipLayerNorm.
func buildSkipSimplifiedLayerNorm(n *ops.Node, at *SkipLayerNormAttrs) (ops.Operator, error) {
	return newSkipLayerNorm(n, at, true)
}
