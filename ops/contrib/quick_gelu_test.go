package contrib

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestQuickGeluMatchesDefinition: Y = X·sigmoid(alpha·X), alpha 1.702
// unless given.
func TestQuickGeluMatchesDefinition(t *testing.T) {
	v := sweep(20)
	x := tensor.From([]int{len(v)}, v)
	for _, alpha := range []float64{1.702, 1, -0.75} {
		var attrs []*onnxpb.Attribute
		if alpha != 1.702 {
			attrs = append(attrs, floatAttr("alpha", float32(alpha)))
		}
		y, err := run(t, "QuickGelu", attrs, x)
		if err != nil {
			t.Fatal(err)
		}
		a := float64(float32(alpha))
		want := mapF64(v, func(x float64) float64 { return x / (1 + math.Exp(-a*x)) })
		if err := near(y, want, 1e-6, 1e-37); err != nil {
			t.Errorf("QuickGelu alpha=%v%v", alpha, err)
		}
		yh, err := run(t, "QuickGelu", attrs, half(x))
		if err != nil {
			t.Fatal(err)
		}
		if err := near(yh, want, 1.0/512, 1e-4); err != nil {
			t.Errorf("QuickGelu alpha=%v on FLOAT16%v", alpha, err)
		}
	}
}
