// Package norm holds the ONNX normalizations: BatchNormalization,
// InstanceNormalization, GroupNormalization, LRN,
// MeanVarianceNormalization and LpNormalization over channels and axes,
// LayerNormalization and RMSNormalization over the trailing axes of
// transformer activations, and Softmax and LogSoftmax (with their forms
// before opset 13).
//
// BatchNormalization folds constant parameters into one multiply-add per
// channel at load; BatchNorm, the operator it compiles to, tells the
// gradient code whether it did and whether it normalizes by the batch's
// own statistics. BatchNormParams and NewBatchNormFold serve the graph
// compiler's fusion of a BatchNormalization into the convolution before
// it.
package norm
