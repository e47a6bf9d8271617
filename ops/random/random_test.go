package random_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	_ "github.com/quantserve/quantserve/ops/random"
)

// Every random operator is known to the registry, marked refused, and
// refused at load with the reason, whatever attributes it carries.
func TestRandomOperatorsRefused(t *testing.T) {
	for _, op := range []string{"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"} {
		ds := ops.Descriptors("", op)
		if len(ds) != 1 || !ds[0].Refused || ds[0].Since != 1 || ds[0].Until != 0 || ds[0].Fold {
			t.Errorf("%s: descriptors %v, want one refused from opset 1", op, ds)
		}
		_, _, err := opstest.Compile(opstest.Node{Op: op, Opset: 22, Attrs: []*onnxpb.Attribute{
			{Name: "seed", Type: onnxpb.AttrFloat, F: 1},
			{Name: "shape", Type: onnxpb.AttrInts, Ints: []int64{2, 3}},
		}}, 1)
		if !errors.Is(err, ops.ErrUnsupported) || !strings.Contains(err.Error(), "operator "+op+" draws random numbers") {
			t.Errorf("%s: got %v, want a refusal naming the operator", op, err)
		}
	}
}
