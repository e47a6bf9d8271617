package random

import "github.com/quantserve/quantserve/ops"

func init() {
	for _, op := range []string{"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"} {
		ops.Register(ops.Descriptor{Type: op, Since: 1, Refused: true}, func(_ *ops.Node, _ *Attrs) (ops.Operator, error) {
			return nil, ops.Unsupportedf("operator %s draws random numbers; quantserve serves deterministic models (export the model for inference, without sampling)", op)
		})
	}
}

// Attrs accepts every attribute the random operators have, so that the
// refusal names the operator rather than an attribute.
type Attrs struct {
	DType      int64   `onnx:"dtype"`
	Mean       float32 `onnx:"mean"`
	Scale      float32 `onnx:"scale"`
	Seed       float32 `onnx:"seed"`
	Shape      []int64 `onnx:"shape"`
	High       float32 `onnx:"high"`
	Low        float32 `onnx:"low"`
	SampleSize int64   `onnx:"sample_size"`
}
