package model

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/quant"
)

// Options configure how a model is compiled.
type Options struct {
	// Exec runs the matrix products and every other kernel (its table);
	// nil means gemm.Default().
	Exec *gemm.Engine
	// Quantize makes the layers whose weight is a constant (MatMul, Gemm,
	// Conv, ...) run on the int8 kernels, weights quantized at load with
	// Scheme. Layers too small to pay stay float32, and so do those whose
	// result reaches a range-sensitive operator (see planQuantization).
	Quantize bool
	Scheme   quant.Scheme
	// QuantizeExclude names nodes whose products stay float32 when
	// Quantize is set (ONNX Runtime's nodes_to_exclude); a name that is
	// no node of the model fails the load.
	QuantizeExclude []string
	// Unrewritten compiles the graph as written, without the rewrites
	// that fuse nodes for speed (gradients need every node).
	Unrewritten bool
	// MaxFoldBytes caps the output of a node folded at load (evaluated
	// once because its inputs are constants): a node whose output would
	// be larger is not folded but runs at inference like any other, so
	// a small file cannot make the load allocate without bound. 0 means
	// DefaultMaxFoldBytes. Operators whose output size follows from
	// their input values are checked before they run; others once run,
	// their output dropped if too large.
	MaxFoldBytes int64
	// Calibration, when not nil, measures the activation ranges of the
	// int8 layers (Measure) or quantizes their activations with the
	// per-tensor parameters of calibrated ranges (Static: static
	// quantization); nil quantizes them per row at run time.
	Calibration *Calibration
	// AlwaysSplit makes every run split its loops across Exec's cores as
	// the engine decides, instead of the model learning per input size
	// whether its runs are faster split or on one core (splitTuner): for
	// benchmarks of the splits themselves.
	AlwaysSplit bool
	// WholeBatches makes every batch run whole, never row by row or by
	// parts (rowTuner; on an engine of several threads only a model of
	// at most partsMaxWeights of weights tries parts): for tests and
	// measurements of the batch's own speed.
	WholeBatches bool

	plan quantPlan // the policy's decisions, set by compile (planQuantization)
}
