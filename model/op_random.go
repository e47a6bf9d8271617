package model

// Operators that draw random numbers. A model server answers the same
// request the same way, so models that sample are refused at load, with
// the reason, rather than reported as an unknown operator.

func init() {
	for _, op := range []string{"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"} {
		register(Descriptor{Type: op, Since: 1, Refused: true}, func(n *node, _ *randomAttrs) (opFunc, error) {
			return nil, unsupportedf("operator %s draws random numbers; quantserve serves deterministic models (export the model for inference, without sampling)", op)
		})
	}
}

// randomAttrs accepts every attribute the random operators have, so that
// the refusal names the operator rather than an attribute.
type randomAttrs struct {
	DType      int64   `onnx:"dtype"`
	Mean       float32 `onnx:"mean"`
	Scale      float32 `onnx:"scale"`
	Seed       float32 `onnx:"seed"`
	Shape      []int64 `onnx:"shape"`
	High       float32 `onnx:"high"`
	Low        float32 `onnx:"low"`
	SampleSize int64   `onnx:"sample_size"`
}
