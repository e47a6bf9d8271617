//go:build autodiff

package autodiff

import (
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model"
)

// withGradients are the ai.onnx operators whose every implementation has
// a backward function: a change to the set is a change to what the
// gradient endpoints answer, made here on purpose.
var withGradients = strings.Fields(`
	Abs Acos Acosh Add Asin Asinh Atan Atanh Attention AveragePool
	BatchNormalization Ceil Celu Clip Concat Conv ConvTranspose Cos Cosh
	Div Dropout Elu Erf Exp Expand Flatten Floor Gather Gelu Gemm
	GlobalAveragePool GlobalMaxPool HardSigmoid HardSwish Identity
	LayerNormalization LeakyRelu Log LogSoftmax MatMul Max MaxPool Mean
	Min Mish Mul Neg PRelu Pad Pow RMSNormalization Reciprocal ReduceL1
	ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin
	ReduceProd ReduceSum ReduceSumSquare Relu Reshape Resize Round Selu
	Shrink Sigmoid Sign Sin Sinh Slice Softmax Softplus Softsign Split
	Sqrt Squeeze Sub Sum Swish Tan Tanh ThresholdedRelu Tile Transpose
	Unsqueeze Upsample Where`)

// TestGradientCoverage: the operators with gradients are withGradients,
// every opset range of each.
func TestGradientCoverage(t *testing.T) {
	var got []string
	for _, d := range model.Operators() {
		_, one := grads[d]
		_, multi := multiGrads[d]
		if !one && !multi {
			continue
		}
		if d.Domain != "" {
			t.Errorf("%v has a gradient: only ai.onnx operators are expected to", d)
			continue
		}
		for _, other := range model.Descriptors(d.Domain, d.Type) {
			_, one := grads[other]
			_, multi := multiGrads[other]
			if !one && !multi {
				t.Errorf("%v has no gradient, but %v has", other, d)
			}
		}
		if !slices.Contains(got, d.Type) {
			got = append(got, d.Type)
		}
	}
	want := slices.Clone(withGradients)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("operators with gradients:\n got %v\nwant %v", got, want)
	}
}
